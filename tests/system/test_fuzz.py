"""Fuzzing the RPC edge of a running controller and broker (issue: bad input never stalls or breaks
the cluster).

A controller and a broker with two log dirs run as real processes. KRAFTPY_FUZZ_BODIES bodies
(100,000 by default) from tests.support.fuzz, spread over every API each process serves, are posted
16 at a time. Afterwards:
- no answer was a 5xx, and no handler failed (the processes count UNKNOWN_SERVER_ERROR per API);
- both processes are alive and healthy;
- the controller's live state (its Metadata answer) equals the replay of its metadata log;
- the longest event-loop stall each process saw is printed beside the 100 ms goal (a figure, not an
  assertion: what a stall would break, a healthy process and an unfenced broker, is checked instead).
"""

from __future__ import annotations

import asyncio
import os
import random
import re
import time
from collections import Counter
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from protocol.rpc import API_SPECS
from protocol.rpc.metadata import MetadataRequest
from protocol.transport import RpcClient, codec
from protocol.transport.codec import API_VERSION_HEADER, CONTENT_TYPES
from tests.support.fuzz import Body, BodyMaker
from tools.cluster.launcher import ProcessSet
from tools.cluster.layout import ProcessCluster
from tools.cluster.metadata import read_image
from tools.cluster.probe import parse_metrics

pytestmark = [pytest.mark.system, pytest.mark.slow]

BODIES = int(os.environ.get("KRAFTPY_FUZZ_BODIES", "100000"))
SEED = int(os.environ.get("KRAFTPY_FUZZ_SEED", "858"))
# Only these APIs (comma-separated), to look into one of them.
ONLY = {a for a in os.environ.get("KRAFTPY_FUZZ_APIS", "").split(",") if a}
CONCURRENCY = 16
STALL_GOAL_S = 0.1


async def _served(session: aiohttp.ClientSession, url: str) -> list[str]:
    """The APIs a process serves, as its answer to an unknown API lists them."""
    async with session.post(
        f"{url}/rpc/NoSuchApi", data=b"{}", headers={"Content-Type": "application/json"}
    ) as r:
        text = await r.text()
    match = re.search(r"it serves: ([A-Za-z, ]+)", text)
    assert match, text
    return [a.strip() for a in match.group(1).split(",") if a.strip() in API_SPECS]


async def _post(session: aiohttp.ClientSession, url: str, body: Body, statuses: Counter[Any]) -> None:
    headers = {"Content-Type": CONTENT_TYPES[body.encoding], API_VERSION_HEADER: str(body.version)}  # type: ignore[index]
    async with session.post(f"{url}/rpc/{body.api}", data=body.data, headers=headers) as r:
        await r.read()
        statuses[(body.api, r.status)] += 1


def _metadata_view(topics: Any) -> dict[str, list[tuple[int, int, tuple[int, ...], tuple[int, ...]]]]:
    return {
        t.Name: sorted(
            (p.PartitionIndex, p.LeaderId, tuple(p.ReplicaNodes), tuple(p.IsrNodes)) for p in t.Partitions
        )
        for t in topics
    }


def _image_view(image: Any) -> dict[str, list[tuple[int, int, tuple[int, ...], tuple[int, ...]]]]:
    out: dict[str, list[tuple[int, int, tuple[int, ...], tuple[int, ...]]]] = {}
    for tp, reg in image.topics.partitions():
        out.setdefault(tp.topic_name, []).append(
            (tp.partition, reg.leader, tuple(reg.replicas), tuple(reg.isr))
        )
    return {k: sorted(v) for k, v in out.items()}


def _failures(metrics_text: str) -> dict[str, float]:
    m = parse_metrics(metrics_text)
    return {
        labels["request"]: value
        for labels, value in m.get("kafka_network_requestmetrics_errors_total", [])
        if labels.get("error") == "UNKNOWN_SERVER_ERROR" and value > 0
    }


