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

SPARK_ENV = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}


def run_demo(work: Path, *args: str, timeout: float, env: dict[str, str] | None = None) -> tuple[str, str]:
    """`kraftpy demo ARGS --work-dir WORK`, which must exit 0: (stdout, stdout + stderr)."""
    proc = subprocess.run(
        kraftpy_command("demo", *args, "--work-dir", str(work)),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        check=False,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-6000:]
    return proc.stdout, out


def report_named(stdout: str, out: str) -> Path:
    m = re.search(r"^report: (\S+)$", stdout, re.MULTILINE)
    assert m, out[-3000:]
    return Path(m.group(1))


def nothing_mounted_under(work: Path) -> bool:
    return str(work) not in Path("/proc/mounts").read_text()


def nothing_running_from(work: Path) -> bool:
    return str(work) not in subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout


def require_real_disks_and_java() -> None:
    require_real("root with loop devices (the demo on real disks)", real_disks_available() is None)
    require_real("java (Spark)", subprocess.run(["which", "java"], capture_output=True).returncode == 0)


def test_demo_runs_to_the_end_and_writes_its_report(tmp_path: Path) -> None:
    require_real_disks_and_java()
    work = tmp_path / "demo"
    stdout, out = run_demo(work, timeout=1200, env=SPARK_ENV)
    assert "real loop-device disks" in out
    assert "read back exactly once" in out
    report = report_named(stdout, out)
    assert report.is_file() and report.stat().st_size > 0
    assert report.read_text(errors="replace").lstrip().lower().startswith(("<!doctype html", "<html"))
    # Nothing left behind: no process of its cluster, no mount or loop device under its work dir.
    assert nothing_mounted_under(work)
    loops = subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout
    assert str(work) not in loops
    assert nothing_running_from(work)


def test_the_zookeeper_mode_demo_runs_to_the_end_and_leaves_nothing_behind(tmp_path: Path) -> None:
    from tools.cluster.launcher import zookeeper_available

    require_real("ZooKeeper (java and Debian's zookeeper package)", zookeeper_available())
    work = tmp_path / "demo-zk"
    _, out = run_demo(work, "--zookeeper", "--plain-dirs", "--no-live", timeout=600)
    assert "read back exactly once" in out
    assert "offline replicas known to the ZooKeeper-mode controller" in out
    assert nothing_running_from(work)


def test_the_migration_demo_runs_to_the_end_and_names_its_report(tmp_path: Path) -> None:
    """`kraftpy demo --story migration`: ZooKeeper to KRaft under load with a disk failing midway,
    then the Spark report of the controllers' metadata log, which tells the migration."""
    require_real_disks_and_java()
    work = tmp_path / "demo-migration"
    stdout, out = run_demo(work, "--story", "migration", "--no-live", timeout=1200, env=SPARK_ENV)
    assert "read back exactly once" in out
    assert "the broker halted, as a migrating broker does" in out
    assert "Spark: migration finalized" in out and "every replica on a real directory" in out
    report = report_named(stdout, out).read_text(errors="replace")
    assert "<h2>ZooKeeper migration</h2>" in report
    assert nothing_mounted_under(work)
    assert nothing_running_from(work)


def test_the_secure_demo_runs_to_the_end_and_leaves_nothing_behind(tmp_path: Path) -> None:
    work = tmp_path / "demo-secure"
    _, out = run_demo(work, "--secure", "--plain-dirs", "--no-analysis", "--no-live", timeout=600)
    assert "secure: TLS between nodes" in out
    assert "read back exactly once" in out
    assert nothing_running_from(work)
