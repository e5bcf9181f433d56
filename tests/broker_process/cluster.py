"""A controller and brokers as real processes (`ProcessCluster`), and ways to look at what the
controller wrote.

Reading the controller's log: its `__cluster_metadata-0` segments are opened read-only from this
process (the controller keeps appending; a batch being written shows up as a torn tail and is
left out) and replayed into a MetadataImage with the shared image code.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from structlog.testing import capture_logs

from kraftpy.image import MetadataDelta, MetadataImage
from kraftpy.metalog import MetadataLog
from protocol.rpc.create_topics import CreateTopicsRequest, CreateTopicsResponse
from protocol.transport import RpcClient
from protocol.uuid import Uuid
from tools.cluster.launcher import ManagedProcess, ProcessSet
from tools.cluster.layout import BrokerNode, ProcessCluster, wait_until

__all__ = ["FAST", "BrokerNode", "Cluster", "Record", "wait_until"]

FAST = {
    "broker.heartbeat.interval.ms": 500,
    "broker.session.timeout.ms": 6000,
    "log.dir.probe.interval.ms": 200,
}


@dataclass
class Record:
    offset: int
    record: Any

    @property
    def name(self) -> str:
        return type(self.record).__name__


class Cluster(ProcessCluster):
    """Controller 1 formatted up front; brokers added one by one with `add_broker`."""

    @classmethod
    def create(
        cls, workdir: Path, procs: ProcessSet, controller_extra: Mapping[str, object] | None = None
    ) -> Cluster:
        return cls.build(
            workdir,
            procs,
            controller_extra={
                "broker.session.timeout.ms": FAST["broker.session.timeout.ms"],
                **(controller_extra or {}),
            },
            broker_extra=FAST,
        )

    def start_broker(self, node_id: int, *, wait_healthy: bool = True) -> ManagedProcess:
        proc = self.launch_broker(node_id)
        if wait_healthy:
            self.wait_healthy(node_id, timeout=60)
        return proc

    # ---- controller RPCs ----------------------------------------------------------------------

    def _rpc(self, api: str, request: Any) -> Any:
        async def call() -> Any:
            async with RpcClient(f"http://{self.controller_address}", timeout=30) as client:
                return await client.call(api, request)

        return asyncio.run(call())

    def create_topic(
        self,
        name: str,
        assignments: Sequence[Sequence[int]] | None = None,
        *,
        partitions: int = -1,
        rf: int = -1,
    ) -> Uuid:
        T_ = CreateTopicsRequest
        topic = T_.CreatableTopic(Name=name, NumPartitions=partitions, ReplicationFactor=rf)
        if assignments is not None:
            topic.Assignments = [
                T_.CreatableReplicaAssignment(PartitionIndex=i, BrokerIds=list(b))
                for i, b in enumerate(assignments)
            ]
        resp: CreateTopicsResponse = self._rpc("CreateTopics", T_(Topics=[topic]))
        result = resp.Topics[0]
        assert result.ErrorCode == 0, f"CreateTopics {name}: {result.ErrorCode} {result.ErrorMessage}"
        return wait_until(f"topic {name} in the controller's log", lambda: self.topic_id(name))

    # ---- the controller's log -----------------------------------------------------------------

    def records(self) -> list[Record]:
        assert self.controller_meta is not None
        with capture_logs(), MetadataLog.open(self.controller_meta, read_only=True) as mlog:
            return [
                Record(e.offset, e.record.message)
                for e in mlog.entries(from_snapshot=False)
                if hasattr(e.record, "message")
            ]

    def image(self) -> MetadataImage:
        delta = MetadataDelta(MetadataImage.EMPTY, strict=False)
        for r in self.records():
            delta.replay(r.record, r.offset)
        return delta.apply()

    def topic_id(self, name: str) -> Uuid | None:
        t = self.image().topics.get_topic(name)
        return None if t is None else t.id
