"""`kraftpy-broker` startup refusals, a bad dir at startup, and SIGTERM, with plain directories."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.broker_process.cluster import Cluster, wait_until
from tests.broker_process.conftest import dir_id
from tests.support.processes import broker_command

B = 2


def run_broker(config: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        broker_command(config), capture_output=True, text=True, timeout=timeout, check=False
    )


def test_config_errors_are_one_line_without_traceback(tmp_path: Path) -> None:
    cfg = tmp_path / "bad.properties"
    cfg.write_text("process.roles=controller\nnode.id=1\ncontroller.listener.names=CONTROLLER\n")
    proc = run_broker(cfg)
    assert proc.returncode == 2
    assert "kraftpy-broker needs the broker role" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_unformatted_dir_refuses_to_start_naming_it(cluster: Cluster, tmp_path: Path) -> None:
    logs = [tmp_path / "l1", tmp_path / "l2"]
    node = cluster.add_broker(B, logs)
    shutil.rmtree(logs[1])
    logs[1].mkdir()
    proc = run_broker(node.config)
    assert proc.returncode == 1
    assert str(logs[1]) in proc.stderr and "meta.properties" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_duplicate_directory_ids_refuse_to_start(cluster: Cluster, tmp_path: Path) -> None:
    logs = [tmp_path / "l1", tmp_path / "l2"]
    node = cluster.add_broker(B, logs)
    shutil.copy(logs[0] / "meta.properties", logs[1] / "meta.properties")
    proc = run_broker(node.config)
    assert proc.returncode == 1
    assert "Duplicate directory ID" in proc.stderr and str(logs[1]) in proc.stderr
    assert "Traceback" not in proc.stderr


def test_no_usable_log_dir_exits_naming_each(cluster: Cluster, tmp_path: Path) -> None:
    logs = [tmp_path / "l1", tmp_path / "l2"]
    node = cluster.add_broker(B, logs)
    for d in logs:
        (d / "meta.properties").write_text("version=9\n")  # unknown version: unreadable
    proc = run_broker(node.config)
    assert proc.returncode == 1
    assert "no usable log dir" in proc.stderr
    assert str(logs[0]) in proc.stderr and str(logs[1]) in proc.stderr


def test_unusable_metadata_dir_exits_naming_it(cluster: Cluster, tmp_path: Path) -> None:
    node = cluster.add_broker(B, [tmp_path / "l1", tmp_path / "l2"])
    (node.metadata_dir / "meta.properties").write_text("version=7\n")
    proc = run_broker(node.config)
    assert proc.returncode == 1
    assert str(node.metadata_dir) in proc.stderr
    assert "Traceback" not in proc.stderr


def test_bad_dir_at_startup_is_offline_and_not_registered(cluster: Cluster, tmp_path: Path) -> None:
    """KIP-112 "broker bootstraps with bad log directories"."""
    logs = [tmp_path / "l1", tmp_path / "l2", tmp_path / "l3"]
    cluster.add_broker(B, logs)
    ids = [dir_id(d) for d in logs]
    (logs[1] / "meta.properties").write_text("version=1\ncluster.id=\n")  # unreadable as meta.properties
    cluster.start_controller()
    cluster.start_broker(B)
    health = cluster.wait_running(B)
    assert str(logs[1]) in health["dirs"]["offline"]
    reg = cluster.image().cluster.brokers[B]
    assert sorted(reg.directories) == sorted([ids[0], ids[2]])
    metrics = cluster.brokers[B].metrics()
    assert "kafka_log_logmanager_offlinelogdirectorycount 1.0" in metrics
    assert (
        f'kafka_log_logmanager_logdirectoryoffline{{directory_id="",logDirectory="{logs[1]}"}} 1.0' in metrics
    )


def test_sigterm_runs_a_controlled_shutdown(cluster: Cluster, tmp_path: Path) -> None:
    logs = [tmp_path / "l1", tmp_path / "l2"]
    cluster.add_broker(B, logs)
    cluster.start_controller()
    cluster.start_broker(B)
    cluster.wait_running(B)
    cluster.create_topic("t", [[B]] * 2)
    wait_until(
        "B leading",
        lambda: all(p.leader == B for p in cluster.image().topics.get_topic("t").partitions.values()),
    )
    assert cluster.stop_broker(B) == 0
    records = cluster.records()
    assert any(
        r.name == "BrokerRegistrationChangeRecord"
        and r.record.BrokerId == B
        and r.record.InControlledShutdown == 1
        for r in records
    )
    assert all(p.leader == -1 for p in cluster.image().topics.get_topic("t").partitions.values())
    proc = cluster.brokers[B].proc
    assert proc is not None and "controlled shutdown complete" in proc.log_text()


def test_single_dir_broker_sharing_its_dir_with_the_metadata_log(cluster: Cluster, tmp_path: Path) -> None:
    """One log dir, also the metadata.log.dir: replicas are placed by the controller, nothing to report."""
    only = tmp_path / "only"
    cluster.add_broker(B, [only], metadata_dir=only)
    cluster.start_controller()
    cluster.start_broker(B)
    cluster.wait_running(B)
    cluster.create_topic("solo", [[B]] * 3)
    node = cluster.brokers[B]
    health = wait_until(
        "three replicas hosted", lambda: h if (h := node.health())["replicas"].get("replicas") == 3 else None
    )
    assert health["assign_replicas_to_dirs_requests"] == 0
    # Logs are created when their partition is first served, which may come just after the plan.
    created = wait_until(
        "three partition dirs created",
        lambda: (
            names
            if len(names := sorted(p.name for p in only.iterdir() if p.name.startswith("solo-"))) == 3
            else None
        ),
    )
    assert created == ["solo-0", "solo-1", "solo-2"]
    assert (only / "__cluster_metadata-0").is_dir()
    assert all(p.leader == B for p in cluster.image().topics.get_topic("solo").partitions.values())


def test_an_ssl_listener_without_a_keystore_refuses_to_start(cluster: Cluster, tmp_path: Path) -> None:
    node = cluster.add_broker(B, [tmp_path / "l1"])
    text = node.config.read_text()
    lines = [
        line + ",SSL://127.0.0.1:0"
        if line.startswith("listeners=")
        else line + ",SSL:SSL"
        if line.startswith("listener.security.protocol.map=")
        else line
        for line in text.splitlines()
    ]
    node.config.write_text("\n".join(lines) + "\n")
    proc = run_broker(node.config)
    # A config error: found when the file is read, before anything is opened.
    assert proc.returncode == 2
    assert "listener SSL is SSL but ssl.keystore.location is not set" in proc.stderr
    assert "Traceback" not in proc.stderr
