"""Restart policy `on-failure`: a small detached process that restarts nodes that died on their own.

`kraftpy cluster up --restart on-failure` starts it; `down` stops it first. A node stopped on
purpose (`desired: stopped` in cluster.json) is left alone. It exits when the cluster is going down
or its state file is gone.
"""

from __future__ import annotations

import sys
import time

from tools.cluster import launcher
from tools.cluster.errors import ClusterError

BACKOFF_S = 1.0


def watch(work_dir: str, interval: float = 0.5) -> int:
    from tools.cluster.cluster import LocalCluster

    cluster = LocalCluster(work_dir)
    last_restart: dict[str, float] = {}
    while True:
        try:
            st = cluster.state
        except ClusterError:
            return 0
        if st.phase == "stopping":
            return 0
        if st.phase == "up":
            for name, rec in st.processes.items():
                if rec.desired != "running" or launcher.is_running(rec.pid, rec.start_time):
                    continue
                if time.monotonic() - last_restart.get(name, 0.0) < BACKOFF_S:
                    continue
                last_restart[name] = time.monotonic()
                print(f"{time.strftime('%H:%M:%S')} {name} (pid {rec.pid}) is gone; restarting", flush=True)
                try:
                    cluster.start_node(name)
                except ClusterError as e:
                    print(f"restart of {name} failed: {e}", flush=True)
        time.sleep(interval)


if __name__ == "__main__":
    sys.exit(watch(sys.argv[1]))
