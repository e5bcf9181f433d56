"""A ZooKeeper-mode JBOD cluster and a KRaft controller, as real processes, for migration scenarios.

The steps are the operator's (Kafka's zookeeper_migration_test): a controller with the migration
configs, the brokers rolled into migration mode, then into KRaft mode, then the controller rolled
without the migration configs. Each step rewrites a node's config file and restarts the process.
"""

from __future__ import annotations

import json
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient

from tests.support.zk_server import ZkServer
from tools.cluster.configs import (
    broker_props,
    controller_props,
    voters_string,
    with_extra,
    write_config,
    zk_broker_props,
)
from tools.cluster.launcher import ManagedProcess, ProcessSet, free_ports, kraftpy_command, run_kraftpy
from tools.cluster.layout import wait_until
from tools.cluster.zk_layout import ZK_QUICK_FAILOVER, ZkProcessCluster

CONTROLLER_ID = 3000
MIGRATION = "zookeeper.metadata.migration.enable"
KRAFT_QUICK = {
    "broker.heartbeat.interval.ms": 500,
    "broker.session.timeout.ms": 4000,
    "log.dir.probe.interval.ms": 200,
    "replica.fetch.backoff.ms": 200,
}


@dataclass
class MigrationRig:
    workdir: Path
    zk: ZkServer
    procs: ProcessSet
    zk_cluster: ZkProcessCluster
    controller_port: int = field(default_factory=lambda: free_ports(1)[0])
    controller: ManagedProcess | None = None
    controller_config: Path | None = None
    formatted: bool = False

    @classmethod
    def build(
        cls, workdir: Path, zk: ZkServer, procs: ProcessSet, brokers: int = 2, dirs: int = 2
    ) -> MigrationRig:
        log_dirs = {b: [workdir / f"b{b}" / f"d{i}" for i in range(dirs)] for b in range(1, brokers + 1)}
        zk_cluster = ZkProcessCluster.build(workdir, procs, zk.connect, log_dirs)
        return cls(workdir, zk, procs, zk_cluster)

    # ---- ZooKeeper ---------------------------------------------------------------------------------

    def kazoo(self) -> KazooClient:
        client = KazooClient(hosts=self.zk.connect)
        client.start(timeout=10)
        return client

    def zk_get(self, path: str) -> bytes | None:
        client = self.kazoo()
        try:
            found = client.exists(path)
            return client.get(path)[0] if found else None
        finally:
            client.stop()
            client.close()

    # ---- the controller ------------------------------------------------------------------------------

    @property
    def voters(self) -> str:
        return voters_string({CONTROLLER_ID: self.controller_port})

    @property
    def controller_meta(self) -> Path:
        return self.workdir / "controller-meta"

    def start_controller(self, *, migration: bool = True) -> ManagedProcess:
        props = controller_props(
            node_id=CONTROLLER_ID,
            port=self.controller_port,
            metadata_dir=self.controller_meta,
            voters=self.voters,
        )
        props["listener.security.protocol.map"] = "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"
        if migration:
            props.update({MIGRATION: "true", "zookeeper.connect": self.zk.connect})
            props["inter.broker.listener.name"] = "PLAINTEXT"
        self.controller_config = write_config(self.workdir / "controller.properties", props)
        if not self.formatted:
            cluster_id = (self.zk_get("/cluster/id") or b"").decode()
            cluster_id = json.loads(cluster_id)["id"]
            run_kraftpy("storage", "format", "-c", str(self.controller_config), "-t", cluster_id)
            self.formatted = True
        n = sum(1 for p in self.procs.started if p.name.startswith("controller"))
        self.controller = self.procs.start_controller(self.controller_config, name=f"controller-{n}")
        wait_until("the controller's /healthz", lambda: self.health() or None, 30)
        return self.controller

    def stop_controller(self) -> None:
        assert self.controller is not None
        self.controller.terminate(timeout=30)

    def health(self) -> dict[str, Any]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.controller_port}/healthz", timeout=5) as r:
                return json.loads(r.read())
        except OSError:
            return {}

    def wait_controller(
        self, *, driver: str | None = None, zk_state: str | None = None, timeout: float = 90.0
    ) -> dict[str, Any]:
        def reached() -> dict[str, Any] | None:
            assert self.controller is not None
            if not self.controller.alive:
                raise AssertionError(
                    f"controller exited {self.controller.returncode}:\n{self.controller.log_tail(60)}"
                )
            h = self.health()
            if driver is not None and h.get("migration_driver_state") != driver:
                return None
            if zk_state is not None and h.get("zk_migration_state") != zk_state:
                return None
            return h

        return wait_until(f"controller in {driver or zk_state}", reached, timeout)

    def image(self) -> dict[str, Any]:
        out = run_kraftpy("metadata", "image", str(self.controller_meta), "--json")
        return json.loads(out.stdout)

    # ---- brokers --------------------------------------------------------------------------------------

    def _rewrite(self, broker_id: int, props: dict[str, str]) -> None:
        node = self.zk_cluster.brokers[broker_id]
        write_config(node.config, with_extra(props, {}))

    def roll_migrating(self, broker_id: int) -> None:
        node = self.zk_cluster.brokers[broker_id]
        self.zk_cluster.stop_broker(broker_id)
        props = zk_broker_props(
            broker_id=broker_id, port=node.port, log_dirs=node.log_dirs, zookeeper=self.zk.connect
        )
        props.update(
            {
                MIGRATION: "true",
                "controller.quorum.voters": self.voters,
                "controller.listener.names": "CONTROLLER",
                "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            }
        )
        self._rewrite(broker_id, with_extra(props, {**ZK_QUICK_FAILOVER, **KRAFT_QUICK}))
        self.zk_cluster.launch_broker(broker_id)
        self.zk_cluster.wait_registered(broker_id)

    def roll_kraft(self, broker_id: int) -> dict[str, Any]:
        node = self.zk_cluster.brokers[broker_id]
        self.zk_cluster.stop_broker(broker_id)
        props = broker_props(node_id=broker_id, port=node.port, log_dirs=node.log_dirs, voters=self.voters)
        self._rewrite(broker_id, with_extra(props, KRAFT_QUICK))
        self.zk_cluster.launch_broker(broker_id)

        def running() -> dict[str, Any] | None:
            proc = node.proc
            assert proc is not None
            if not proc.alive:
                raise AssertionError(f"broker {broker_id} exited {proc.returncode}:\n{proc.log_tail(60)}")
            h = node.health()
            return h if h.get("broker_state") == "RUNNING" else None

        return wait_until(f"broker {broker_id} RUNNING in KRaft mode", running, 90)

    def produce(self, topic: str, lines: list[str]) -> None:
        argv = kraftpy_command("produce", "--bootstrap-server", self.zk_cluster.bootstrap, "--topic", topic)
        out = subprocess.run(
            argv, input="\n".join(lines) + "\n", capture_output=True, text=True, timeout=120, check=False
        )
        assert out.returncode == 0, out.stderr

    def consume(self, topic: str, expected: int) -> list[str]:
        out = run_kraftpy(
            "consume",
            "--bootstrap-server",
            self.zk_cluster.bootstrap,
            "--topic",
            topic,
            "--from-beginning",
            "--max-messages",
            str(expected),
            "--timeout-ms",
            "20000",
        )
        return [line for line in out.stdout.splitlines() if line]


def wait(what: str, check: Any, timeout: float = 60.0) -> Any:
    return wait_until(what, check, timeout)


def now() -> float:
    return time.monotonic()
