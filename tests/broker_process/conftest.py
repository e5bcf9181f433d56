"""Fixtures for broker process tests: processes that are always stopped, a cluster, real disks."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kraftpy.storage import read_meta_properties
from protocol.uuid import Uuid
from tests.broker_process.cluster import Cluster
from tests.support.processes import ProcessSet


@pytest.fixture
def procs(tmp_path: Path) -> Iterator[ProcessSet]:
    ps = ProcessSet(tmp_path)
    try:
        yield ps
    finally:
        ps.stop_all()


@pytest.fixture
def cluster(tmp_path: Path, procs: ProcessSet) -> Cluster:
    return Cluster.create(tmp_path, procs)


def dir_id(path: Path) -> Uuid:
    meta = read_meta_properties(path)
    assert meta.directory_id is not None
    return meta.directory_id
