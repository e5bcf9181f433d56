"""Clear what a crashed earlier test run may have left: kraftpy processes, mounts, loop devices.

Runs before the suite in CI (`python -m tests.janitor`); scoped to kraftpy's own names so it never
touches anything else on the machine.
"""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

PROCESS_MARKERS = (b"kraftpy-controller", b"kraftpy-broker", b"controller.main", b"broker.main")


def kill_stray_processes() -> list[int]:
    killed = []
    me = os.getpid()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == me:
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        if any(m in cmdline for m in PROCESS_MARKERS):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(int(proc.name), signal.SIGKILL)
                killed.append(int(proc.name))
    return killed


def main() -> None:
    killed = kill_stray_processes()
    if killed:
        print(f"janitor: killed stray kraftpy processes {killed}")
    # Namespaces and the blackhole route of a crashed multi-host cluster, then loop devices and mounts.
    from tools.cluster.janitor import cleanup_leftovers as cleanup_cluster
    from tools.disk import cleanup_leftovers as cleanup_disks

    for what in (*cleanup_cluster(), *cleanup_disks()):
        print(f"janitor: {what}")


if __name__ == "__main__":
    main()
