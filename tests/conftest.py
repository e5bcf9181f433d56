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
