"""`kraftpy migrate` end to end, as Kafka's zookeeper_migration_test.py runs it: a ZooKeeper-mode
cluster with JBOD brokers and a replicated topic, a KRaft controller added, the brokers rolled into
migration mode and then into KRaft mode, the controller rolled without the migration flag."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from protocol.uuid import MIGRATING, UNASSIGNED
from tests.conftest import require_real
from tests.support.processes import run_kraftpy
from tests.system.helpers import more_acks, start_traffic, validate_clients
from tools.cluster import launcher
from tools.cluster.cluster import LocalCluster
from tools.cluster.launcher import mark_test_run
from tools.cluster.spec import FAST_BROKER_SETTINGS, ClusterSpec

pytestmark = [pytest.mark.system, pytest.mark.real, pytest.mark.slow]

TOPIC = "migrated"
STEP_TIMEOUT_S = "90"


def test_a_zookeeper_cluster_migrates_to_kraft(tmp_path: Path) -> None:
    require_real("java and Debian's zookeeper package", launcher.zookeeper_available())
    mark_test_run()
    work = tmp_path / "cluster"
    spec = ClusterSpec(brokers=2, dirs=2, zookeeper=True, broker_config=dict(FAST_BROKER_SETTINGS))
    cluster = LocalCluster.up(work, spec, timeout=120)
    ok = False
    try:
        cluster.create_topic(TOPIC, 4, 2)
        producer = start_traffic(cluster, TOPIC, tmp_path / "acks.txt")
        run = run_kraftpy(
            "migrate",
            "--work-dir",
            str(work),
            "--controllers",
            "1",
            "--timeout",
            STEP_TIMEOUT_S,
            check=False,
            timeout=900,
        )
        assert run.returncode == 0, run.stdout + run.stderr
        for step in ("add-controllers", "roll-brokers-migration", "wait-migration", "roll-brokers-kraft"):
            assert f"step {step}: done" in run.stdout
        assert "step finalize: done" in run.stdout and "POST_MIGRATION" in run.stdout

        status = json.loads(run_kraftpy("cluster", "status", "--work-dir", str(work), "--json").stdout)
        assert status["migration"]["state"] == "POST_MIGRATION"
        assert status["migration"]["node_phases"] == {
            "0": "ZooKeeper",
            "1": "KRaft broker",
            "2": "KRaft broker",
            "3000": "controller",
        }
        assert [(b["node_id"], b["state"]) for b in status["brokers"]] == [(1, "unfenced"), (2, "unfenced")]
        parts = [p for p in status["partitions"] if p["topic"] == TOPIC]
        assert len(parts) == 4 and all(sorted(p["isr"]) == [1, 2] for p in parts)

        again = run_kraftpy("migrate", "--work-dir", str(work), "--step", "finalize", check=False)
        assert again.returncode == 2 and "already done" in again.stderr

        # Every replica on a real directory, the metadata log as Kafka would write it, nothing lost.
        image = cluster.image()
        assert image is not None
        for _tp, reg in image.topics.partitions():
            assert not set(reg.directories) & {MIGRATING, UNASSIGNED}, reg
        meta = cluster.active_controller().metadata_dir
        run_kraftpy("metadata", "verify", str(Path(meta) / "__cluster_metadata-0"))
        more_acks(producer, 50)
        validate_clients(cluster, TOPIC, producer)
        ok = True
    finally:
        if not ok or os.environ.get("KRAFTPY_SHOW_LOGS"):
            for n in cluster.state.nodes:
                print(f"\n----- {n.name}: {n.log}\n{launcher.log_tail(n.log, 40)}")
        cluster.down()


def test_a_rollback_before_finalizing_and_a_second_attempt(tmp_path: Path) -> None:
    """KIP-866 "Rollback to ZK": after the copy, with a topic created through KRaft (so only dual write
    put it in ZooKeeper), the controllers go, a broker becomes controller again, and the cluster serves
    in ZooKeeper mode; then the migration is tried again and finishes (field bug 23)."""
    require_real("java and Debian's zookeeper package", launcher.zookeeper_available())
    mark_test_run()
    work = tmp_path / "cluster"
    spec = ClusterSpec(brokers=2, dirs=2, zookeeper=True, broker_config=dict(FAST_BROKER_SETTINGS))
    cluster = LocalCluster.up(work, spec, timeout=120)
    ok = False

    def migrate(*args: str) -> str:
        run = run_kraftpy(
            "migrate", "--work-dir", str(work), "--timeout", STEP_TIMEOUT_S, *args, check=False, timeout=900
        )
        assert run.returncode == 0, run.stdout + run.stderr
        return run.stdout

    try:
        cluster.create_topic(TOPIC, 2, 2)
        for step in ("add-controllers", "roll-brokers-migration", "wait-migration"):
            migrate("--step", step, *(("--controllers", "1") if step == "add-controllers" else ()))
        cluster.create_topic("made-in-kraft", 2, 2)
        out = migrate("--rollback")
        assert "rollback: done" in out
        status = json.loads(run_kraftpy("cluster", "status", "--work-dir", str(work), "--json").stdout)
        assert status.get("migration") is None
        assert [n["role"] for n in status["controllers"]] == ["zookeeper"], "the KRaft controllers are gone"
        made = [p for p in status["partitions"] if p["topic"] == "made-in-kraft"]
        assert len(made) == 2 and all(p["leader"] in (1, 2) for p in made)
        producer = start_traffic(cluster, "made-in-kraft", tmp_path / "acks.txt")

        again = run_kraftpy(
            "migrate", "--work-dir", str(work), "--controllers", "1", "--timeout", STEP_TIMEOUT_S,
            check=False, timeout=900,
        )
        assert again.returncode == 0, again.stdout + again.stderr
        status = json.loads(run_kraftpy("cluster", "status", "--work-dir", str(work), "--json").stdout)
        assert status["migration"]["state"] == "POST_MIGRATION"
        more_acks(producer, 50)
        validate_clients(cluster, "made-in-kraft", producer)
        ok = True
    finally:
        if not ok or os.environ.get("KRAFTPY_SHOW_LOGS"):
            for n in cluster.state.nodes:
                print(f"\n----- {n.name}: {n.log}\n{launcher.log_tail(n.log, 40)}")
        cluster.down()
