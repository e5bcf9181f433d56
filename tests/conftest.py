"""Shared test fixtures.

Tests that need real infrastructure (root, loop devices, ZooKeeper, Java, Spark) call
`require_real(what, available)`: they skip with a reason on a developer machine that lacks it,
and fail under KRAFTPY_REQUIRE_REAL=1, so CI never passes by skipping.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
SAMPLES = SHARED / "samples" / "kraft-metadata"


def require_real(what: str, available: bool) -> None:
    if available:
        return
    if os.environ.get("KRAFTPY_REQUIRE_REAL") == "1":
        pytest.fail(f"KRAFTPY_REQUIRE_REAL=1 but {what} is not available")
    pytest.skip(f"{what} is not available")


def is_root() -> bool:
    return os.geteuid() == 0


def have(cmd: str) -> bool:
    return shutil.which(cmd) is not None


# ---- running in parallel (pytest-xdist, `./dev test` uses `-n auto --dist loadgroup`) ----------------
#
# Tests that share the machine's devices (loop devices, mounts, network namespaces, the janitor's sweep),
# the system scenarios, and the rest of the `real` tests (ZooKeeper, Java, root) run one after another
# on one worker, in the "devices" group; the tests on the local Spark session share that session in the
# "spark" group on another; every other test (processes on 127.0.0.1 with ports of their own included)
# goes wherever a worker is idle.

DEVICE_FIXTURES = frozenset({"real_disks", "require_root", "zk_server"})
DEVICE_DIRS = ("tests/system/", "tests/disk/")


def xdist_group(item: pytest.Item) -> str | None:
    """The group `item` must run in, or None when it may run beside anything."""
    names = set(getattr(item, "fixturenames", ()))
    path = item.nodeid
    if (
        names & DEVICE_FIXTURES
        or path.startswith(DEVICE_DIRS)
        or item.get_closest_marker("system") is not None
        or (item.get_closest_marker("real") is not None and "spark" not in names)
    ):
        return "devices"
    if "spark" in names:
        return "spark"
    return None


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the marks into the node ids
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not getattr(config.option, "loadgroup", False):  # set on xdist's workers, which collect
        return
    for item in items:
        group = xdist_group(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))


# Figures a test module adds up over its tests (`report_total`), printed at the end of the run; under
# xdist each worker sends its own and the controlling process adds them.
TOTALS: dict[str, dict[str, int]] = {}


def report_total(section: str, name: str, value: int) -> None:
    figures = TOTALS.setdefault(section, {})
    figures[name] = figures.get(name, 0) + value


def pytest_sessionfinish(session: pytest.Session) -> None:
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["kraftpy_totals"] = TOTALS


@pytest.hookimpl(optionalhook=True)  # xdist's hook: absent when run with -p no:xdist
def pytest_testnodedown(node: object, error: object) -> None:
    for section, figures in getattr(node, "workeroutput", {}).get("kraftpy_totals", {}).items():
        for name, value in figures.items():
            report_total(section, name, value)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for section, figures in TOTALS.items():
        terminalreporter.section(section)
        terminalreporter.write_line(", ".join(f"{k}={v}" for k, v in figures.items()))


@pytest.fixture(scope="session")
def samples_dir() -> Path:
    """The real Kafka metadata samples, read in place from ../shared (never copied)."""
    if not SAMPLES.is_dir():
        pytest.skip(f"real Kafka samples not found at {SAMPLES} (../shared is absent)")
    return SAMPLES


@pytest.fixture
def require_root() -> None:
    require_real("root (loop devices, mounts)", is_root() and have("losetup") and have("mkfs.ext4"))


from tests.disk_fixtures import real_disks  # noqa: F401, E402
from tests.support.zk_server import zk_server  # noqa: F401, E402
