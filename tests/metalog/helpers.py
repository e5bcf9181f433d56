"""Helpers for the metadata log tests."""

from __future__ import annotations

import shutil
from pathlib import Path

from protocol import metadata_records as mr
from protocol.framing import ApiMessageAndVersion
from protocol.uuid import Uuid


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
