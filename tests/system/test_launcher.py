"""The launcher's promises about lifetimes: what a test or benchmark starts dies with it, what
`kraftpy cluster up` starts outlives it and is stopped later by PID and start time."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from tools.cluster import launcher

REPO = Path(__file__).resolve().parents[2]

# A parent that starts `sleep` through the launcher, reports (pid, start time) and waits to be killed.
PARENT = """
import sys, time
from pathlib import Path
from tools.cluster.launcher import ProcessSet, spawn
work = Path(sys.argv[1])
if sys.argv[2] == "set":
    proc = ProcessSet(work).start("sleeper", ["sleep", "600"])
else:
    proc = spawn(["sleep", "600"], work / "sleeper.log")
print(proc.pid, proc.start_time, flush=True)
time.sleep(600)
"""


def start_parent(tmp_path: Path, how: str) -> tuple[subprocess.Popen[str], int, int]:
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, str(tmp_path), how], cwd=REPO, stdout=subprocess.PIPE, text=True
    )
    assert parent.stdout is not None
    pid, start = (int(x) for x in parent.stdout.readline().split())
    assert launcher.is_running(pid, start)
    return parent, pid, start


def test_a_process_set_dies_with_the_process_that_started_it(tmp_path: Path) -> None:
    parent, pid, start = start_parent(tmp_path, "set")
    parent.kill()  # no finalizer runs: only the kernel can end the child now
    parent.wait()
    assert launcher.wait_gone(pid, start, 10.0), "the child outlived its killed parent"


def test_a_cluster_node_outlives_its_starter_and_stops_by_pid(tmp_path: Path) -> None:
    parent, pid, start = start_parent(tmp_path, "spawn")
    try:
        parent.kill()
        parent.wait()
        time.sleep(0.5)
        assert launcher.is_running(pid, start), "a node died with the command that started it"
    finally:
        how = launcher.stop(pid, start, timeout=5.0)
    assert how == "terminated"
    assert not launcher.is_running(pid, start)
