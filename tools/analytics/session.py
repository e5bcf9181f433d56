"""The Spark session the job runs in, and shipping our code to its executors.

Local masters and a standalone master on 127.0.0.1 get the loopback settings that keep Spark off
the network and quiet (no UI, no progress bars, small shuffles, no Arrow). For any other master
only the quiet settings apply, so executors on other hosts can reach the driver.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlparse

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[2]"
APP_NAME = "kraftpy-analyze"
SHIPPED_PACKAGES = ("protocol", "kraftpy", "tools")
_LOOPBACK = {"127.0.0.1", "localhost", "::1"}
_scratch_dir: str | None = None
LOG4J_CONFIG = Path(__file__).with_name("log4j2.properties")
QUICK_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def is_loopback_master(master: str) -> bool:
    if master.startswith("local"):
        return True
    host = urlparse(master).hostname
    return host in _LOOPBACK


def driver_java_options(quick: bool) -> str:
    opts = f"-Dlog4j2.configurationFile={LOG4J_CONFIG.as_uri()}"
    if quick:
        # A short run pays more for compiling than it gains from compiled code: JIT with C1 only,
        # and a single-threaded GC, halve the CPU a small log costs (start-up included).
        opts += " " + QUICK_JVM_OPTIONS
    return opts


def session_conf(master: str, quick: bool = False) -> dict[str, str]:
    conf = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "4",
        "spark.sql.execution.pythonUDF.arrow.enabled": "false",
        "spark.sql.execution.arrow.pyspark.enabled": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.warehouse.dir": str(_scratch() / "warehouse"),
        # Spark's own INFO/WARN lines (native-hadoop, default profile...) are noise for this job.
        "spark.driver.extraJavaOptions": driver_java_options(quick),
    }
    if is_loopback_master(master):
        # Executors on this machine run this very interpreter, with our dependencies installed.
        conf["spark.pyspark.python"] = sys.executable
        conf["spark.pyspark.driver.python"] = sys.executable
        conf["spark.driver.host"] = "127.0.0.1"
        conf["spark.driver.bindAddress"] = "127.0.0.1"
    return conf


@dataclass
class SessionHandle:
    """A session and whether this run made it (and so must stop it)."""

    spark: SparkSession
    owned: bool

    def stop(self) -> None:
        if self.owned:
            self.spark.stop()


def open_session(master: str | None = None, *, quick: bool = False) -> SessionHandle:
    """Reuse the active session when there is one and no other master was asked for; else start one.

    `quick` tunes a JVM this call starts for a short job (a small log).
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None and (master is None or active.sparkContext.master == master):
        return SessionHandle(active, owned=False)
    if active is not None:
        raise RuntimeError(
            f"a Spark session on {active.sparkContext.master} is already running in this process; "
            f"cannot start another one on {master}"
        )
    submitted = _submitted_master() if master is None else None
    master = master or submitted or DEFAULT_MASTER
    if is_loopback_master(master):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder.appName(APP_NAME)
    if submitted is None:
        builder = builder.master(master)
    for k, v in session_conf(master, quick).items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return SessionHandle(spark, owned=True)


def _submitted_master() -> str | None:
    """The master spark-submit was given, when this process runs under spark-submit."""
    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        return None
    from pyspark import SparkConf, SparkContext

    # The gateway spark-submit started holds its settings as JVM system properties.
    SparkContext._ensure_initialized()
    return SparkConf().get("spark.master", None)


def _scratch() -> Path:
    """A directory for this process's Spark files (code zip, warehouse), removed at exit."""
    global _scratch_dir
    if _scratch_dir is None:
        _scratch_dir = tempfile.mkdtemp(prefix="kraftpy-spark-")
        atexit.register(shutil.rmtree, _scratch_dir, True)
    return Path(_scratch_dir)


def code_zip() -> Path:
    """A zip of our packages for executors, kept for the life of this process (executors fetch it lazily)."""
    root = Path(__file__).resolve().parents[2]
    fd, name = tempfile.mkstemp(dir=_scratch(), prefix="kraftpy-code-", suffix=".zip")
    os.close(fd)
    with zipfile.ZipFile(name, "w", zipfile.ZIP_DEFLATED) as z:
        for pkg in SHIPPED_PACKAGES:
            for p in sorted((root / pkg).rglob("*.py")):
                z.write(p, p.relative_to(root).as_posix())
    return Path(name)


def ship_code(spark: SparkSession) -> None:
    """Put our packages on every executor's path, once per Spark context.

    Even local executors need it: their Python starts from Spark's own path, not this process's.
    """
    sc = spark.sparkContext
    if getattr(sc, "_kraftpy_shipped", False):
        return
    sc.addPyFile(str(code_zip()))
    sc._kraftpy_shipped = True  # type: ignore[attr-defined]
