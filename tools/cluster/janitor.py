"""Remove what a crashed multi-host cluster left: its namespaces (and the processes in them) and the
blackhole route. Scoped to kraftpy's own names (`kp` + 6 hex digits + `-sw` / `-n<i>`), for a CI
janitor to run before a test suite; a cluster that is still up in another session would be taken
down with it, so never run it beside one.
"""

from __future__ import annotations

import os
import re
import subprocess

from tools.cluster import netns

OUR_NAMESPACE = re.compile(r"^kp[0-9a-f]{6}-(sw|n\d+)$")


def stale_namespaces() -> list[str]:
    return [ns for ns in netns.list_namespaces() if OUR_NAMESPACE.match(ns)]


def cleanup_leftovers() -> list[str]:
    if os.geteuid() != 0:
        return []
    actions: list[str] = []
    names = stale_namespaces()
    actions += netns.kill_processes_in(names)
    for ns in names:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)
        actions.append(f"namespace {ns} deleted")
    if netns.remove_blackhole_route():
        actions.append(f"blackhole route {netns.SUBNET} removed")
    return actions


if __name__ == "__main__":
    for line in cleanup_leftovers():
        print(f"cluster janitor: {line}")
