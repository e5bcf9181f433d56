"""Find the files of a KRaft metadata log and decide which of them describe its history.

A log directory holds segments (`<base offset>.log`) and snapshots (`<end offset>-<epoch>.checkpoint`).
When the segments still start at offset 0 they hold the whole history and snapshots add nothing.
When older segments were deleted, the state before the first kept offset lives only in a snapshot:
the one with the smallest end offset at or past the log start is used as the base state (the most
history), and segment records before its end offset are skipped because the snapshot already has them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kraftpy.log.segment import parse_segment_file_name
from kraftpy.metalog.files import PARTITION_DIR as METADATA_PARTITION_DIR
from kraftpy.metalog.files import parse_snapshot_file_name
from tools.analytics.errors import LogDirError


@dataclass(frozen=True, slots=True)
class SegmentFile:
    path: Path
    base_offset: int
    size: int

    @property
    def name(self) -> str:
        return self.path.name


@dataclass(frozen=True, slots=True)
class SnapshotFile:
    path: Path
    end_offset: int  # exclusive: the next offset after the last record the snapshot holds
    epoch: int
    size: int

    @property
    def name(self) -> str:
        return self.path.name


@dataclass(frozen=True, slots=True)
class LogFiles:
    directory: Path
    segments: tuple[SegmentFile, ...]
    snapshots: tuple[SnapshotFile, ...]


def resolve_log_dir(logdir: str | Path) -> Path:
    """The directory holding the segments: LOGDIR itself or its `__cluster_metadata-0` child."""
    root = Path(logdir)
    if not root.exists():
        raise LogDirError(f"{root} does not exist")
    if not root.is_dir():
        raise LogDirError(f"{root} is not a directory")
    child = root / METADATA_PARTITION_DIR
    if child.is_dir():
        return child
    return root


def list_log_files(logdir: str | Path) -> LogFiles:
    """Segments sorted by base offset and snapshots by end offset; temp and deleted files are ignored."""
    directory = resolve_log_dir(logdir)
    segments: list[SegmentFile] = []
    snapshots: list[SnapshotFile] = []
    try:
        entries = list(directory.iterdir())
    except OSError as e:
        raise LogDirError(f"cannot list {directory}: {e.strerror or e}") from None
    for p in entries:
        if not p.is_file():
            continue
        base_offset = parse_segment_file_name(p.name)
        if base_offset is not None:
            segments.append(SegmentFile(p, base_offset, p.stat().st_size))
            continue
        snapshot_id = parse_snapshot_file_name(p.name)
        if snapshot_id is not None:
            snapshots.append(SnapshotFile(p, snapshot_id.offset, snapshot_id.epoch, p.stat().st_size))
    segments.sort(key=lambda s: s.base_offset)
    snapshots.sort(key=lambda s: (s.end_offset, s.epoch))
    if not any(s.size for s in segments) and not any(s.size for s in snapshots):
        raise LogDirError(
            f"{directory} holds no metadata log: no non-empty <offset>.log segments or "
            f"<offset>-<epoch>.checkpoint snapshots (expected a metadata dir or its {METADATA_PARTITION_DIR})"
        )
    return LogFiles(directory, tuple(segments), tuple(snapshots))


def choose_base_snapshot(files: LogFiles, log_start_offset: int | None) -> SnapshotFile | None:
    """The snapshot that holds the state before the first segment record, or None when segments start at 0.

    `log_start_offset` is the first offset present in the segments (None when there are none).
    """
    if log_start_offset is None:
        return files.snapshots[-1] if files.snapshots else None
    if log_start_offset == 0:
        return None
    covering = [s for s in files.snapshots if s.end_offset >= log_start_offset]
    return covering[0] if covering else None
