"""The CI janitor clears only disks a dead test run made: an operator's disks carry no marker."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

import tests.janitor as janitor
from tests.conftest import require_real
from tests.disk.helpers import loops_under, wait_no_loops
from tests.disk_fixtures import real_disks_available
from tools.cluster import launcher
from tools.disk import DiskSet, cleanup_leftovers
from tools.disk.janitor import TEST_RUN_ENV, TEST_RUN_MARKER, marked_state_dirs

pytestmark = pytest.mark.real

DEAD_RUN = "4194305.1"  # above any pid_max: a run that cannot be running


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    require_real("root, losetup and mkfs.ext4 (loop-device disks)", real_disks_available("ext4"))
    try:
        yield tmp_path
    finally:
        cleanup_leftovers(tmp_path)


def test_only_the_dead_runs_disks_are_released(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TEST_RUN_ENV, raising=False)
    operators = DiskSet(root / "operator")
    operators.create("a", size="64M")
    monkeypatch.setenv(TEST_RUN_ENV, DEAD_RUN)
    crashed = DiskSet(root / "crashed")
    crashed.create("a", size="64M")

    assert not (operators.state_dir / TEST_RUN_MARKER).exists()
    marked = marked_state_dirs()
    assert marked.get(crashed.state_dir.resolve(), marked.get(crashed.state_dir)) == DEAD_RUN
    assert not launcher.owning_run_alive(DEAD_RUN)

    # Every other marked disk on the machine counts as a live run's.
    actions = janitor.cleanup_disks(alive=lambda run_id: run_id != DEAD_RUN)
    assert actions
    assert wait_no_loops(crashed.state_dir) == []
    assert len(loops_under(operators.state_dir)) == 1
    assert os.path.ismount(operators.get("a").mountpoint)
