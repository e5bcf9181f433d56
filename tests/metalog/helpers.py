"""Helpers for the metadata log tests."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from protocol import metadata_records as mr
from protocol.framing import ApiMessageAndVersion
from protocol.uuid import Uuid

if TYPE_CHECKING:
    from kraftpy.image import MetadataImage
    from kraftpy.metalog import SnapshotId


def noops(n: int) -> list[ApiMessageAndVersion]:
    return [ApiMessageAndVersion(mr.NoOpRecord(), 0) for _ in range(n)]


def topic_records(i: int) -> list[ApiMessageAndVersion]:
    tid = Uuid.from_longs(1, i + 1)
    return [
        ApiMessageAndVersion(mr.TopicRecord(Name=f"t{i}", TopicId=tid), 0),
        ApiMessageAndVersion(
            mr.PartitionRecord(
                PartitionId=0, TopicId=tid, Replicas=[1], Isr=[1], Leader=1, LeaderEpoch=0, PartitionEpoch=0
            ),
            0,
        ),
    ]


def mv(level: int = 21) -> ApiMessageAndVersion:
    return ApiMessageAndVersion(mr.FeatureLevelRecord(Name="metadata.version", FeatureLevel=level), 0)


def copy_sample(src: Path, dst: Path) -> Path:
    """Copy a sample directory tree with writable files (the originals are read-only)."""
    for p in src.rglob("*"):
        target = dst / p.relative_to(src)
        if p.is_dir():
            target.mkdir(parents=True, exist_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(p, target)
    return dst


def log_with_two_snapshots(directory: Path) -> tuple[SnapshotId, SnapshotId, MetadataImage]:
    """A metadata log in small segments with snapshots after 20 and 40 topics, never cleaned (written
    with Kafka's default retention): (older snapshot, latest snapshot, the log's image)."""
    from kraftpy.metalog import MetadataLog, MetadataLogConfig

    with MetadataLog.open(directory, MetadataLogConfig(segment_bytes=600)) as mlog:
        mlog.append([mv()], 1, 10)
        for i in range(40):
            mlog.append(topic_records(i), 1, 1000 + i)
            if i in (19, 39):
                mlog.write_snapshot(mlog.load_image().write(), mlog.log_end_offset, 1, 1000 + i)
        first, latest = mlog.snapshot_ids()
        return first, latest, mlog.load_image()
