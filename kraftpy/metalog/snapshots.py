"""Snapshot files: `<end offset>-<epoch>.checkpoint` (reference 8.4).

Batches from offset 0, all stamped with the snapshot's epoch: a control batch holding
SnapshotHeaderRecord, data batches of metadata records, a control batch holding
SnapshotFooterRecord. Written to `<name>-<random>.checkpoint.part`, fsynced, then renamed, so a
crash leaves either no snapshot or a whole one. Also the format of `bootstrap.checkpoint`.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kraftpy.log.errors import CorruptLogError
from kraftpy.metalog.files import PARTIAL_SUFFIX, SnapshotId, snapshot_file_name
from kraftpy.metalog.reading import (
    EntryRun,
    LogEntry,
    checked_batches,
    decode_at,
    decoded_run,
    iter_decoded,
    run_entries,
)
from kraftpy.storage.atomic import fsync_dir
from protocol.control_records import SnapshotFooterRecord, SnapshotHeaderRecord
from protocol.framing import ApiMessageAndVersion
from protocol.metadata_batches import DecodedBatch
from protocol.record_batch import LOG_OVERHEAD, build_control_batch, build_metadata_batch

# KafkaRaftClient.MAX_BATCH_SIZE_BYTES
MAX_BATCH_BYTES = 8 * 1024 * 1024
_RECORDS_PER_BATCH = 8192


def _data_batches(
    records: Sequence[ApiMessageAndVersion], base_offset: int, epoch: int, now_ms: int, max_bytes: int
) -> list[bytes]:
    out: list[bytes] = []
    for lo in range(0, len(records), _RECORDS_PER_BATCH):
        out.extend(_fit(records[lo : lo + _RECORDS_PER_BATCH], base_offset + lo, epoch, now_ms, max_bytes))
    return out


def _fit(
    chunk: Sequence[ApiMessageAndVersion], base_offset: int, epoch: int, now_ms: int, max_bytes: int
) -> list[bytes]:
    data = build_metadata_batch(base_offset, epoch, now_ms, chunk)
    if len(data) <= max_bytes or len(chunk) == 1:
        return [data]
    half = len(chunk) // 2
    return _fit(chunk[:half], base_offset, epoch, now_ms, max_bytes) + _fit(
        chunk[half:], base_offset + half, epoch, now_ms, max_bytes
    )


def build_snapshot(
    records: Sequence[ApiMessageAndVersion],
    epoch: int,
    last_contained_log_timestamp: int,
    now_ms: int,
    *,
    max_batch_bytes: int = MAX_BATCH_BYTES,
) -> bytes:
    header = SnapshotHeaderRecord(Version=0, LastContainedLogTimestamp=last_contained_log_timestamp)
    parts = [build_control_batch(0, epoch, now_ms, [header])]
    parts += _data_batches(records, 1, epoch, now_ms, max_batch_bytes)
    footer_offset = 1 + len(records)
    parts.append(build_control_batch(footer_offset, epoch, now_ms, [SnapshotFooterRecord(Version=0)]))
    return b"".join(parts)


def write_snapshot_file(directory: Path, snapshot_id: SnapshotId, data: bytes) -> Path:
    """Write `data` as the snapshot `snapshot_id`: a .part file, fsync, rename, fsync the dir."""
    final = directory / snapshot_file_name(snapshot_id)
    part = directory / f"{final.stem}-{uuid.uuid4()}{final.suffix}{PARTIAL_SUFFIX}"
    fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        part.unlink(missing_ok=True)
        raise
    os.close(fd)
    os.replace(part, final)
    fsync_dir(directory)
    return final


@dataclass(frozen=True)
class SnapshotContents:
    """A checked snapshot: its header timestamp, its bytes and where its data batches start.

    Framing and every batch's CRC are checked when it is parsed; the records are decoded as
    `entries()` reaches them, one batch at a time. A restart replays millions of records from a
    snapshot, and holding them all decoded before the first is replayed would need more memory than
    the state they build (and the time to fetch it from the system)."""

    path: Path
    last_contained_log_timestamp: int
    data: bytes = field(repr=False)
    positions: list[int]  # file positions of the data batches, between header and footer

    def entries(self, *, include_control: bool = False) -> Iterator[LogEntry]:
        for run in self.runs(include_control=include_control):
            yield from run_entries(*run)

    def runs(self, *, include_control: bool = False) -> Iterator[EntryRun]:
        """`entries()` a batch at a time, at the offsets within the snapshot (see EntryRun)."""
        data, path = self.data, self.path
        for position in self.positions:
            db = decode_at(data, position, path, verify_crc=False)
            run = decoded_run(db, path, position, include_control=include_control, from_snapshot=True)
            if run is not None:
                yield run

    def records(self) -> list[ApiMessageAndVersion]:
        return [e.record for e in self.entries()]

    def check_records(self) -> None:
        """Decode every record once (and drop it): raises CorruptLogError for one that cannot be
        read, as replaying the snapshot would, before anything is kept or replayed."""
        for position in self.positions:
            decode_at(self.data, position, self.path, verify_crc=False)


def _control_message(db: DecodedBatch, name: str) -> Any | None:
    if not db.is_control:
        return None
    for r in db.records:
        message = getattr(r, "message", r)
        if getattr(message, "NAME", "") == name:
            return message
    return None


def parse_snapshot(data: bytes, path: Path) -> SnapshotContents:
    """Check the framing (header first, footer last, offsets in order, every CRC); the data
    batches' records are decoded as they are read (see SnapshotContents).

    Raises CorruptLogError naming the file and position of the first framing, CRC or offset
    problem; a record that does not decode is reported when `entries()` or `check_records()`
    reaches it.
    """
    batches = checked_batches(data, path)
    if not batches:
        raise CorruptLogError(path, 0, "empty snapshot: no SnapshotHeader batch")
    header = _control_message(decode_at(data, 0, path, verify_crc=False), "SnapshotHeaderRecord")
    if header is None:
        raise CorruptLogError(path, 0, "a snapshot must start with a SnapshotHeaderRecord control batch")
    last_pos = batches[-1][0]
    if (
        len(batches) < 2
        or _control_message(decode_at(data, last_pos, path, verify_crc=False), "SnapshotFooterRecord") is None
    ):
        raise CorruptLogError(path, last_pos, "a snapshot must end with a SnapshotFooterRecord control batch")
    expected = 0
    for pos, h in batches:
        if h.base_offset != expected:
            raise CorruptLogError(path, pos, f"batch starts at offset {h.base_offset}, expected {expected}")
        expected = h.next_offset
    return SnapshotContents(path, header.LastContainedLogTimestamp, data, [pos for pos, _ in batches[1:-1]])


def read_snapshot_file(path: Path) -> SnapshotContents:
    return parse_snapshot(path.read_bytes(), path)


def read_snapshot_timestamp(path: Path) -> int:
    """LastContainedLogTimestamp from the header batch alone (retention checks need no more)."""
    with open(path, "rb") as f:
        head = f.read(LOG_OVERHEAD)
        if len(head) < LOG_OVERHEAD:
            raise CorruptLogError(path, 0, "too short for a snapshot header batch")
        length = int.from_bytes(head[8:12], "big", signed=True)
        if length < 0 or length > MAX_BATCH_BYTES:
            raise CorruptLogError(path, 0, f"impossible header batch length {length}")
        first = head + f.read(length)
    batches = list(iter_decoded(first, path))
    header = _control_message(batches[0][1], "SnapshotHeaderRecord") if batches else None
    if header is None:
        raise CorruptLogError(path, 0, "a snapshot must start with a SnapshotHeaderRecord control batch")
    return int(header.LastContainedLogTimestamp)
