"""A ZooKeeper-mode cluster as real processes on 127.0.0.1: Debian's ZooKeeper and JBOD brokers.

What the ZooKeeper-mode tests and `bench/failover.py --mode zk` start. Like `ProcessCluster`, the
`ProcessSet` given stops every process; the ZooKeeper server is stopped by the caller (the
`zookeeper` fixture, or the benchmark's `with`).

    cluster = ZkProcessCluster.build(workdir, procs, zk.connect_string, log_dirs={1: [d0, d1], 2: [...]})
    cluster.start()        # every broker registered, one of them controller
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tools.cluster.configs import with_extra, write_config, zk_broker_props
from tools.cluster.launcher import ManagedProcess, ProcessSet, free_ports
from tools.cluster.layout import BrokerNode, wait_until
from tools.cluster.spec import LOOPBACK

ZK_QUICK_FAILOVER: Mapping[str, int] = {
    "zookeeper.session.timeout.ms": 4000,
    "log.dir.probe.interval.ms": 200,
    "replica.fetch.backoff.ms": 200,
    "replica.lag.time.max.ms": 5000,
    "replica.high.watermark.checkpoint.interval.ms": 1000,
    "controlled.shutdown.retry.backoff.ms": 200,
}


@dataclass
class ZkProcessCluster:
    workdir: Path
    procs: ProcessSet
    zookeeper: str
    broker_extra: Mapping[str, object] = field(default_factory=dict)
    brokers: dict[int, BrokerNode] = field(default_factory=dict)

    @classmethod
    def build(
        cls,
        workdir: Path,
        procs: ProcessSet,
        zookeeper: str,
        log_dirs: Mapping[int, Sequence[Path]],
        *,
        broker_extra: Mapping[str, object] | None = None,
        quick: bool = True,
    ) -> ZkProcessCluster:
        extra = {**(ZK_QUICK_FAILOVER if quick else {}), **(broker_extra or {})}
        c = cls(workdir, procs, zookeeper, broker_extra=extra)
        for port, (broker_id, dirs) in zip(free_ports(len(log_dirs)), sorted(log_dirs.items()), strict=True):
            c.add_broker(broker_id, dirs, port=port)
        return c

    def add_broker(
        self,
        broker_id: int,
        log_dirs: Sequence[Path],
        *,
        port: int | None = None,
        extra: Mapping[str, object] | None = None,
    ) -> BrokerNode:
        port = port or free_ports(1)[0]
        props = zk_broker_props(
            broker_id=broker_id, port=port, log_dirs=list(log_dirs), zookeeper=self.zookeeper
        )
        cfg = write_config(
            self.workdir / f"broker{broker_id}.properties",
            with_extra(props, {**self.broker_extra, **(extra or {})}),
        )
        node = BrokerNode(broker_id, port, cfg, list(log_dirs), Path(log_dirs[0]))
        self.brokers[broker_id] = node
        return node

    @property
    def bootstrap(self) -> str:
        return ",".join(b.address for b in self.brokers.values())

    def start(self, timeout: float = 60.0) -> None:
        for broker_id in self.brokers:
            self.launch_broker(broker_id)
        for broker_id in self.brokers:
            self.wait_registered(broker_id, timeout)
        self.wait_controller(timeout=timeout)

    def launch_broker(self, broker_id: int, args: Sequence[str] = ()) -> ManagedProcess:
        node = self.brokers[broker_id]
        n = sum(1 for p in self.procs.started if p.name.startswith(f"broker{broker_id}-"))
        node.proc = self.procs.start_broker(node.config, name=f"broker{broker_id}-{n}", args=args)
        return node.proc

    def wait_registered(self, broker_id: int, timeout: float = 60.0) -> dict[str, Any]:
        node = self.brokers[broker_id]

        def registered() -> dict[str, Any] | None:
            assert node.proc is not None
            if not node.proc.alive:
                raise AssertionError(
                    f"broker {broker_id} exited {node.proc.returncode}:\n{node.proc.log_tail(60)}"
                )
            h = node.health()
            return h if h.get("registered") else None

        return wait_until(f"broker {broker_id} registered in ZooKeeper", registered, timeout)

    def controller_id(self) -> int | None:
        """The broker whose /healthz says it is the active controller."""
        for b, node in self.brokers.items():
            if (
                node.proc is not None
                and node.proc.alive
                and node.health().get("controller", {}).get("active")
            ):
                return b
        return None

    def wait_controller(self, *, other_than: int | None = None, timeout: float = 60.0) -> int:
        return wait_until(
            "an active ZooKeeper-mode controller",
            lambda: c if (c := self.controller_id()) is not None and c != other_than else None,
            timeout,
        )

    def stop_broker(self, broker_id: int, timeout: float = 30.0) -> int:
        node = self.brokers[broker_id]
        assert node.proc is not None
        return node.proc.terminate(timeout=timeout)

    def logs(self) -> str:
        return "\n".join(f"==== {p.name}\n{p.log_tail(80)}" for p in self.procs.started)


__all__ = ["LOOPBACK", "ZK_QUICK_FAILOVER", "ZkProcessCluster"]
