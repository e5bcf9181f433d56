"""KRaft controllers in migration mode as real processes against a real ZooKeeper: the refusal of a
cluster born in KRaft, and a quorum waiting for ZooKeeper brokers with every voter ready."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.zk_server import ZkServer
from tools.cluster.configs import write_controller_config
from tools.cluster.launcher import ProcessSet, free_ports, run_kraftpy
from tools.cluster.layout import ProcessCluster, random_cluster_id, wait_until
from tools.cluster.probe import parse_metrics

pytestmark = [pytest.mark.real]


def test_migration_on_a_cluster_born_in_kraft_halts_with_kafkas_message(
    tmp_path: Path, zk_server: ZkServer
) -> None:
    procs = ProcessSet(tmp_path)
    try:
        cluster = ProcessCluster.build(tmp_path, procs)
        cluster.start_controller()
        assert cluster.controller is not None
        cluster.controller.terminate(timeout=30)
        assert cluster.controller_config is not None
        with cluster.controller_config.open("a") as f:
            f.write(f"zookeeper.metadata.migration.enable=true\nzookeeper.connect={zk_server.connect}\n")
        again = procs.start_controller(cluster.controller_config, name="controller-migrating")
        wait_until("the controller to halt", lambda: again.returncode is not None or None, timeout=60)
        assert again.returncode == 70
        assert (
            "Should not have ZK migrations enabled on a cluster that was created in KRaft mode."
            in again.log_tail(80)
        )
    finally:
        procs.stop_all()


def test_migration_without_zookeeper_connect_is_a_startup_error(tmp_path: Path) -> None:
    cfg = write_controller_config(
        tmp_path / "c.properties",
        node_id=3000,
        port=free_ports(1)[0],
        metadata_dir=tmp_path / "meta",
        extra={"zookeeper.metadata.migration.enable": "true"},
    )
    out = run_kraftpy("storage", "format", "-c", str(cfg), "-t", random_cluster_id(), check=False)
    assert out.returncode == 0, out.stderr
    procs = ProcessSet(tmp_path)
    try:
        proc = procs.start_controller(cfg, name="controller")
        wait_until("the controller to exit", lambda: proc.returncode is not None or None, timeout=30)
        assert proc.returncode != 0
        assert "`zookeeper.connect` must also be set" in proc.log_tail(20)
        assert "Traceback" not in proc.log_tail(40)
    finally:
        procs.stop_all()


def _quorum(tmp_path: Path, procs: ProcessSet, zk_connect: str) -> list[tuple[int, int, Path]]:
    ids = [3000, 3001]
    ports = free_ports(len(ids))
    voters = ",".join(f"{i}@127.0.0.1:{p}" for i, p in zip(ids, ports, strict=True))
    cluster_id = random_cluster_id()
    out = []
    for node_id, port in zip(ids, ports, strict=True):
        cfg = write_controller_config(
            tmp_path / f"controller-{node_id}.properties",
            node_id=node_id,
            port=port,
            metadata_dir=tmp_path / f"controller-{node_id}",
            extra={
                "controller.quorum.voters": voters,
                "zookeeper.metadata.migration.enable": "true",
                "zookeeper.connect": zk_connect,
            },
        )
        run_kraftpy("storage", "format", "-c", str(cfg), "-t", cluster_id)
        out.append((node_id, port, cfg))
    return out


def test_a_migrating_quorum_waits_for_zookeeper_brokers_with_every_voter_ready(
    tmp_path: Path, zk_server: ZkServer
) -> None:
    import json
    import urllib.request

    procs = ProcessSet(tmp_path)
    try:
        nodes = _quorum(tmp_path, procs, zk_server.connect)
        for node_id, _, cfg in nodes:
            procs.start_controller(cfg, name=f"controller-{node_id}")

        def health(port: int) -> dict:  # type: ignore[type-arg]
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as r:
                return json.loads(r.read())

        def waiting_for_brokers() -> dict | None:  # type: ignore[type-arg]
            for _, port, _ in nodes:
                try:
                    h = health(port)
                except OSError:
                    continue
                if h.get("active") and h.get("migration_driver_state") == "WAIT_FOR_BROKERS":
                    return h
            return None

        h = wait_until("the active controller to wait for brokers", waiting_for_brokers, timeout=60)
        assert h["zk_migration_state"] == "PRE_MIGRATION"
        assert h["migration_waiting_for"] == "No brokers are known to KRaft, waiting for brokers to register."
        active_port = next(port for _, port, _ in nodes if health(port).get("active"))
        with urllib.request.urlopen(f"http://127.0.0.1:{active_port}/metrics", timeout=5) as r:
            metrics = parse_metrics(r.read().decode())
        assert metrics["kafka_controller_kafkacontroller_zkmigrationstate"][0][1] == 2.0
        assert metrics["kafka_controller_kafkacontroller_migratingzkbrokercount"][0][1] == 0.0
    finally:
        procs.stop_all()
