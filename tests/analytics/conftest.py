"""One local Spark session for every analytics test (starting Spark costs seconds)."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import sys
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import require_real

SPARK_WHAT = "Spark (pyspark + Java 17)"


def spark_available() -> bool:
    return importlib.util.find_spec("pyspark") is not None and shutil.which("java") is not None


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    require_real(SPARK_WHAT, spark_available())
    from pyspark.sql import SparkSession

    from tools.analytics.session import driver_java_options

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    scratch = tmp_path_factory.mktemp("spark")
    session = (
        SparkSession.builder.master("local[2]")
        .appName("kraftpy-tests")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.execution.pythonUDF.arrow.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.warehouse.dir", str(scratch / "warehouse"))
        .config("spark.driver.extraJavaOptions", driver_java_options(quick=True))
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def table(spark: Any, out: Path, name: str) -> Any:
    return spark.read.parquet(str(out / name))


class _References(HTMLParser):
    """Every attribute or tag of a page that would make a browser fetch something."""

    FETCHING = {"src", "href", "xlink:href", "srcset", "data", "poster", "action", "formaction", "background"}
    TAGS = {"link", "iframe", "object", "embed", "base", "frame", "img", "audio", "video", "source"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[str, str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for k, v in attrs:
            if k in self.FETCHING and not (v or "").startswith(("data:", "#")):
                self.found.append((tag, k, v or ""))
        if tag in self.TAGS:
            self.found.append((tag, "", ""))

    handle_startendtag = handle_starttag


def assert_self_contained(page: str) -> None:
    """One file a browser shows without the network: no src/href/url() but data: URIs and #fragments,
    no linked or embedded documents, scripts only inline; outside scripts, the only http URLs are XML
    namespace names (xmlns), and the figures' own scripts name none (the inlined plotly.js library
    holds the URLs of map tiles it fetches only for map traces, which the report has none of)."""
    refs = _References()
    refs.feed(page)
    assert refs.found == []
    scripts = re.findall(r"<script>(.*?)</script>", page, flags=re.S)
    library = max(scripts, key=len) if scripts else ""
    for s in scripts:
        if s is not library:
            assert "http" not in s and "mapbox" not in s
    outside = re.sub(r"<script>.*?</script>", "", page, flags=re.S)
    assert "<script" not in outside.replace("<script>", "")
    assert re.search(r"url\(\s*['\"]?(?!data:|#)", outside) is None and "@import" not in outside
    for m in re.finditer(r"https?://", outside):
        assert "xmlns" in outside[max(0, m.start() - 20) : m.start()], outside[m.start() - 40 : m.start() + 60]
