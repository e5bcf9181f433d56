"""The README's main command: `kraftpy demo` runs to the end, exits 0, names its HTML report, and the
report exists. It also leaves nothing running or mounted behind."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import require_real
from tests.support.processes import REPO, kraftpy_command
from tools.cluster.disks import real_disks_available

pytestmark = [pytest.mark.system, pytest.mark.real, pytest.mark.spark, pytest.mark.slow]


def test_demo_runs_to_the_end_and_writes_its_report(tmp_path: Path) -> None:
    require_real("root with loop devices (the demo on real disks)", real_disks_available() is None)
    require_real("java (Spark)", subprocess.run(["which", "java"], capture_output=True).returncode == 0)
    work = tmp_path / "demo"
    proc = subprocess.run(
        kraftpy_command("demo", "--work-dir", str(work)),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=1200,
        env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"},
        check=False,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-6000:]
    assert "real loop-device disks" in out
    assert "read back exactly once" in out
    m = re.search(r"^report: (\S+)$", proc.stdout, re.MULTILINE)
    assert m, out[-3000:]
    report = Path(m.group(1))
    assert report.is_file() and report.stat().st_size > 0
    assert report.read_text(errors="replace").lstrip().lower().startswith(("<!doctype html", "<html"))
    # Nothing left behind: no process of its cluster, no mount or loop device under its work dir.
    mounts = Path("/proc/mounts").read_text()
    assert str(work) not in mounts
    loops = subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout
    assert str(work) not in loops
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert str(work) not in ps


def test_the_zookeeper_mode_demo_runs_to_the_end_and_leaves_nothing_behind(tmp_path: Path) -> None:
    from tools.cluster.launcher import zookeeper_available

    require_real("ZooKeeper (java and Debian's zookeeper package)", zookeeper_available())
    work = tmp_path / "demo-zk"
    proc = subprocess.run(
        kraftpy_command("demo", "--zookeeper", "--plain-dirs", "--no-live", "--work-dir", str(work)),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-6000:]
    assert "read back exactly once" in out
    assert "offline replicas known to the ZooKeeper-mode controller" in out
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert str(work) not in ps


def test_the_migration_demo_runs_to_the_end_and_names_its_report(tmp_path: Path) -> None:
    """`kraftpy demo --story migration`: ZooKeeper to KRaft under load with a disk failing midway,
    then the Spark report of the controllers' metadata log, which tells the migration."""
    require_real("root with loop devices (the demo on real disks)", real_disks_available() is None)
    require_real("java (Spark)", subprocess.run(["which", "java"], capture_output=True).returncode == 0)
    work = tmp_path / "demo-migration"
    proc = subprocess.run(
        kraftpy_command("demo", "--story", "migration", "--no-live", "--work-dir", str(work)),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=1200,
        env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"},
        check=False,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-6000:]
    assert "read back exactly once" in out
    assert "the broker halted, as a migrating broker does" in out
    assert "Spark: migration finalized" in out and "every replica on a real directory" in out
    m = re.search(r"^report: (\S+)$", proc.stdout, re.MULTILINE)
    assert m, out[-3000:]
    report = Path(m.group(1)).read_text(errors="replace")
    assert "<h2>ZooKeeper migration</h2>" in report
    mounts = Path("/proc/mounts").read_text()
    assert str(work) not in mounts
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert str(work) not in ps


def test_the_secure_demo_runs_to_the_end_and_leaves_nothing_behind(tmp_path: Path) -> None:
    work = tmp_path / "demo-secure"
    proc = subprocess.run(
        kraftpy_command(
            "demo", "--secure", "--plain-dirs", "--no-analysis", "--no-live", "--work-dir", str(work)
        ),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-6000:]
    assert "secure: TLS between nodes" in out
    assert "read back exactly once" in out
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert str(work) not in ps
