"""File names and small durable-write helpers for `__cluster_metadata-0` (reference 8.1, 8.4)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import NamedTuple

PARTITION_DIR = "__cluster_metadata-0"
LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
SNAPSHOT_SUFFIX = ".checkpoint"
PARTIAL_SUFFIX = ".part"
DELETED_SUFFIX = ".deleted"
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
PARTITION_METADATA = "partition.metadata"
QUORUM_STATE = "quorum-state"
BOOTSTRAP_CHECKPOINT = "bootstrap.checkpoint"

_SEGMENT_RE = re.compile(r"^(\d{20})\.log$")
_SNAPSHOT_RE = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")


class SnapshotId(NamedTuple):
    """A snapshot's id: `offset` is exclusive (the next offset after the last record it holds),
    `epoch` the leader epoch of that last record. Ordered by offset, then epoch."""

    offset: int
    epoch: int

    @property
    def end_offset(self) -> int:
        return self.offset

    def file_name(self) -> str:
        return snapshot_file_name(self)


def partition_dir(path: Path | str) -> Path:
    """`path` itself if it is a `__cluster_metadata-0` directory, else `<path>/__cluster_metadata-0`."""
    p = Path(path)
    return p if p.name == PARTITION_DIR else p / PARTITION_DIR


def segment_file_name(base_offset: int) -> str:
    return f"{base_offset:020d}{LOG_SUFFIX}"


def parse_segment_file_name(name: str) -> int | None:
    m = _SEGMENT_RE.match(name)
    return int(m.group(1)) if m else None


def snapshot_file_name(snapshot_id: SnapshotId) -> str:
    return f"{snapshot_id.offset:020d}-{snapshot_id.epoch:010d}{SNAPSHOT_SUFFIX}"


def parse_snapshot_file_name(name: str) -> SnapshotId | None:
    m = _SNAPSHOT_RE.match(name)
    return SnapshotId(int(m.group(1)), int(m.group(2))) if m else None


def fsync_dir(path: Path) -> None:
    """Make a create, rename or unlink in `path` durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomically(path: Path, data: bytes, *, sync: bool = True) -> None:
    """Write `<path>.tmp`, fsync it, rename it over `path`, fsync the directory: readers see the
    old file or the new one, never half of one."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    if sync:
        fsync_dir(path.parent)
