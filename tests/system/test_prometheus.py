"""A real Prometheus (Debian's package) scrapes a local cluster with the configuration `kraftpy cluster
prometheus-config` prints: the alert rules pass promtool, every query of the Grafana dashboard returns
series from the live cluster, and a failed log dir makes KafkaOfflineLogDirectory fire through
Prometheus's API."""

from __future__ import annotations

import json
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import have, require_real
from tests.support.processes import run_kraftpy
from tools.cluster.cluster import LocalCluster
from tools.cluster.launcher import ProcessSet, free_port
from tools.cluster.prometheus import ALERT_RULES
from tools.cluster.spec import ClusterSpec

pytestmark = [pytest.mark.system, pytest.mark.slow, pytest.mark.real]

REPO = Path(__file__).resolve().parents[2]
DASHBOARD = REPO / "ops" / "grafana" / "kraftpy-jbod.json"


def _api(base: str, path: str, **params: str) -> Any:
    url = f"{base}/api/v1/{path}"
    if params:
        url += "?" + urllib.parse.urlencode(params)
    with urllib.request.urlopen(url, timeout=5) as r:
        body = json.load(r)
    assert body["status"] == "success", body
    return body["data"]


def _until(what: str, check: Any, timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        try:
            got = check()
        except OSError:
            got = None
        if got:
            return got
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.5)


def _dashboard_queries() -> list[str]:
    dash = json.loads(DASHBOARD.read_text())
    return [t["expr"] for p in dash["panels"] for t in p["targets"]]


def test_the_alert_rules_pass_promtool() -> None:
    require_real("promtool (Debian's prometheus package)", have("promtool"))
    out = subprocess.run(["promtool", "check", "rules", str(ALERT_RULES)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "SUCCESS: 6 rules found" in out.stdout


def test_prometheus_scrapes_the_cluster_and_fires_on_a_failed_dir(tmp_path: Path) -> None:
    require_real("prometheus (Debian's package)", have("prometheus"))
    work = tmp_path / "cluster"
    procs = ProcessSet(tmp_path)
    cluster = LocalCluster.up(work, ClusterSpec(brokers=2, dirs=2), timeout=120)
    try:
        cluster.create_topic("watched", 4, 2)
        bad = run_kraftpy(
            "cluster", "prometheus-config", "--interval", "soon", "--work-dir", str(work), check=False
        )
        assert bad.returncode == 2 and "--interval must be a Prometheus duration" in bad.stderr
        config = tmp_path / "prometheus.yml"
        config.write_text(
            run_kraftpy("cluster", "prometheus-config", "--interval", "1s", "--work-dir", str(work)).stdout
        )
        port = free_port()
        procs.start(
            "prometheus",
            [
                "prometheus",
                f"--config.file={config}",
                f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
        )
        base = f"http://127.0.0.1:{port}"

        nodes = len(json.loads(config.read_text())["scrape_configs"][0]["static_configs"])
        assert nodes == len(cluster.controllers) + 2

        def all_up() -> bool:
            active = _api(base, "targets")["activeTargets"]
            return len(active) == nodes and all(t["health"] == "up" for t in active)

        _until("every node scraped", all_up)

        def without_series() -> list[str]:
            return [q for q in _dashboard_queries() if not _api(base, "query", query=q)["result"]]

        # rate() has series once two scrapes fall inside its window.
        _until("every dashboard query to return series", lambda: not without_series())
        assert without_series() == []
        assert (
            _api(base, "query", query="sum(kafka_controller_kafkacontroller_activecontrollercount)")[
                "result"
            ][0]["value"][1]
            == "1"
        )

        def firing() -> list[dict[str, Any]]:
            return [
                a
                for a in _api(base, "alerts")["alerts"]
                if a["labels"]["alertname"] == "KafkaOfflineLogDirectory" and a["state"] == "firing"
            ]

        assert not firing()
        cluster.fail_dir(1, 0)
        alerts = _until("KafkaOfflineLogDirectory firing", firing)
        assert [a["labels"]["node"] for a in alerts] == ["broker-1"]
        names = {a["labels"]["alertname"] for a in _api(base, "alerts")["alerts"]}
        assert "KafkaNoActiveController" not in names
    finally:
        procs.stop_all()
        cluster.down()
