"""A real ZooKeeper for a test: Debian's package, standalone, on a free port under the test's tmp dir.

`zk_server` yields a `ZkServer` (its connect string and a way to stop and start it again); the
server dies with the test. Without java or the package the test skips, or fails under
KRAFTPY_REQUIRE_REAL=1.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import require_real
from tools.cluster.configs import write_config
from tools.cluster.launcher import (
    ManagedProcess,
    ProcessSet,
    free_ports,
    zookeeper_available,
    zookeeper_command,
)
from tools.cluster.probe import zk_serving

START_TIMEOUT_S = 30.0


@dataclass
class ZkServer:
    workdir: Path
    procs: ProcessSet
    port: int
    tick_ms: int = 500
    proc: ManagedProcess | None = None

    @property
    def connect(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        cfg = write_config(
            self.workdir / "zoo.cfg",
            {
                "tickTime": str(self.tick_ms),
                "dataDir": str(self.workdir / "data"),
                "clientPort": str(self.port),
                "clientPortAddress": "127.0.0.1",
                "maxClientCnxns": "0",
                "admin.enableServer": "false",
                "4lw.commands.whitelist": "ruok,srvr,mntr,stat",
                # Creating a session is a transaction: with the machine's disks busy under other
                # tests' loop devices, its fsync alone outlasted a client's 10 s connect timeout.
                "forceSync": "no",
            },
        )
        n = sum(1 for p in self.procs.started if p.name.startswith("zookeeper"))
        self.proc = self.procs.start(f"zookeeper-{n}", zookeeper_command(cfg))
        deadline = time.monotonic() + START_TIMEOUT_S
        while not zk_serving("127.0.0.1", self.port):
            if not self.proc.alive:
                raise AssertionError(f"ZooKeeper exited:\n{self.proc.log_tail(40)}")
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"ZooKeeper not serving after {START_TIMEOUT_S}s:\n{self.proc.log_tail(40)}"
                )
            time.sleep(0.05)

    def stop(self) -> None:
        if self.proc is not None and self.proc.alive:
            self.proc.terminate(timeout=10)


def zookeeper_missing() -> bool:
    return not zookeeper_available()


@pytest.fixture
def zk_server(tmp_path: Path) -> Iterator[ZkServer]:
    require_real("ZooKeeper (java and Debian's zookeeper package)", zookeeper_available())
    procs = ProcessSet(tmp_path / "zk")
    server = ZkServer(tmp_path / "zk", procs, free_ports(1)[0])
    try:
        server.start()
        yield server
    finally:
        procs.stop_all()
