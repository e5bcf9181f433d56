"""File names of `__cluster_metadata-0` that only the metadata log has (reference 8.1, 8.4).

Segment, index, leader-epoch-checkpoint and partition.metadata names are kraftpy.log's.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

PARTITION_DIR = "__cluster_metadata-0"
SNAPSHOT_SUFFIX = ".checkpoint"
PARTIAL_SUFFIX = ".part"
DELETED_SUFFIX = ".deleted"
QUORUM_STATE = "quorum-state"

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


def snapshot_file_name(snapshot_id: SnapshotId) -> str:
    return f"{snapshot_id.offset:020d}-{snapshot_id.epoch:010d}{SNAPSHOT_SUFFIX}"


def parse_snapshot_file_name(name: str) -> SnapshotId | None:
    m = _SNAPSHOT_RE.match(name)
    return SnapshotId(int(m.group(1)), int(m.group(2))) if m else None
