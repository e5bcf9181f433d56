"""A controller and brokers as real processes, and ways to look at what the controller wrote.

Reading the controller's log: its `__cluster_metadata-0` segments are opened read-only from this
process (the controller keeps appending; a batch being written shows up as a torn tail and is
left out) and replayed into a MetadataImage with the shared image code.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from structlog.testing import capture_logs

from kraftpy.image import MetadataDelta, MetadataImage
from kraftpy.metalog import MetadataLog
from protocol.rpc.create_topics import CreateTopicsRequest, CreateTopicsResponse
from protocol.transport import RpcClient
from protocol.uuid import Uuid
from tests.support.processes import (
    ManagedProcess,
    ProcessSet,
    format_storage,
    free_ports,
    get_json,
    random_cluster_id,
    write_broker_config,
    write_controller_config,
)

T = TypeVar("T")

FAST = {
    "broker.heartbeat.interval.ms": 500,
    "broker.session.timeout.ms": 6000,
    "log.dir.probe.interval.ms": 200,
}


def wait_until(what: str, check: Callable[[], T | None], timeout: float = 60.0, interval: float = 0.1) -> T:
    """Poll `check` until it returns something truthy; fail naming `what` after a generous deadline."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


@dataclass
class Record:
    offset: int
    record: Any

    @property
    def name(self) -> str:
        return type(self.record).__name__


@dataclass
class BrokerNode:
    node_id: int
    port: int
    config: Path
    log_dirs: list[Path]
    metadata_dir: Path
    proc: ManagedProcess | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def health(self) -> dict[str, Any]:
        try:
            status, body = get_json(f"{self.url}/healthz", timeout=2.0)
        except OSError:
            return {}
        return body if status == 200 and isinstance(body, dict) else {}

    def metrics(self) -> str:
        import urllib.request

        with urllib.request.urlopen(f"{self.url}/metrics", timeout=2.0) as resp:
            return resp.read().decode()


@dataclass
class Cluster:
    workdir: Path
    procs: ProcessSet
    cluster_id: str = field(default_factory=random_cluster_id)
    controller_port: int = 0
    controller_config: Path | None = None
    controller_meta: Path | None = None
    controller: ManagedProcess | None = None
    brokers: dict[int, BrokerNode] = field(default_factory=dict)

    @classmethod
    def create(
        cls, workdir: Path, procs: ProcessSet, controller_extra: Mapping[str, object] | None = None
    ) -> Cluster:
        c = cls(workdir, procs)
        c.controller_port = free_ports(1)[0]
        c.controller_meta = workdir / "controller-meta"
        c.controller_config = write_controller_config(
            workdir / "controller.properties",
            node_id=1,
            port=c.controller_port,
            metadata_dir=c.controller_meta,
            extra={
                "broker.session.timeout.ms": FAST["broker.session.timeout.ms"],
                **(controller_extra or {}),
            },
        )
        format_storage(c.controller_config, c.cluster_id)
        return c

    def add_broker(
        self,
        node_id: int,
        log_dirs: Sequence[Path],
        *,
        metadata_dir: Path | None = None,
        extra: Mapping[str, object] | None = None,
    ) -> BrokerNode:
        port = free_ports(1)[0]
        meta = metadata_dir or self.workdir / f"broker{node_id}-meta"
        cfg = write_broker_config(
            self.workdir / f"broker{node_id}.properties",
            node_id=node_id,
            port=port,
            log_dirs=list(log_dirs),
            voters={1: self.controller_port},
            metadata_dir=meta,
            extra={**FAST, **(extra or {})},
        )
        format_storage(cfg, self.cluster_id)
        node = BrokerNode(node_id, port, cfg, list(log_dirs), meta)
        self.brokers[node_id] = node
        return node

    # ---- processes ----------------------------------------------------------------------------

    def start_controller(self) -> ManagedProcess:
        from tests.support.processes import wait_for_healthz

        assert self.controller_config is not None
        self.controller = self.procs.start_controller(self.controller_config, name="controller")
        wait_for_healthz(self.controller)
        return self.controller

    def start_broker(self, node_id: int, *, wait_healthy: bool = True) -> ManagedProcess:
        from tests.support.processes import wait_for_healthz

        node = self.brokers[node_id]
        n = sum(1 for p in self.procs.started if p.name.startswith(f"broker{node_id}"))
        node.proc = self.procs.start_broker(node.config, name=f"broker{node_id}-{n}")
        if wait_healthy:
            wait_for_healthz(node.proc, timeout=60)
        return node.proc

    def wait_running(self, node_id: int, timeout: float = 60.0) -> dict[str, Any]:
        node = self.brokers[node_id]

        def running() -> dict[str, Any] | None:
            assert node.proc is not None
            if not node.proc.alive:
                raise AssertionError(
                    f"broker {node_id} exited {node.proc.returncode}:\n{node.proc.log_tail(60)}"
                )
            h = node.health()
            return h if h.get("broker_state") == "RUNNING" else None

        return wait_until(f"broker {node_id} RUNNING", running, timeout)

    def stop_broker(self, node_id: int) -> int:
        node = self.brokers[node_id]
        assert node.proc is not None
        return node.proc.terminate(timeout=30)

    # ---- controller RPCs ----------------------------------------------------------------------

    def _rpc(self, api: str, request: Any) -> Any:
        async def call() -> Any:
            async with RpcClient(f"http://127.0.0.1:{self.controller_port}", timeout=30) as client:
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