def _slow_apis(metrics_text: str, over_s: float = 0.1) -> dict[str, int]:
    """Requests per API that took longer than `over_s` (from the latency histogram)."""
    m = parse_metrics(metrics_text)
    total: dict[str, float] = {}
    fast: dict[str, float] = {}
    for labels, value in m.get("kafka_network_requestmetrics_totaltimems_bucket", []):
        api = labels["request"]
        if labels["le"] == "+Inf":
            total[api] = value
        elif float(labels["le"]) == over_s * 1000:
            fast[api] = value
    return {api: int(n - fast.get(api, 0)) for api, n in total.items() if n - fast.get(api, 0) > 0}


def _max_lag(metrics_text: str) -> float:
    values = parse_metrics(metrics_text).get("kraftpy_event_loop_lag_max_seconds", [])
    return max((v for _labels, v in values), default=0.0)


async def test_a_hundred_thousand_hostile_bodies(tmp_path: Path) -> None:
    dirs = [tmp_path / "d0", tmp_path / "d1"]
    procs = ProcessSet(tmp_path / "logs")
    try:
        cluster = ProcessCluster.build(tmp_path, procs, controller_id=100, log_dirs={1: dirs})
        cluster.start()
        assert cluster.controller is not None
        targets = {"controller": f"http://{cluster.controller_address}", "broker": cluster.brokers[1].url}
        statuses: Counter[Any] = Counter()
        maker = BodyMaker(SEED)
        rng = random.Random(SEED)
        connector = aiohttp.TCPConnector(limit=CONCURRENCY)
        timeout = aiohttp.ClientTimeout(total=60)
        started = time.monotonic()
        async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
            served = {name: await _served(session, url) for name, url in targets.items()}
            plan = [(name, api) for name, apis in served.items() for api in apis if not ONLY or api in ONLY]
            queue: asyncio.Queue[tuple[str, Body] | None] = asyncio.Queue(maxsize=CONCURRENCY * 4)

            async def worker() -> None:
                while (item := await queue.get()) is not None:
                    name, body = item
                    await _post(session, targets[name], body, statuses)

            workers = [asyncio.create_task(worker()) for _ in range(CONCURRENCY)]
            for _ in range(BODIES):
                name, api = rng.choice(plan)
                await queue.put((name, maker.body(API_SPECS[api])))
            for _ in workers:
                await queue.put(None)
            await asyncio.gather(*workers)
            elapsed = time.monotonic() - started

            metrics = {}
            for name, url in targets.items():
                async with session.get(f"{url}/metrics") as r:
                    metrics[name] = await r.text()
                async with session.get(f"{url}/healthz") as r:
                    assert r.status == 200, (name, await r.text())
        assert (
            cluster.controller.alive and cluster.brokers[1].proc is not None and cluster.brokers[1].proc.alive
        )

        by_status = Counter(status for (_api, status), n in statuses.items() for _ in range(n))
        print(
            f"\nfuzz: {sum(statuses.values())} bodies (seed {SEED}) in {elapsed:.0f} s, "
            f"{sum(statuses.values()) / elapsed:.0f}/s; HTTP statuses {dict(sorted(by_status.items()))}"
        )
        for name in targets:
            print(f"fuzz: {name} APIs {', '.join(served[name])}")
            print(
                f"fuzz: {name} longest event-loop stall {_max_lag(metrics[name]) * 1000:.0f} ms "
                f"(goal {STALL_GOAL_S * 1000:.0f} ms); requests over 100 ms: {_slow_apis(metrics[name])}"
            )
        assert sum(statuses.values()) == BODIES
        assert not [k for k in statuses if k[1] >= 500], statuses
        for name in targets:
            assert _failures(metrics[name]) == {}, (name, _failures(metrics[name]))

        # What the controller answers equals what its log replays to. The cluster may still be acting
        # on what the fuzzer did (placing replicas, electing leaders), so compare once it holds still.
        assert cluster.controller_meta is not None
        async with RpcClient(targets["controller"]) as client:
            deadline = time.monotonic() + 60
            while True:
                before = await client.call("Metadata", MetadataRequest(Topics=None), 12)
                image = read_image(cluster.controller_meta)
                live = await client.call("Metadata", MetadataRequest(Topics=None), 12)
                assert image is not None
                replayed = _image_view(image)
                if _metadata_view(before.Topics) == _metadata_view(live.Topics) == replayed:
                    break
                assert time.monotonic() < deadline, (_metadata_view(live.Topics), replayed)
                await asyncio.sleep(0.5)
        print(f"fuzz: {len(live.Topics)} topics created by the fuzzer, live state equal to the log's replay")
    finally:
        procs.stop_all()


