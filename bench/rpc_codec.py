"""Encoding and decoding of RPC bodies: a Metadata response of PARTITIONS partitions, and a
BrokerHeartbeat request, to msgpack and back, as the transport does (model -> wire dict -> bytes,
bytes -> dict -> validated model).

    .venv/bin/python bench/rpc_codec.py [--partitions 1000] [--rounds 20]

Prints the median time of each step beside its goal: a 1,000-partition Metadata answer must cost
under 10 ms each way, so that answering it never holds a process's event loop for long.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from protocol.rpc.broker_heartbeat import BrokerHeartbeatRequest
from protocol.rpc.metadata import MetadataResponse
from protocol.transport import codec
from protocol.uuid import Uuid

GOAL_MS_PER_1000 = 10.0


def metadata_response(partitions: int) -> MetadataResponse:
    topics = []
    per_topic = 10
    for t in range(max(1, partitions // per_topic)):
        parts = [
            MetadataResponse.MetadataResponsePartition(
                PartitionIndex=p,
                LeaderId=1 + p % 3,
                LeaderEpoch=4,
                ReplicaNodes=[1, 2, 3],
                IsrNodes=[1, 2, 3],
                OfflineReplicas=[],
            )
            for p in range(per_topic)
        ]
        topics.append(
            MetadataResponse.MetadataResponseTopic(Name=f"topic-{t}", TopicId=Uuid.random(), Partitions=parts)
        )
    brokers = [
        MetadataResponse.MetadataResponseBroker(NodeId=b, Host="127.0.0.1", Port=9092 + b) for b in (1, 2, 3)
    ]
    return MetadataResponse(Brokers=brokers, ClusterId="c", ControllerId=3000, Topics=topics)


def median_ms(fn: Callable[[], Any], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--partitions", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=20)
    args = ap.parse_args()

    resp = metadata_response(args.partitions)
    body = codec.encode(resp.to_wire(12, "msgpack"), "msgpack")
    encode_ms = median_ms(lambda: codec.encode(resp.to_wire(12, "msgpack"), "msgpack"), args.rounds)
    decode_ms = median_ms(lambda: MetadataResponse.from_wire(codec.decode(body, "msgpack"), 12), args.rounds)
    hb = BrokerHeartbeatRequest(BrokerId=1, BrokerEpoch=7, CurrentMetadataOffset=100, WantFence=False)
    hb_body = codec.encode(hb.to_wire(1, "msgpack"), "msgpack")
    hb_us = (
        median_ms(
            lambda: [
                BrokerHeartbeatRequest.from_wire(codec.decode(hb_body, "msgpack"), 1) for _ in range(100)
            ],
            args.rounds,
        )
        * 10
    )  # 100 decodes per round: ms per 100 -> us each

    goal = GOAL_MS_PER_1000 * args.partitions / 1000
    print(f"{'measure':<52}{'median':>10}   goal")
    print(
        f"{f'Metadata response, {args.partitions} partitions: encode (ms)':<52}{encode_ms:>10.2f}   <= {goal:.0f} ms"
    )
    print(
        f"{f'Metadata response, {args.partitions} partitions: decode (ms)':<52}{decode_ms:>10.2f}   <= {goal:.0f} ms"
    )
    print(f"{'BrokerHeartbeat request: decode (us)':<52}{hb_us:>10.1f}")
    print(f"body size: {len(body)} bytes")


if __name__ == "__main__":
    main()
