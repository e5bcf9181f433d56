"""Cut log files into batch-aligned byte ranges on the driver, reading batch headers only.

The driver hops from header to header (BaseOffset + Length), never touching record bytes, so a
large segment is scanned at page-cache speed; executors then decode the ranges in parallel.
A header that cannot be read ends the scan of its file: without it the next boundary is unknown.
"""

from __future__ import annotations

import mmap
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from protocol.record_batch import (
    LOG_OVERHEAD,
    BatchHeader,
    CorruptBatchError,
    TruncatedBatchError,
    read_batch_header,
)
from tools.analytics.errors import CorruptSpot

# Far above KRaft's 8 MiB batches: only there to refuse a garbage length before reading it.
MAX_BATCH_BYTES = 1 << 30

SEGMENT = "segment"
SNAPSHOT = "snapshot"


class LogRange(NamedTuple):
    """Work for one executor task: the batches of `path` between byte `start` and `end`."""

    path: str
    file: str
    source: str  # SEGMENT or SNAPSHOT
    start: int
    end: int
    first_offset: int
    last_offset: int
    batches: int
    records: int
    min_offset: int  # segment records below this are already in the base snapshot
    snapshot_end_offset: int  # the base snapshot's end offset, -1 for segment ranges
    snapshot_timestamp: int  # the snapshot's LastContainedLogTimestamp, -1 when unknown


@dataclass(slots=True)
class FileScan:
    """What scanning one file found: its ranges and where the good bytes end."""

    file: str
    source: str
    scanned_from: int
    good_end: int = 0  # byte position just after the last readable batch
    first_offset: int | None = None
    last_offset: int | None = None
    last_batch_pos: int | None = None
    last_batch_crc: int | None = None
    batches: int = 0
    records: int = 0
    ranges: list[LogRange] = field(default_factory=list)
    corrupt: CorruptSpot | None = None
    partial_tail_bytes: int = 0  # a torn write at the end of the newest segment, left for a later run


def _headers(buf: mmap.mmap | bytes, pos: int) -> Iterator[tuple[int, BatchHeader]]:
    end = len(buf)
    while pos < end:
        h = read_batch_header(buf, pos)
        yield pos, h
        pos += h.length + LOG_OVERHEAD


def scan_file(
    path: Path,
    source: str,
    *,
    start: int = 0,
    range_bytes: int,
    after_offset: int = -1,
    min_offset: int = 0,
    tail_may_be_partial: bool = False,
    snapshot_end_offset: int = -1,
    snapshot_timestamp: int = -1,
) -> FileScan:
    """Scan `path` from byte `start` and cut it into ranges of about `range_bytes`.

    `after_offset` is the last offset seen before this file: a batch at or below it means the
    log goes backwards, which no writer produces, so it is reported as corruption. A torn batch
    at the very end of the newest segment (`tail_may_be_partial`) is a write in progress, not
    corruption: it is left for a later run.
    """
    scan = FileScan(file=path.name, source=source, scanned_from=start, good_end=start)
    with path.open("rb") as f:
        size = f.seek(0, 2)
        if size <= start:
            return scan
        buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        _scan(
            buf,
            scan,
            path,
            range_bytes,
            after_offset,
            min_offset,
            tail_may_be_partial,
            snapshot_end_offset,
            snapshot_timestamp,
        )
    finally:
        buf.close()
    return scan


def _scan(
    buf: mmap.mmap,
    scan: FileScan,
    path: Path,
    range_bytes: int,
    after_offset: int,
    min_offset: int,
    tail_may_be_partial: bool,
    snapshot_end_offset: int,
    snapshot_timestamp: int,
) -> None:
    size = len(buf)
    cut_start = scan.scanned_from
    cut_first: int | None = None
    cut_last = cut_batches = cut_records = 0
    previous = after_offset if scan.source == SEGMENT else -1

    def cut(end: int) -> None:
        nonlocal cut_start, cut_first, cut_batches, cut_records
        if cut_first is None:
            return
        scan.ranges.append(
            LogRange(
                str(path),
                path.name,
                scan.source,
                cut_start,
                end,
                cut_first,
                cut_last,
                cut_batches,
                cut_records,
                min_offset,
                snapshot_end_offset,
                snapshot_timestamp,
            )
        )
        cut_start, cut_first, cut_batches, cut_records = end, None, 0, 0

    pos = scan.scanned_from
    try:
        for pos, h in _headers(buf, scan.scanned_from):
            if h.last_offset_delta < 0 or h.records_count < 0:
                raise CorruptBatchError(
                    pos,
                    f"impossible record counts (last offset delta "
                    f"{h.last_offset_delta}, {h.records_count} records)",
                )
            if h.base_offset <= previous:
                raise CorruptBatchError(
                    pos,
                    f"base offset {h.base_offset} is not after the previous batch's last offset {previous}",
                )
            previous = h.last_offset
            end = pos + h.size
            if scan.first_offset is None:
                scan.first_offset = h.base_offset
            scan.last_offset = h.last_offset
            scan.last_batch_pos, scan.last_batch_crc = pos, h.crc
            scan.batches += 1
            scan.records += h.records_count
            scan.good_end = end
            if h.last_offset < min_offset:
                # Wholly inside the base snapshot: never decoded, so never part of a range.
                cut(pos)
                cut_start = end
                continue
            if cut_first is None:
                cut_first = h.base_offset
            cut_last = h.last_offset
            cut_batches += 1
            cut_records += h.records_count
            if end - cut_start >= range_bytes:
                cut(end)
    except TruncatedBatchError as e:
        if tail_may_be_partial:
            scan.partial_tail_bytes = size - e.offset_in_file
        else:
            scan.corrupt = CorruptSpot(
                scan.file,
                e.offset_in_file,
                e.reason,
                size - e.offset_in_file,
                _base_offset_at(buf, e.offset_in_file),
            )
    except CorruptBatchError as e:
        scan.corrupt = CorruptSpot(
            scan.file,
            e.offset_in_file,
            e.reason,
            size - e.offset_in_file,
            _base_offset_at(buf, e.offset_in_file),
        )
    cut(scan.good_end)


def _base_offset_at(buf: mmap.mmap, pos: int) -> int | None:
    if len(buf) - pos < 8:
        return None
    return int.from_bytes(buf[pos : pos + 8], "big", signed=True)


def read_at(path: Path, pos: int, n: int) -> bytes:
    with path.open("rb") as f:
        f.seek(pos)
        return f.read(n)


def read_batch_at(path: Path, pos: int) -> bytes:
    """The bytes of the one batch at `pos` (its Length field says how many)."""
    prefix = read_at(path, pos, LOG_OVERHEAD)
    if len(prefix) < LOG_OVERHEAD:
        raise TruncatedBatchError(pos, "file ends inside a batch header")
    length = int.from_bytes(prefix[8:12], "big", signed=True)
    if length <= 0 or length > MAX_BATCH_BYTES:
        raise CorruptBatchError(pos, f"impossible batch length {length}")
    return read_at(path, pos, length + LOG_OVERHEAD)


def header_at(path: Path, pos: int) -> BatchHeader:
    return read_batch_header(read_batch_at(path, pos), 0)
