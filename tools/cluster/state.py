"""`<work dir>/cluster.json`: what a cluster is and where every part of it stands.

Written before anything is created and after every change (temp file, fsync, rename), so `status`
and `down` from another invocation, or after a crash, find every process, disk and namespace.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tools.cluster.errors import ClusterError
from tools.cluster.spec import ClusterSpec, NodePlan

STATE_FILE = "cluster.json"
LOCK_FILE = ".cluster.lock"
STATE_VERSION = 1


@dataclass
class ProcessRecord:
    """A started node process. `start_time` (clock ticks since boot, /proc/PID/stat field 22) tells a
    recycled PID from ours; `desired` is what the cluster wants of the node (restart policy reads it)."""

    pid: int
    start_time: int
    started_at: float
    desired: str = "running"  # or "stopped"
    restarts: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "pid": self.pid,
            "start_time": self.start_time,
            "started_at": self.started_at,
            "desired": self.desired,
            "restarts": self.restarts,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> ProcessRecord:
        return cls(
            pid=int(d["pid"]),
            start_time=int(d["start_time"]),
            started_at=float(d["started_at"]),
            desired=str(d.get("desired", "running")),
            restarts=int(d.get("restarts", 0)),
        )


@dataclass
class MigrationRecord:
    """Where `kraftpy migrate` (ZooKeeper to KRaft, KIP-866) has brought a cluster born in ZooKeeper
    mode. A node's mode names the config on its disk (what it runs once restarted), so `cluster
    start` and the next step agree on it even when a roll was interrupted."""

    # broker id -> "zk", "migrating" (ZooKeeper mode with the migration flag) or "kraft"
    brokers: dict[int, str] = field(default_factory=dict)
    # controller id -> "migration" (zookeeper.metadata.migration.enable=true) or "kraft"
    controllers: dict[int, str] = field(default_factory=dict)
    # The active controller reported MIGRATION with its driver in DUAL_WRITE: the copy committed.
    migrated: bool = False
    # The active controller reported POST_MIGRATION.
    finalized: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "brokers": {str(k): v for k, v in sorted(self.brokers.items())},
            "controllers": {str(k): v for k, v in sorted(self.controllers.items())},
            "migrated": self.migrated,
            "finalized": self.finalized,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> MigrationRecord:
        return cls(
            brokers={int(k): str(v) for k, v in (d.get("brokers") or {}).items()},
            controllers={int(k): str(v) for k, v in (d.get("controllers") or {}).items()},
            migrated=bool(d.get("migrated", False)),
            finalized=bool(d.get("finalized", False)),
        )


@dataclass
class ClusterState:
    work_dir: str
    cluster_id: str
    spec: ClusterSpec
    nodes: list[NodePlan]
    phase: str = "creating"  # creating, up, stopping
    processes: dict[str, ProcessRecord] = field(default_factory=dict)
    netns_prefix: str | None = None
    route_added: bool = False
    disk_state_dir: str | None = None
    supervisor_pid: int | None = None
    supervisor_start_time: int | None = None
    created_at: float = 0.0
    # log dir path -> directory.id written by format (readable even when the dir's disk is dead)
    directory_ids: dict[str, str] = field(default_factory=dict)
    # Set once `kraftpy migrate` added controllers to a ZooKeeper-mode cluster.
    migration: MigrationRecord | None = None

    def node(self, name: str) -> NodePlan:
        for n in self.nodes:
            if n.name == name:
                return n
        raise ClusterError(f"no node named {name} in this cluster")

    @property
    def controllers(self) -> list[NodePlan]:
        return [n for n in self.nodes if n.role == "controller"]

    @property
    def zookeeper_node(self) -> NodePlan | None:
        """The ZooKeeper server of a ZooKeeper-mode cluster."""
        return next((n for n in self.nodes if n.role == "zookeeper"), None)

    @property
    def zookeeper(self) -> str | None:
        """zookeeper.connect of a ZooKeeper-mode cluster, None for a KRaft one."""
        zk = self.zookeeper_node
        return f"{zk.host}:{zk.port}" if zk is not None else None

    @property
    def kraft_metadata(self) -> bool:
        """The controllers' metadata log holds the cluster's metadata: a KRaft cluster, or one whose
        ZooKeeper metadata was copied by a migration."""
        return self.zookeeper is None or (self.migration is not None and self.migration.migrated)

    @property
    def servers(self) -> list[NodePlan]:
        """What brokers depend on: the controllers, or the ZooKeeper server."""
        return [n for n in self.nodes if n.role in ("controller", "zookeeper")]

    @property
    def brokers(self) -> list[NodePlan]:
        return [n for n in self.nodes if n.role == "broker"]

    def broker(self, broker_id: int) -> NodePlan:
        for n in self.brokers:
            if n.node_id == broker_id:
                return n
        raise ClusterError(f"no broker {broker_id} in this cluster")

    def node_by_id(self, node_id: int) -> NodePlan:
        """A broker (1..N) or a controller (3000..) by its node.id."""
        for n in self.nodes:
            if n.node_id == node_id:
                return n
        ids = ", ".join(str(n.node_id) for n in self.nodes)
        raise ClusterError(f"no node {node_id} in this cluster (its nodes: {ids})")

    def to_json(self) -> dict[str, Any]:
        return {
            "version": STATE_VERSION,
            "work_dir": self.work_dir,
            "cluster_id": self.cluster_id,
            "spec": self.spec.to_json(),
            "nodes": [n.to_json() for n in self.nodes],
            "phase": self.phase,
            "processes": {k: v.to_json() for k, v in self.processes.items()},
            "netns_prefix": self.netns_prefix,
            "route_added": self.route_added,
            "disk_state_dir": self.disk_state_dir,
            "supervisor_pid": self.supervisor_pid,
            "supervisor_start_time": self.supervisor_start_time,
            "created_at": self.created_at,
            "directory_ids": dict(self.directory_ids),
            "migration": self.migration.to_json() if self.migration is not None else None,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> ClusterState:
        if d.get("version") != STATE_VERSION:
            raise ValueError(f"unknown state version {d.get('version')!r}")
        return cls(
            work_dir=str(d["work_dir"]),
            cluster_id=str(d["cluster_id"]),
            spec=ClusterSpec.from_json(d["spec"]),
            nodes=[NodePlan.from_json(n) for n in d["nodes"]],
            phase=str(d.get("phase", "up")),
            processes={k: ProcessRecord.from_json(v) for k, v in (d.get("processes") or {}).items()},
            netns_prefix=d.get("netns_prefix"),
            route_added=bool(d.get("route_added")),
            disk_state_dir=d.get("disk_state_dir"),
            supervisor_pid=d.get("supervisor_pid"),
            supervisor_start_time=d.get("supervisor_start_time"),
            created_at=float(d.get("created_at") or 0.0),
            directory_ids=dict(d.get("directory_ids") or {}),
            migration=MigrationRecord.from_json(d["migration"]) if d.get("migration") else None,
        )


class StateFile:
    """Reads and replaces cluster.json; mutations go through `locked()` (an flock, re-entrant here)."""

    def __init__(self, work_dir: str | os.PathLike[str]) -> None:
        self.work_dir = Path(os.path.abspath(work_dir))
        self.path = self.work_dir / STATE_FILE
        self._mutex = threading.RLock()
        self._depth = 0
        self._fd: int | None = None

    def exists(self) -> bool:
        return self.path.exists()

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        with self._mutex:
            if self._depth == 0:
                self.work_dir.mkdir(parents=True, exist_ok=True)
                fd = os.open(self.work_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX)
                except BaseException:
                    os.close(fd)
                    raise
                self._fd = fd
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
                if self._depth == 0 and self._fd is not None:
                    os.close(self._fd)
                    self._fd = None

    def load(self) -> ClusterState:
        try:
            raw = self.path.read_text()
        except FileNotFoundError:
            raise ClusterError(
                f"no cluster in {self.work_dir} (no {STATE_FILE}); start one with `kraftpy cluster up`"
            ) from None
        except OSError as e:
            raise ClusterError(f"cannot read {self.path}: {e.strerror}") from None
        try:
            return ClusterState.from_json(json.loads(raw))
        except (ValueError, KeyError, TypeError) as e:
            raise ClusterError(f"{self.path} is damaged ({e}); remove the work dir by hand") from None

    def save(self, state: ClusterState) -> None:
        self.work_dir.mkdir(parents=True, exist_ok=True)
        data = json.dumps(state.to_json(), indent=2, sort_keys=True) + "\n"
        fd, tmp = tempfile.mkstemp(prefix=f".{STATE_FILE}.", dir=self.work_dir)
        try:
            with os.fdopen(fd, "w") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, 0o644)
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise

    def remove(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
