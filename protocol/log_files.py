"""Reading KRaft metadata log files: segments, snapshots and bootstrap.checkpoint (reference 8.1, 8.4).

Names: segments are `<base offset, 20 digits>.log`, snapshots `<end offset, 20 digits>-<epoch,
10 digits>.checkpoint`, all inside `__cluster_metadata-0`; `bootstrap.checkpoint` sits in the
metadata dir itself. This module only reads; writing belongs to the durable log.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from protocol.message import MessageDecodeError
from protocol.metadata_batches import read_metadata_batch
from protocol.record_batch import (
    LOG_OVERHEAD,
    CorruptBatchError,
    RecordBatch,
    decode_batch,
    read_batch_header,
)

METADATA_PARTITION_DIR = "__cluster_metadata-0"
BOOTSTRAP_FILE = "bootstrap.checkpoint"
SEGMENT_SUFFIX = ".log"
SNAPSHOT_SUFFIX = ".checkpoint"

_SEGMENT_RE = re.compile(r"^(\d{20})\.log$")
_SNAPSHOT_RE = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")


class FileKind(Enum):
    SEGMENT = "segment"
    SNAPSHOT = "snapshot"
    BOOTSTRAP = "bootstrap"


class LogFileError(Exception):
    """A log file that cannot be read; names the file and the byte position of the bad batch."""

    def __init__(self, path: Path, position: int | None, reason: str) -> None:
        where = f"{path}" if position is None else f"{path} at file position {position}"
        super().__init__(f"{where}: {reason}")
        self.path = path
        self.position = position
        self.reason = reason


@dataclass(frozen=True)
class LogFile:
    """A segment or snapshot file. `offset` is a segment's base offset or a snapshot's end offset
    (exclusive); `epoch` is a snapshot's epoch."""

    path: Path
    kind: FileKind
    offset: int
    epoch: int = 0


@dataclass(frozen=True)
class LogEntry:
    """One decoded record with where it came from. `message` is an ApiMessageAndVersion for known
    records (metadata or control) or an UnknownRecord/UnknownControlRecord."""

    offset: int
    timestamp: int
    leader_epoch: int
    control: bool
    message: Any
    file: Path
    position: int


def segment_file_name(base_offset: int) -> str:
    return f"{base_offset:020d}{SEGMENT_SUFFIX}"


def snapshot_file_name(end_offset: int, epoch: int) -> str:
    return f"{end_offset:020d}-{epoch:010d}{SNAPSHOT_SUFFIX}"


def parse_segment_name(name: str) -> int | None:
    m = _SEGMENT_RE.match(name)
    return int(m.group(1)) if m else None


def parse_snapshot_name(name: str) -> tuple[int, int] | None:
    m = _SNAPSHOT_RE.match(name)
    return (int(m.group(1)), int(m.group(2))) if m else None


def classify(path: Path) -> LogFile | None:
    """What a file is, from its name; None for files that are neither segment nor snapshot."""
    name = path.name
    if name == BOOTSTRAP_FILE:
        return LogFile(path, FileKind.BOOTSTRAP, 0, 0)
    base = parse_segment_name(name)
    if base is not None:
        return LogFile(path, FileKind.SEGMENT, base)
    snap = parse_snapshot_name(name)
    if snap is not None:
        return LogFile(path, FileKind.SNAPSHOT, snap[0], snap[1])
    if name.endswith(SEGMENT_SUFFIX):
        return LogFile(path, FileKind.SEGMENT, 0)
    if name.endswith(SNAPSHOT_SUFFIX):
        return LogFile(path, FileKind.SNAPSHOT, 0)
    return None


def list_segments(partition_dir: Path) -> list[LogFile]:
    """Segments of a partition dir in base-offset order."""
    found = [
        LogFile(p, FileKind.SEGMENT, o)
        for p in partition_dir.iterdir()
        if (o := parse_segment_name(p.name)) is not None
    ]
    return sorted(found, key=lambda f: f.offset)


def list_snapshots(partition_dir: Path) -> list[LogFile]:
    """Finished snapshots of a partition dir, oldest first (by end offset, then epoch)."""
    found = []
    for p in partition_dir.iterdir():
        snap = parse_snapshot_name(p.name)
        if snap is not None:
            found.append(LogFile(p, FileKind.SNAPSHOT, snap[0], snap[1]))
    return sorted(found, key=lambda f: (f.offset, f.epoch))


def partition_dir_of(path: Path) -> Path:
    """Accept either the metadata dir (holding __cluster_metadata-0) or the partition dir itself."""
    inner = path / METADATA_PARTITION_DIR
    return inner if inner.is_dir() else path


def resolve(path: Path, include_snapshots: bool) -> list[LogFile]:
    """The files a user's PATH stands for: the file itself, or a directory's segments in offset order
    (then its snapshots and the metadata dir's bootstrap.checkpoint when include_snapshots)."""
    if path.is_file():
        lf = classify(path)
        if lf is None:
            raise LogFileError(
                path, None, "not a segment (.log), snapshot (.checkpoint) or bootstrap.checkpoint"
            )
        return [lf]
    if not path.is_dir():
        raise LogFileError(path, None, "no such file or directory")
    part = partition_dir_of(path)
    files = list_segments(part)
    if include_snapshots:
        files += list_snapshots(part)
        boot = path / BOOTSTRAP_FILE
        if not boot.is_file():
            boot = part.parent / BOOTSTRAP_FILE
        if boot.is_file():
            files.insert(0, LogFile(boot, FileKind.BOOTSTRAP, 0))
    if not files:
        raise LogFileError(path, None, "holds no metadata log segments or snapshots")
    return files


def read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as e:
        raise LogFileError(path, None, f"cannot read: {e.strerror or e}") from None


def iter_file_batches(
    path: Path, data: bytes | None = None, verify_crc: bool = True
) -> Iterator[tuple[int, RecordBatch]]:
    """(file position, batch) for every batch of a file; a bad or torn batch raises LogFileError."""
    buf = read_bytes(path) if data is None else data
    pos = 0
    end = len(buf)
    while pos < end:
        try:
            batch = decode_batch(buf, pos, verify_crc)
        except CorruptBatchError as e:
            raise LogFileError(path, e.offset_in_file, e.reason) from None
        yield pos, batch
        pos += batch.length + LOG_OVERHEAD


def iter_entries(log_file: LogFile, from_offset: int = 0, verify_crc: bool = True) -> Iterator[LogEntry]:
    """Every record of a file, decoded, from `from_offset` on."""
    path = log_file.path
    buf = read_bytes(path)
    pos = 0
    end = len(buf)
    while pos < end:
        try:
            header = read_batch_header(buf, pos)
            if header.base_offset + header.last_offset_delta < from_offset:
                pos += header.size
                continue
            batch = read_metadata_batch(buf, pos, verify_crc)
        except CorruptBatchError as e:
            raise LogFileError(path, e.offset_in_file, e.reason) from None
        except MessageDecodeError as e:
            raise LogFileError(path, pos, f"batch at offset {header.base_offset}: {e}") from None
        control = batch.is_control
        base = header.base_offset
        for delta, message in enumerate(batch.records):
            offset = base + delta
            if offset < from_offset:
                continue
            yield LogEntry(
                offset, header.base_timestamp, header.partition_leader_epoch, control, message, path, pos
            )
        pos += header.size
