"""One controller and brokers with any number of log dirs each, as real processes on 127.0.0.1.

What tests and benchmarks start: every node gets a generated config, is formatted with
`kraftpy storage format` and is started through the launcher, logs in `<workdir>/logs`. Unlike
`LocalCluster` (`kraftpy cluster`) nothing is recorded for another invocation: the `ProcessSet` given
stops every process, and log dirs can be anywhere (plain dirs, mountpoints of real disks).

    cluster = ProcessCluster.build(workdir, procs, log_dirs={1: [d0, d1], 2: [d2, d3]})
    cluster.start()                  # controller healthy, then every broker RUNNING (unfenced)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from tools.cluster.configs import write_broker_config, write_controller_config
from tools.cluster.launcher import (
    ManagedProcess,
    ProcessSet,
    format_storage,
    free_ports,
    get_json,
    run_kraftpy,
    wait_for_healthz,
)
from tools.cluster.spec import LOOPBACK

T = TypeVar("T")
C = TypeVar("C", bound="ProcessCluster")

# Broker timings that make a failover take seconds, not half a minute (heartbeats, probes, fetch
# backoff), for tests that fail dirs and for benchmarks that should measure what those tests run.
QUICK_FAILOVER: Mapping[str, int] = {
    "broker.heartbeat.interval.ms": 300,
    "broker.session.timeout.ms": 4000,
    "log.dir.probe.interval.ms": 200,
    "replica.fetch.backoff.ms": 200,
    "replica.lag.time.max.ms": 5000,
    "replica.high.watermark.checkpoint.interval.ms": 1000,
}


def random_cluster_id() -> str:
    from protocol.uuid import Uuid

    return str(Uuid.random())


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
class BrokerNode:
    node_id: int
    port: int
    config: Path
    log_dirs: list[Path]
    metadata_dir: Path
    proc: ManagedProcess | None = None
    kafka_port: int | None = None

    @property
    def address(self) -> str:
        return f"{LOOPBACK}:{self.port}"

    @property
    def kafka_address(self) -> str | None:
        return f"{LOOPBACK}:{self.kafka_port}" if self.kafka_port is not None else None

    @property
    def url(self) -> str:
        return f"http://{self.address}"

    def health(self) -> dict[str, Any]:
        try:
            status, body = get_json(f"{self.url}/healthz", timeout=2.0)
        except OSError:
            return {}
        return body if status == 200 and isinstance(body, dict) else {}

    def metrics(self) -> str:
        from tools.client.security import urlopen

        with urlopen(f"{self.url}/metrics", 2.0) as resp:
            return resp.read().decode()

    def dir_id(self, index: int) -> Any:
        """The `directory.id` of log dir `index`, from its meta.properties."""
        from kraftpy.storage import read_meta_properties

        meta = read_meta_properties(self.log_dirs[index])
        assert meta.directory_id is not None
        return meta.directory_id


@dataclass
class ProcessCluster:
    workdir: Path
    procs: ProcessSet
    controller_id: int = 1
    cluster_id: str = field(default_factory=random_cluster_id)
    broker_extra: Mapping[str, object] = field(default_factory=dict)
    controller_port: int = 0
    controller_config: Path | None = None
    controller_meta: Path | None = None
    controller: ManagedProcess | None = None
    brokers: dict[int, BrokerNode] = field(default_factory=dict)

    @classmethod
    def build(
        cls: type[C],
        workdir: Path,
        procs: ProcessSet,
        *,
        controller_id: int = 1,
        controller_extra: Mapping[str, object] | None = None,
        broker_extra: Mapping[str, object] | None = None,
        log_dirs: Mapping[int, Sequence[Path]] | None = None,
        kafka: bool = False,
    ) -> C:
        """Write and format the controller and a broker per `log_dirs` entry ({broker id: dirs});
        `broker_extra` goes into every broker's config, including brokers added later; `kafka`: the
        brokers also serve Kafka's protocol (BrokerNode.kafka_address)."""
        c = cls(workdir, procs, controller_id=controller_id, broker_extra=dict(broker_extra or {}))
        n = len(log_dirs or {})
        ports = free_ports(1 + n + (n if kafka else 0))
        kafka_ports = ports[1 + n :] if kafka else [None] * n
        c.controller_port = ports[0]
        c.controller_meta = workdir / "controller-meta"
        c.controller_config = write_controller_config(
            workdir / "controller.properties",
            node_id=controller_id,
            port=c.controller_port,
            metadata_dir=c.controller_meta,
            extra=controller_extra,
        )
        format_storage(c.controller_config, c.cluster_id)
        brokers = sorted((log_dirs or {}).items())
        for port, kafka_port, (node_id, dirs) in zip(ports[1 : 1 + n], kafka_ports, brokers, strict=True):
            c.add_broker(node_id, dirs, port=port, kafka_port=kafka_port)
        return c

    @classmethod
    def build_quick(
        cls: type[C],
        workdir: Path,
        procs: ProcessSet,
        log_dirs: Mapping[int, Sequence[Path]],
        *,
        broker_extra: Mapping[str, object] | None = None,
        kafka: bool = False,
    ) -> C:
        """Controller 100 and the brokers of `log_dirs` with QUICK_FAILOVER timings (the controller
        fences a broker after the same session timeout)."""
        return cls.build(
            workdir,
            procs,
            controller_id=100,
            controller_extra={"broker.session.timeout.ms": QUICK_FAILOVER["broker.session.timeout.ms"]},
            broker_extra={**QUICK_FAILOVER, **(broker_extra or {})},
            log_dirs=log_dirs,
            kafka=kafka,
        )

    def add_broker(
        self,
        node_id: int,
        log_dirs: Sequence[Path],
        *,
        metadata_dir: Path | None = None,
        extra: Mapping[str, object] | None = None,
        port: int | None = None,
        kafka_port: int | None = None,
    ) -> BrokerNode:
        """`kafka_port`: also serve Kafka's protocol there (for Kafka's clients)."""
        port = port or free_ports(1)[0]
        meta = metadata_dir or self.workdir / f"broker{node_id}-meta"
        cfg = write_broker_config(
            self.workdir / f"broker{node_id}.properties",
            node_id=node_id,
            port=port,
            log_dirs=list(log_dirs),
            voters={self.controller_id: self.controller_port},
            metadata_dir=meta,
            extra={**self.broker_extra, **(extra or {})},
            kafka_port=kafka_port,
        )
        format_storage(cfg, self.cluster_id)
        node = BrokerNode(node_id, port, cfg, list(log_dirs), meta, kafka_port=kafka_port)
        self.brokers[node_id] = node
        return node

    @property
    def bootstrap(self) -> str:
        return ",".join(b.address for b in self.brokers.values())

    @property
    def kafka_bootstrap(self) -> str:
        return ",".join(a for b in self.brokers.values() if (a := b.kafka_address))

    @property
    def controller_address(self) -> str:
        return f"{LOOPBACK}:{self.controller_port}"

    # ---- processes ----------------------------------------------------------------------------

    def start(self) -> None:
        """The controller, then every broker at once; returns when all of them are RUNNING."""
        self.start_controller()
        for node_id in self.brokers:
            self.launch_broker(node_id)
        for node_id in self.brokers:
            self.wait_running(node_id)

    def start_controller(self, timeout: float = 30.0) -> ManagedProcess:
        assert self.controller_config is not None
        self.controller = self.procs.start_controller(self.controller_config, name="controller")
        wait_for_healthz(self.controller, timeout=timeout)
        return self.controller

    def launch_broker(self, node_id: int, args: Sequence[str] = ()) -> ManagedProcess:
        """Start broker `node_id` without waiting; each start has its own log (`broker<id>-<n>.log`)."""
        node = self.brokers[node_id]
        n = sum(1 for p in self.procs.started if p.name.startswith(f"broker{node_id}-"))
        node.proc = self.procs.start_broker(node.config, name=f"broker{node_id}-{n}", args=args)
        return node.proc

    def wait_healthy(self, node_id: int, timeout: float = 60.0) -> dict[str, object]:
        proc = self.brokers[node_id].proc
        assert proc is not None
        return wait_for_healthz(proc, timeout=timeout)

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

    def stop_broker(self, node_id: int, timeout: float = 30.0) -> int:
        node = self.brokers[node_id]
        assert node.proc is not None
        return node.proc.terminate(timeout=timeout)

    def kraftpy(self, *args: str, check: bool = True) -> str:
        return run_kraftpy(*args, check=check).stdout

    def logs(self) -> str:
        return "\n".join(f"==== {p.name}\n{p.log_tail(80)}" for p in self.procs.started)