def _probes() -> list[tuple[str, str, Any, int]]:
    """(target, api, request, version): the requests that once held an event loop for seconds."""
    from protocol.rpc.broker_heartbeat import BrokerHeartbeatRequest
    from protocol.rpc.broker_registration import BrokerRegistrationRequest
    from protocol.rpc.list_offsets import ListOffsetsRequest
    from protocol.uuid import Uuid

    listener = BrokerRegistrationRequest.Listener
    lo = ListOffsetsRequest
    return [
        (
            "controller",
            "BrokerHeartbeat",
            # Built without validation, as a hostile client would send it.
            BrokerHeartbeatRequest.model_construct(
                BrokerId=1,
                BrokerEpoch=1,
                CurrentMetadataOffset=0,
                WantFence=False,
                WantShutDown=False,
                OfflineLogDirs=[Uuid.random() for _ in range(PROBE_SIZE)],
            ),
            1,
        ),
        (
            "controller",
            "BrokerRegistration",
            BrokerRegistrationRequest.model_construct(
                BrokerId=77,
                ClusterId="x",
                IncarnationId=Uuid.random(),
                Listeners=[listener(Name=f"L{i}", Host="h", Port=1) for i in range(PROBE_SIZE // 10)],
                LogDirs=[Uuid.random()],
            ),
            2,
        ),
        (
            "controller",
            "Metadata",
            MetadataRequest(Topics=[{"Name": f"t{i}"} for i in range(PROBE_SIZE // 10)]),
            9,
        ),
        (
            "broker",
            "Metadata",
            MetadataRequest(Topics=[{"Name": f"t{i}"} for i in range(PROBE_SIZE // 10)]),
            9,
        ),
        (
            "broker",
            "ListOffsets",
            lo(
                Topics=[
                    lo.ListOffsetsTopic(
                        Name="t",
                        Partitions=[
                            lo.ListOffsetsPartition(PartitionIndex=i) for i in range(PROBE_SIZE // 10)
                        ],
                    )
                ]
            ),
            4,
        ),
    ]


PROBE_SIZE = int(os.environ.get("KRAFTPY_PROBE_SIZE", "1000000"))


async def test_huge_requests_are_answered_without_stalling_the_cluster(tmp_path: Path) -> None:
    """Each probe is answered (any code but 5xx) while the processes stay healthy and the broker stays
    unfenced; the longest stall each process saw is printed beside the 100 ms goal."""
    procs = ProcessSet(tmp_path / "logs")
    try:
        cluster = ProcessCluster.build(tmp_path, procs, controller_id=100, log_dirs={1: [tmp_path / "d0"]})
        cluster.start()
        targets = {"controller": f"http://{cluster.controller_address}", "broker": cluster.brokers[1].url}
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=120)) as session:
            for name, api, request, version in _probes():
                body = codec.encode(request.to_wire(version, "msgpack"), "msgpack")
                headers = {"Content-Type": CONTENT_TYPES["msgpack"], API_VERSION_HEADER: str(version)}
                started = time.monotonic()
                async with session.post(f"{targets[name]}/rpc/{api}", data=body, headers=headers) as r:
                    await r.read()
                    status = r.status
                took = time.monotonic() - started
                print(
                    f"\nprobe: {api} to the {name}, {len(body) / 1e6:.1f} MB: HTTP {status} in {took:.2f} s"
                )
                assert status < 500, (api, status)
            for name, url in targets.items():
                async with session.get(f"{url}/metrics") as r:
                    text = await r.text()
                print(
                    f"probe: {name} longest event-loop stall {_max_lag(text) * 1000:.0f} ms (goal {STALL_GOAL_S * 1000:.0f} ms)"
                )
                assert _failures(text) == {}, (name, _failures(text))
        assert cluster.brokers[1].health().get("broker_state") == "RUNNING"
    finally:
        procs.stop_all()
