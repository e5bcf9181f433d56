"""One snapshot of a running cluster for `status` and the demo's live view.

Three sources, each for what it knows best:
- the processes (PID alive?) and their `/healthz` (serving?);
- the controller's metadata log (registrations, fencing, each broker's online dirs, partitions with
  leader, ISR, directories and offline replicas: KIP-858's rule, the same code the tools use);
- the filesystems (directory.id recorded at format time, space used, injected faults).
`build_view` is pure: it takes what was collected and returns plain values.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from tools.cluster.spec import NodePlan


@dataclass(frozen=True)
class NodeView:
    name: str
    node_id: int
    role: str
    address: str
    pid: int | None
    process: str  # running, exited, stopped, not started
    healthy: bool
    health: dict[str, Any] | None = None
    # controllers only: the active controller (the Raft leader that has taken over the state machine)
    leader: bool = False
    # brokers only
    registered: bool = False
    state: str = "-"  # fenced / unfenced / controlled_shutdown / not registered
    epoch: int = -1
    online_dirs: int = 0
    dirs: int = 0
    bootstrap: str | None = None  # a KRaft broker's Kafka-protocol address, for Kafka's clients


@dataclass(frozen=True)
class DirView:
    broker_id: int
    index: int
    path: str
    directory_id: str | None
    label: str
    status: str  # online / offline / unknown
    fault: str | None  # what was injected, if anything
    used_bytes: int | None
    size_bytes: int | None
    disk: str | None


@dataclass(frozen=True)
class PartitionView:
    topic: str
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline: tuple[int, ...]
    directories: tuple[str, ...]  # dir labels, index-aligned with replicas


@dataclass(frozen=True)
class MigrationView:
    """A cluster born in ZooKeeper mode that `kraftpy migrate` gave controllers."""

    phase: str
    # The active controller's /healthz: zk_migration_state and migration_driver_state, None when
    # no active controller answers or it does not report them.
    state: str | None
    driver: str | None
    node_phases: dict[int, str]


@dataclass(frozen=True)
class ClusterView:
    taken_at: float
    work_dir: str
    cluster_id: str
    mode: str
    # The active controller; with no leader known, the first controller.
    controller: NodeView
    brokers: tuple[NodeView, ...]
    dirs: tuple[DirView, ...]
    partitions: tuple[PartitionView, ...]
    metadata_offset: int = -1
    notes: tuple[str, ...] = field(default=())
    controllers: tuple[NodeView, ...] = ()
    migration: MigrationView | None = None

    @property
    def leader_id(self) -> int | None:
        return next((c.node_id for c in self.controllers if c.leader), None)

    @property
    def nodes(self) -> tuple[NodeView, ...]:
        return (*(self.controllers or (self.controller,)), *self.brokers)

    def broker(self, broker_id: int) -> NodeView:
        return next(b for b in self.brokers if b.node_id == broker_id)

    def partition(self, topic: str, partition: int) -> PartitionView | None:
        return next((p for p in self.partitions if p.topic == topic and p.partition == partition), None)

    def topic(self, name: str) -> list[PartitionView]:
        return [p for p in self.partitions if p.topic == name]

    @property
    def unfenced(self) -> set[int]:
        return {b.node_id for b in self.brokers if b.state == "unfenced"}

    def to_json(self) -> dict[str, Any]:
        from dataclasses import asdict

        return asdict(self)


def is_active_controller(health: dict[str, Any] | None) -> bool:
    """A controller's /healthz probe result says it is the active controller (the Raft leader that
    has taken over the state machine)."""
    h = health or {}
    body = h.get("body")
    return h.get("status") == 200 and isinstance(body, dict) and body.get("active") is True


def dir_label(broker_id: int, index: int) -> str:
    return f"b{broker_id}/d{index}"


def build_view(
    *,
    work_dir: str,
    cluster_id: str,
    mode: str,
    nodes: list[NodePlan],
    processes: dict[str, tuple[int | None, str]],
    health: dict[str, dict[str, Any]],
    image: Any | None,
    directory_ids: dict[str, str],
    faults: dict[str, str | None],
    usage: dict[str, tuple[int | None, int | None]],
    notes: tuple[str, ...] = (),
    migration: tuple[str, dict[int, str]] | None = None,
) -> ClusterView:
    """`processes`: node name -> (pid, process state); `health`: node name -> probe result;
    `faults` and `usage`: dir path -> injected fault / (used, size); `migration`: the migration's
    phase and each node's part in it, for a cluster `kraftpy migrate` gave controllers."""
    from protocol.uuid import RESERVED_DIRECTORY_NAMES

    label_of: dict[str, str] = {}
    for n in nodes:
        for d in n.log_dirs:
            dir_id = directory_ids.get(d.path)
            if dir_id:
                label_of[dir_id] = dir_label(n.node_id, d.index)

    def node_view(n: NodePlan) -> NodeView:
        pid, pstate = processes.get(n.name, (None, "not started"))
        h = health.get(n.name) or {}
        healthy = h.get("status") == 200 and pstate == "running"
        body = h.get("body") if isinstance(h.get("body"), dict) else None
        if n.role == "zookeeper":
            return NodeView(n.name, n.node_id, n.role, n.bootstrap, pid, pstate, healthy, body)
        if n.role == "controller":
            leader = healthy and is_active_controller(h)
            return NodeView(n.name, n.node_id, n.role, n.bootstrap, pid, pstate, healthy, body, leader)
        reg = image.cluster.brokers.get(n.node_id) if image is not None else None
        online = 0
        if reg is not None:
            ids = {str(x) for x in reg.directories}
            online = sum(1 for d in n.log_dirs if directory_ids.get(d.path) in ids)
        return NodeView(
            name=n.name,
            node_id=n.node_id,
            role=n.role,
            address=n.bootstrap,
            pid=pid,
            process=pstate,
            healthy=healthy,
            health=body,
            registered=reg is not None,
            state=reg.state if reg is not None else "not registered",
            epoch=reg.epoch if reg is not None else -1,
            online_dirs=online,
            dirs=len(n.log_dirs),
            bootstrap=n.kafka_bootstrap,
        )

    # In ZooKeeper mode the ZooKeeper server stands where the controllers do.
    controllers = tuple(node_view(n) for n in nodes if n.role in ("controller", "zookeeper"))
    brokers = [n for n in nodes if n.role == "broker"]
    dirs: list[DirView] = []
    for n in brokers:
        reg = image.cluster.brokers.get(n.node_id) if image is not None else None
        registered = {str(x) for x in reg.directories} if reg is not None else set()
        for d in n.log_dirs:
            dir_id = directory_ids.get(d.path)
            if reg is None or dir_id is None:
                status = "unknown"
            else:
                status = "online" if dir_id in registered else "offline"
            used, size = usage.get(d.path, (None, None))
            dirs.append(
                DirView(
                    broker_id=n.node_id,
                    index=d.index,
                    path=d.path,
                    directory_id=dir_id,
                    label=dir_label(n.node_id, d.index),
                    status=status,
                    fault=faults.get(d.path),
                    used_bytes=used,
                    size_bytes=size,
                    disk=d.disk,
                )
            )

    partitions: list[PartitionView] = []
    offset = -1
    if image is not None:
        from kraftpy.metadata.replicas import offline_replicas

        offset = image.offset
        for tp, reg in image.topics.partitions():
            dirs_txt = []
            for dir_id in reg.directories:
                text = RESERVED_DIRECTORY_NAMES.get(dir_id) or label_of.get(str(dir_id), str(dir_id))
                dirs_txt.append(text)
            partitions.append(
                PartitionView(
                    topic=tp.topic_name,
                    partition=tp.partition,
                    leader=reg.leader,
                    leader_epoch=reg.leader_epoch,
                    replicas=tuple(reg.replicas),
                    isr=tuple(reg.isr),
                    offline=tuple(offline_replicas(image.cluster, reg)),
                    directories=tuple(dirs_txt),
                )
            )
        partitions.sort(key=lambda p: (p.topic, p.partition))
    migration_view = None
    if migration is not None:
        active = next((c for c in controllers if c.leader and c.role == "controller"), None)
        body = active.health if active is not None else None
        state = (body or {}).get("zk_migration_state")
        driver = (body or {}).get("migration_driver_state")
        migration_view = MigrationView(
            phase=migration[0],
            state=str(state) if state is not None else None,
            driver=str(driver) if driver is not None else None,
            node_phases=dict(migration[1]),
        )
    return ClusterView(
        taken_at=time.time(),
        work_dir=work_dir,
        cluster_id=cluster_id,
        mode=mode,
        controller=next((c for c in controllers if c.leader), controllers[0]),
        brokers=tuple(node_view(b) for b in brokers),
        dirs=tuple(dirs),
        partitions=tuple(partitions),
        metadata_offset=offset,
        notes=notes,
        controllers=controllers,
        migration=migration_view,
    )
