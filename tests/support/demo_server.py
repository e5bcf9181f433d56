"""A process serving three RPCs with canned answers, for the transport's process tests and poking by hand.

    python -m tests.support.demo_server --port 0

prints `LISTENING <port>` once ready. BrokerRegistration answers BrokerEpoch = 1000 + BrokerId, or
fails with INCONSISTENT_CLUSTER_ID when ClusterId is "wrong-cluster" and with an unexpected exception
when it is "crash"; BrokerHeartbeat echoes the fencing wish; AssignReplicasToDirs accepts everything.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys

from protocol.errors import Errors, KafkaError
from protocol.rpc import (
    AssignReplicasToDirsRequest,
    AssignReplicasToDirsResponse,
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
)
from protocol.transport.server import create_app, start_server


async def broker_registration(req: BrokerRegistrationRequest, version: int) -> BrokerRegistrationResponse:
    if req.ClusterId == "wrong-cluster":
        raise KafkaError(Errors.INCONSISTENT_CLUSTER_ID, f"expected cluster demo, got {req.ClusterId}")
    if req.ClusterId == "crash":
        raise RuntimeError("demo handler crashed on purpose")
    return BrokerRegistrationResponse(BrokerEpoch=1000 + req.BrokerId)


async def broker_heartbeat(req: BrokerHeartbeatRequest, version: int) -> BrokerHeartbeatResponse:
    return BrokerHeartbeatResponse(IsCaughtUp=True, IsFenced=req.WantFence, ShouldShutDown=req.WantShutDown)


async def assign_replicas_to_dirs(
    req: AssignReplicasToDirsRequest, version: int
) -> AssignReplicasToDirsResponse:
    R = AssignReplicasToDirsResponse
    return R(
        Directories=[
            R.DirectoryData(
                Id=d.Id,
                Topics=[
                    R.TopicData(
                        TopicId=t.TopicId,
                        Partitions=[R.PartitionData(PartitionIndex=p.PartitionIndex) for p in t.Partitions],
                    )
                    for t in d.Topics
                ],
            )
            for d in req.Directories
        ]
    )


async def serve(host: str, port: int) -> None:
    app = create_app(
        {
            "BrokerRegistration": broker_registration,
            "BrokerHeartbeat": broker_heartbeat,
            "AssignReplicasToDirs": assign_replicas_to_dirs,
        },
        health=lambda: {"role": "demo"},
    )
    runner, bound = await start_server(app, host, port)
    print(f"LISTENING {bound}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await runner.cleanup()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.support.demo_server")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    args = p.parse_args(argv)
    from kraftpy.logging import configure_process_logging

    configure_process_logging(role="demo", node_id=None)
    asyncio.run(serve(args.host, args.port))
    return 0


if __name__ == "__main__":
    sys.exit(main())
