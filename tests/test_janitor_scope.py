"""The CI janitor ends only what dead test runs left behind: a `kraftpy cluster` someone has up, and
anything unmarked or owned by a run still in progress, survive it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import tests.janitor as janitor
from tools.cluster import launcher
from tools.cluster.cluster import LocalCluster

REPO = Path(__file__).resolve().parents[1]

# A test run that starts `sleep` through the launcher and then dies without its finalizers.
CRASHED_RUN = """
import sys
from pathlib import Path
from tools.cluster.launcher import ProcessSet
proc = ProcessSet(Path(sys.argv[1]), die_with_parent=False).start("leftover", ["sleep", "600"])
print(proc.pid, proc.start_time, flush=True)
"""


def _env_outside_any_test_run() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != launcher.TEST_RUN_ENV}


def _leftover_of_a_crashed_run(work: Path) -> tuple[int, int]:
    out = subprocess.run(
        [sys.executable, "-c", CRASHED_RUN, str(work)],
        cwd=REPO,
        env=_env_outside_any_test_run(),
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    pid, start = (int(x) for x in out.split())
    assert launcher.is_running(pid, start)
    return pid, start


def _wait_gone(pid: int, start: int) -> bool:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if launcher.proc_start_time(pid) != start:
            return True
        time.sleep(0.05)
    return False


def test_run_markers_name_the_owning_run_and_only_a_dead_owner_releases(tmp_path: Path) -> None:
    pid, start = _leftover_of_a_crashed_run(tmp_path)
    try:
        run_id = launcher.run_marker_of(pid)
        assert run_id is not None and run_id != os.environ.get(launcher.TEST_RUN_ENV)
        assert not launcher.owning_run_alive(run_id)
        assert launcher.owning_run_alive(launcher.mark_test_run())
        assert launcher.owning_run_alive("not-an-id")
        # Only this one leftover may go: every other marked process counts as a live run's here.
        assert janitor.kill_stray_processes(alive=lambda rid: rid != run_id) == [pid]
        assert _wait_gone(pid, start)
    finally:
        launcher.kill(pid, start)


@pytest.mark.slow
def test_janitor_leaves_a_running_cluster_alone_and_ends_a_dead_runs_process(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    work = tmp_path / "cluster"
    env = _env_outside_any_test_run()
    up = subprocess.run(
        launcher.kraftpy_command(
            "cluster", "up", "--work-dir", str(work), "--brokers", "1", "--dirs", "2", "--controllers", "1"
        ),
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        nodes = [(r.pid, r.start_time) for r in LocalCluster(work).state.processes.values()]
        assert len(nodes) == 2
        assert all(launcher.run_marker_of(pid) is None for pid, _ in nodes)
        pid, start = _leftover_of_a_crashed_run(tmp_path / "crashed")

        # The janitor as CI runs it, except that only this test's leftover counts as a dead run's:
        # leftovers of other people's crashed runs on a shared machine are not this test's to end.
        dead = launcher.run_marker_of(pid)
        janitor.main(alive=lambda run_id: run_id != dead)
        out = capsys.readouterr()
        assert _wait_gone(pid, start), out.out + out.err
        assert f"{pid}" in out.out
        assert all(launcher.is_running(p, s) for p, s in nodes), out.out
        status = subprocess.run(
            launcher.kraftpy_command("cluster", "status", "--work-dir", str(work)),
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert status.returncode == 0, status.stdout + status.stderr
    finally:
        subprocess.run(
            launcher.kraftpy_command("cluster", "down", "--work-dir", str(work)),
            env=env,
            capture_output=True,
            timeout=120,
            check=False,
        )


def test_only_marked_namespaces_of_a_dead_run_are_deleted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tools.cluster import netns

    existing: set[str] = set()
    calls: list[tuple[str, ...]] = []

    def fake_ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        calls.append(args)
        if args[:2] == ("netns", "add"):
            existing.add(args[2])
        elif args[:2] == ("netns", "del"):
            existing.discard(args[2])
        return subprocess.CompletedProcess(["ip", *args], 0, "", "")

    monkeypatch.setattr(netns, "_ip", fake_ip)
    monkeypatch.setattr(netns, "TEST_MARKER_DIR", str(tmp_path / "markers"))
    monkeypatch.setattr(netns, "list_namespaces", lambda: sorted(existing))
    monkeypatch.setattr(netns, "remove_blackhole_route", lambda own_prefix=None: False)
    monkeypatch.setattr(os, "geteuid", lambda: 0)

    monkeypatch.delenv(launcher.TEST_RUN_ENV, raising=False)
    netns.create("kp0000aa", 1)
    monkeypatch.setenv(launcher.TEST_RUN_ENV, "4194305.1")
    netns.create("kp0000bb", 1)
    assert netns.marked_prefixes() == {"kp0000bb": "4194305.1"}

    janitor.cleanup_namespaces(alive=lambda run_id: run_id != "4194305.1")
    assert existing == {"kp0000aa-sw", "kp0000aa-n1"}
    assert netns.marked_prefixes() == {}
