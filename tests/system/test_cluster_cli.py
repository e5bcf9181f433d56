"""`kraftpy cluster up|status|fail|heal|down` in its embedded default: plain directories, no root needed.
Also the restart policy, and that `down` leaves no process behind."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.processes import run_kraftpy
from tools.cluster import launcher
from tools.cluster.cluster import LocalCluster
from tools.cluster.spec import ClusterSpec

pytestmark = [pytest.mark.system, pytest.mark.slow]


def _status(work: Path) -> dict[str, Any]:
    return json.loads(run_kraftpy("cluster", "status", "--work-dir", str(work), "--json").stdout)


def _pids(state: dict[str, Any]) -> list[int]:
    return [n["pid"] for n in (state["controller"], *state["brokers"]) if n["pid"]]


def test_cluster_cli_on_plain_dirs(tmp_path: Path) -> None:
    work = tmp_path / "cluster"
    try:
        up = run_kraftpy(
            "cluster", "up", "--work-dir", str(work), "--brokers", "2", "--dirs", "2", timeout=240
        )
        assert "healthy and unfenced" in up.stdout and "bootstrap servers: 127.0.0.1:" in up.stdout
        again = run_kraftpy("cluster", "up", "--work-dir", str(work), check=False)
        assert again.returncode == 2 and "already exists" in again.stderr

        st = _status(work)
        assert st["mode"] == "local, plain dirs"
        assert st["controller"]["process"] == "running" and st["controller"]["healthy"]
        assert [(b["node_id"], b["state"], b["online_dirs"]) for b in st["brokers"]] == [
            (1, "unfenced", 2),
            (2, "unfenced", 2),
        ]
        assert len(st["dirs"]) == 4 and all(d["status"] == "online" and d["directory_id"] for d in st["dirs"])
        assert len({d["directory_id"] for d in st["dirs"]}) == 4
        props = (work / "config" / "broker-1.properties").read_text()
        assert "log.dirs=" in props and "metadata.log.dir=" in props and "process.roles=broker" in props

        out = run_kraftpy("cluster", "fail", "1", "0", "--work-dir", str(work)).stdout
        assert "ENOTDIR" in out
        deadline = time.monotonic() + 60
        while True:
            st = _status(work)
            d = next(d for d in st["dirs"] if d["label"] == "b1/d0")
            if d["status"] == "offline":
                break
            assert time.monotonic() < deadline, d
            time.sleep(0.5)
        assert d["fault"] == "failed"
        assert next(b for b in st["brokers"] if b["node_id"] == 1)["online_dirs"] == 1
        bad = run_kraftpy("cluster", "fail", "1", "0", "--how", "fill", "--work-dir", str(work), check=False)
        assert bad.returncode == 2 and "real disk" in bad.stderr

        run_kraftpy("cluster", "stop", "1", "--work-dir", str(work))
        healed = run_kraftpy("cluster", "heal", "1", "0", "--work-dir", str(work)).stdout
        assert "restored" in healed
        # What is left to do is said plainly: here, start the stopped broker.
        assert "broker 1 is not running" in healed and "kraftpy cluster start 1" in healed
        run_kraftpy("cluster", "start", "1", "--work-dir", str(work), timeout=120)
        text = run_kraftpy("cluster", "status", "--work-dir", str(work)).stdout
        assert "broker 1" in text and "log dirs" in text

        # Healed under a running broker: the dir stays offline there until a restart, as in Kafka.
        run_kraftpy("cluster", "fail", "2", "1", "--work-dir", str(work))
        healed = run_kraftpy("cluster", "heal", "2", "1", "--work-dir", str(work)).stdout
        assert "restored" in healed and "keeps this dir offline until it restarts" in healed
        assert "kraftpy cluster stop 2" in healed and "kraftpy cluster start 2" in healed
    finally:
        pids = []
        if (work / "cluster.json").exists():
            pids = _pids(_status(work))
        down = run_kraftpy("cluster", "down", "--work-dir", str(work), timeout=120)
    assert "is down" in down.stdout
    assert not (work / "cluster.json").exists()
    for pid in pids:
        assert launcher.proc_start_time(pid) is None, f"pid {pid} still running after down"
    assert "nothing to do" in run_kraftpy("cluster", "down", "--work-dir", str(work)).stdout
    gone = run_kraftpy("cluster", "status", "--work-dir", str(work), check=False)
    assert gone.returncode == 2 and "no cluster" in gone.stderr


def test_restart_policy_brings_a_killed_broker_back(tmp_path: Path) -> None:
    cluster = LocalCluster.up(
        tmp_path / "cluster", ClusterSpec(brokers=1, dirs=1, restart="on-failure"), timeout=120
    )
    try:
        rec = cluster.state.processes["broker-1"]
        os.kill(rec.pid, signal.SIGKILL)
        deadline = time.monotonic() + 60
        while True:
            new = cluster.state.processes["broker-1"]
            if new.pid != rec.pid and launcher.is_running(new.pid, new.start_time):
                break
            assert time.monotonic() < deadline, "the watcher did not restart the killed broker"
            time.sleep(0.2)
        assert new.restarts == 1
        cluster.wait_unfenced([1], 60)
        # A broker stopped on purpose stays stopped.
        cluster.stop_broker(1)
        time.sleep(2)
        assert not cluster.is_running("broker-1")
        watcher = cluster.state.supervisor_pid
        assert watcher is not None
    finally:
        cluster.down()
    assert launcher.proc_start_time(watcher) is None
