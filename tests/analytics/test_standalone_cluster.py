"""The same job, unchanged, on a Spark standalone cluster: a master and two workers on 127.0.0.1.

The cluster comes from the pyspark package itself (`bin/spark-class`), the job goes in through
`spark-submit tools/analytics/job.py`, and the executors on the workers get our code from the
zip the driver ships. Every process started here is stopped by its process group at the end.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest

from tests.analytics.conftest import table
from tests.support.processes import free_ports
from tools.analytics.job import SUMMARY_FILE
from tools.analytics.session import QUICK_JVM_OPTIONS, driver_java_options
from tools.analytics.synthetic import write_dir_failure_log

pytestmark = [pytest.mark.spark, pytest.mark.real, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
START_TIMEOUT = 180.0
PR_SET_PDEATHSIG = 1


class StandaloneCluster:
    def __init__(self, root: Path) -> None:
        import pyspark

        self.root = root
        self.spark_home = Path(pyspark.__file__).parent
        self.port, master_ui, ui1, ui2 = free_ports(4)
        self.url = f"spark://127.0.0.1:{self.port}"
        self.ui_ports = (master_ui, ui1, ui2)
        self.procs: list[tuple[subprocess.Popen[bytes], IO[bytes]]] = []
        self.env = {
            **os.environ,
            "SPARK_HOME": str(self.spark_home),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_LOG_DIR": str(root / "logs"),
            "PYSPARK_PYTHON": sys.executable,
            "PYSPARK_DRIVER_PYTHON": sys.executable,
            # No REST submission server: its fixed port (6066) would clash between clusters.
            "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
            "SPARK_DAEMON_JAVA_OPTS": QUICK_JVM_OPTIONS,
        }

    def _start(self, name: str, *args: str) -> Path:
        log_path = self.root / f"{name}.log"
        log = log_path.open("wb")
        proc = subprocess.Popen(
            [str(self.spark_home / "bin" / "spark-class"), *args],
            env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        self.procs.append((proc, log))
        return log_path

    def start(self) -> None:
        master_log = self._start(
            "master", "org.apache.spark.deploy.master.Master",
            "--host", "127.0.0.1", "--port", str(self.port), "--webui-port", str(self.ui_ports[0]),
        )
        self._wait(lambda: _accepts(self.port), "the master to listen", master_log)
        for i in (1, 2):
            work = self.root / f"worker{i}"
            work.mkdir()
            self._start(
                f"worker{i}", "org.apache.spark.deploy.worker.Worker", self.url,
                "--host", "127.0.0.1", "--cores", "1", "--memory", "1g",
                "--webui-port", str(self.ui_ports[i]), "--work-dir", str(work),
            )
        self._wait(lambda: master_log.read_text(errors="replace").count("Registering worker") >= 2,
                   "two workers to register", master_log)

    def _wait(self, ready: Any, what: str, log: Path) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while not ready():
            for proc, _ in self.procs:
                if proc.poll() is not None:
                    pytest.fail(f"a Spark process exited while waiting for {what}:\n{log.read_text()[-3000:]}")
            if time.monotonic() > deadline:
                pytest.fail(f"timed out waiting for {what}:\n{log.read_text()[-3000:]}")
            time.sleep(0.5)

    def stop(self) -> None:
        for proc, _ in reversed(self.procs):  # workers first, then the master
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc, log in self.procs:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
            log.close()

    def leftovers(self) -> list[str]:
        """Processes still alive that belong to this cluster (their command line names its dirs or port)."""
        marks = (str(self.root).encode(), f"127.0.0.1:{self.port}".encode())
        found = []
        for p in Path("/proc").iterdir():
            if not p.name.isdigit():
                continue
            try:
                cmd = (p / "cmdline").read_bytes()
            except OSError:
                continue
            if any(m in cmd for m in marks):
                found.append(f"{p.name}: {cmd[:200]!r}")
        return found


def _die_with_parent() -> None:
    """In the child before exec: get SIGTERM if the test process dies without its finalizers running
    (killed, or timed out hard), so no master or worker outlives the run."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def _accepts(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture
def cluster(spark: Any, tmp_path: Path) -> Iterator[StandaloneCluster]:
    c = StandaloneCluster(tmp_path)
    try:
        c.start()
        yield c
    finally:
        c.stop()
    assert c.leftovers() == []


def test_spark_submit_to_a_standalone_cluster(cluster: StandaloneCluster, spark: Any, tmp_path: Path) -> None:
    log = tmp_path / "meta"
    story = write_dir_failure_log(log)
    out = tmp_path / "out"
    result = subprocess.run(
        [str(cluster.spark_home / "bin" / "spark-submit"), "--master", cluster.url,
         "--conf", "spark.executor.memory=512m", "--conf", "spark.driver.host=127.0.0.1",
         "--conf", f"spark.driver.extraJavaOptions={driver_java_options(quick=True)}",
         "--conf", f"spark.executor.extraJavaOptions={QUICK_JVM_OPTIONS}",
         str(REPO / "tools" / "analytics" / "job.py"),
         str(log), "--out", str(out), "--range-bytes", "400", "--no-report"],
        env=cluster.env, capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    summary = json.loads((out / SUMMARY_FILE).read_text())
    assert summary["master"] == cluster.url
    assert summary["ranges"] >= 4 and summary["records"] == 33
    assert sorted(r["offset"] for r in table(spark, out, "records").select("offset").collect()) == list(range(33))
    [failure] = summary["dir_failures"]
    assert failure["directory"] == str(story.failed_dir)
    assert failure["recovery_latency_ms"] == story.recovered_ms - story.failure_ms
    # Both workers ran executors for the job.
    for i in (1, 2):
        assert list((tmp_path / f"worker{i}").glob("app-*/*/stderr")), f"no executor ran on worker {i}"
