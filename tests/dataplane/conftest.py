"""Fixtures for data-plane process tests: a controller and three brokers, on plain dirs or real disks."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.dataplane.cluster import DataCluster
from tests.support.processes import ProcessSet


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[DataCluster]:
    """Three brokers with two plain log dirs each, started."""
    procs = ProcessSet(tmp_path)
    try:
        dirs = {b: [tmp_path / f"b{b}d{d}" for d in range(2)] for b in (1, 2, 3)}
        c = DataCluster.create(tmp_path, procs, dirs)
        c.start()
        yield c
    finally:
        procs.stop_all()


@pytest.fixture
def disk_cluster(tmp_path: Path, real_disks) -> Iterator[tuple[DataCluster, dict[int, list]]]:  # type: ignore[no-untyped-def]
    """Three brokers whose two log dirs each are real loop-device filesystems; processes stop
    before the disks are destroyed."""
    disks = real_disks.log_dirs(brokers=3, dirs_per_broker=2)
    by_broker = {b + 1: row for b, row in enumerate(disks)}
    dirs = {}
    for b, row in by_broker.items():
        dirs[b] = []
        for disk in row:
            d = Path(disk.mountpoint) / "kafka-logs"
            d.mkdir()
            dirs[b].append(d)
    procs = ProcessSet(tmp_path)
    try:
        c = DataCluster.create(tmp_path, procs, dirs)
        c.start()
        yield c, by_broker
    finally:
        procs.stop_all()
