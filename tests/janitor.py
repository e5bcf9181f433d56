"""Clear what crashed earlier test runs left: their kraftpy processes, disks and network namespaces.

Runs before the suite in CI (`python -m tests.janitor`). It takes only what carries a test-run marker
(KRAFTPY_TEST_RUN in a process's environment, a `test-run` file in a disk state dir, a netns marker;
see tools/cluster/launcher.py) and only when the run that wrote it is no longer running. A `kraftpy
cluster` someone has up is unmarked, and a test run in progress is alive: neither is touched.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable
from pathlib import Path

from tools.cluster import launcher, netns


def _own_lineage() -> set[int]:
    """This process and its ancestors: a janitor started from inside a dead run's leftover shell
    still must not kill itself."""
    pids = set()
    pid = os.getpid()
    while pid > 1 and pid not in pids:
        pids.add(pid)
        try:
            stat = Path(f"/proc/{pid}/stat").read_bytes()
            pid = int(stat[stat.rfind(b")") + 2 :].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return pids


def kill_stray_processes(alive: Callable[[str], bool] = launcher.owning_run_alive) -> list[int]:
    killed = []
    spared = _own_lineage()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) in spared:
            continue
        pid = int(proc.name)
        run_id = launcher.run_marker_of(pid)
        if run_id is None or alive(run_id):
            continue
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
    return killed


def cleanup_namespaces(alive: Callable[[str], bool] = launcher.owning_run_alive) -> list[str]:
    if os.geteuid() != 0:
        return []
    actions: list[str] = []
    dead = [prefix for prefix, run_id in netns.marked_prefixes().items() if not alive(run_id)]
    for prefix in dead:
        names = [
            n
            for n in netns.list_namespaces()
            if n == netns.switch_name(prefix) or n.startswith(f"{prefix}-n")
        ]
        actions += netns.kill_processes_in(names)
        actions += netns.destroy(prefix)
    # The route guards every multi-host cluster; it goes only when no switch namespace is left.
    if dead and netns.remove_blackhole_route():
        actions.append(f"blackhole route {netns.SUBNET} removed")
    return actions


def cleanup_disks(alive: Callable[[str], bool] = launcher.owning_run_alive) -> list[str]:
    from tools.disk import cleanup_leftovers
    from tools.disk.janitor import marked_state_dirs

    actions: list[str] = []
    for state_dir, run_id in marked_state_dirs().items():
        if not alive(run_id):
            actions += cleanup_leftovers(state_dir)
    return actions


def main(alive: Callable[[str], bool] = launcher.owning_run_alive) -> None:
    killed = kill_stray_processes(alive)
    if killed:
        print(f"janitor: killed leftover test processes {killed}")
    # Namespaces first: their processes may hold the disks' mounts.
    for what in (*cleanup_namespaces(alive), *cleanup_disks(alive)):
        print(f"janitor: {what}")


if __name__ == "__main__":
    main()
