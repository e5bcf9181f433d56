"""A controller and three brokers as real processes for data-plane tests, plus the CLI and clients.

Brokers get several log dirs each: plain dirs under the test's tmp dir, or mountpoints of real
loop-device filesystems (`real_disks`) when a test fails disks. Timings are shortened
(heartbeats, probes, fetch backoff) so failovers take seconds, not half a minute.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from kraftpy.storage import read_meta_properties
from protocol.uuid import Uuid
from tests.support.processes import (
    ManagedProcess,
    ProcessSet,
    format_storage,
    free_ports,
    get_json,
    random_cluster_id,
    run_kraftpy,
    wait_for_healthz,
    write_broker_config,
    write_controller_config,
)

T = TypeVar("T")

FAST_BROKER = {
    "broker.heartbeat.interval.ms": 300,
    "broker.session.timeout.ms": 4000,
    "log.dir.probe.interval.ms": 200,
    "replica.fetch.backoff.ms": 200,
    "replica.lag.time.max.ms": 5000,
    "replica.high.watermark.checkpoint.interval.ms": 1000,
}


def wait_until(what: str, check: Callable[[], T | None], timeout: float = 60.0, interval: float = 0.1) -> T:
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


@dataclass
class Broker:
    node_id: int
    port: int
    config: Path
    log_dirs: list[Path]
    proc: ManagedProcess | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def health(self) -> dict[str, Any]:
        try:
            status, body = get_json(f"http://{self.address}/healthz", timeout=2.0)
        except OSError:
            return {}
        return body if status == 200 and isinstance(body, dict) else {}

    def dir_id(self, index: int) -> Uuid:
        meta = read_meta_properties(self.log_dirs[index])
        assert meta.directory_id is not None
        return meta.directory_id


@dataclass
class DataCluster:
    workdir: Path
    procs: ProcessSet
    cluster_id: str = field(default_factory=random_cluster_id)
    controller_port: int = 0
    controller_config: Path | None = None
    controller: ManagedProcess | None = None
    brokers: dict[int, Broker] = field(default_factory=dict)

    @classmethod
    def create(
        cls,
        workdir: Path,
        procs: ProcessSet,
        log_dirs: Mapping[int, Sequence[Path]],
        *,
        broker_extra: Mapping[str, object] | None = None,
    ) -> DataCluster:
        c = cls(workdir, procs)
        ports = free_ports(1 + len(log_dirs))
        c.controller_port = ports[0]
        c.controller_config = write_controller_config(
            workdir / "controller.properties",
            node_id=100,
            port=c.controller_port,
            metadata_dir=workdir / "controller-meta",
            extra={"broker.session.timeout.ms": FAST_BROKER["broker.session.timeout.ms"]},
        )
        format_storage(c.controller_config, c.cluster_id)
        for port, (node_id, dirs) in zip(ports[1:], sorted(log_dirs.items()), strict=True):
            cfg = write_broker_config(
                workdir / f"broker{node_id}.properties",
                node_id=node_id,
                port=port,
                log_dirs=list(dirs),
                voters={100: c.controller_port},
                metadata_dir=workdir / f"broker{node_id}-meta",
                extra={**FAST_BROKER, **(broker_extra or {})},
            )
            format_storage(cfg, c.cluster_id)
            c.brokers[node_id] = Broker(node_id, port, cfg, list(dirs))
        return c

    @property
    def bootstrap(self) -> str:
        return ",".join(b.address for b in self.brokers.values())

    @property
    def controller_address(self) -> str:
        return f"127.0.0.1:{self.controller_port}"

    def start(self) -> None:
        assert self.controller_config is not None
        self.controller = self.procs.start_controller(self.controller_config, name="controller")
        wait_for_healthz(self.controller)
        for node_id in self.brokers:
            self.start_broker(node_id, wait=False)
        for node_id in self.brokers:
            self.wait_running(node_id)

    def start_broker(self, node_id: int, *, wait: bool = True) -> ManagedProcess:
        b = self.brokers[node_id]
        n = sum(1 for p in self.procs.started if p.name.startswith(f"broker{node_id}"))
        b.proc = self.procs.start_broker(b.config, name=f"broker{node_id}-{n}")
        if wait:
            self.wait_running(node_id)
        return b.proc

    def wait_running(self, node_id: int, timeout: float = 60.0) -> dict[str, Any]:
        b = self.brokers[node_id]

        def running() -> dict[str, Any] | None:
            if b.proc is None or not b.proc.alive:
                assert b.proc is not None
                raise AssertionError(f"broker {node_id} exited {b.proc.returncode}:\n{b.proc.log_tail(60)}")
            h = b.health()
            return h if h.get("broker_state") == "RUNNING" else None

        return wait_until(f"broker {node_id} RUNNING", running, timeout)

    def kraftpy(self, *args: str, check: bool = True) -> str:
        return run_kraftpy(*args, check=check).stdout

    def logs(self) -> str:
        return "\n".join(f"==== {p.name}\n{p.log_tail(80)}" for p in self.procs.started)


def run(coro: Any) -> Any:
    return asyncio.run(coro)
