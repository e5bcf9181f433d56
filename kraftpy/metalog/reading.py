"""Records out of batches: what replay and the tools iterate over.

Each entry carries its offset and where its batch came from, so an error can always name the
file and position. Batches were CRC-checked when the log was opened; a standalone file is
checked here as it is read.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

from kraftpy.log.batch_io import crc_matches
from kraftpy.log.errors import CorruptLogError
from protocol.message import MessageDecodeError
from protocol.metadata_batches import DecodedBatch, read_metadata_batch
from protocol.record_batch import (
    LOG_OVERHEAD,
    BatchHeader,
    CorruptBatchError,
    RecordBatch,
    iter_batches,
    read_batch_header,
)

_tuple_new = tuple.__new__


class BatchInfo(NamedTuple):
    """Where a record's batch came from (a tuple: one is made per batch on the replay path)."""

    base_offset: int
    last_offset: int
    epoch: int
    timestamp_ms: int
    is_control: bool
    path: Path
    position: int
    from_snapshot: bool = False


class LogEntry(NamedTuple):
    """One record: its offset, the record (an ApiMessageAndVersion, or for control batches
    whatever protocol.control_records decodes), and its batch."""

    offset: int
    record: Any
    batch: BatchInfo


class EntryRun(NamedTuple):
    """The records of one batch, for a reader that replays a batch at a time: `entries()` without a
    tuple and a generator step per record. Record i is at `offset + i * step`: step 1 in the log,
    0 in a snapshot, whose records all carry its last contained offset."""

    offset: int
    step: int
    records: list[Any]
    batch: BatchInfo


def iter_record_batches(data: bytes, path: Path) -> Iterator[tuple[int, RecordBatch]]:
    """(position, batch) for every batch in `data`, errors naming `path` and the position."""
    pos = 0
    try:
        for batch in iter_batches(data):
            yield pos, batch
            pos += batch.size
    except CorruptBatchError as e:
        raise CorruptLogError(path, e.offset_in_file, e.reason) from None


def decode_at(
    data: bytes, pos: int, path: Path, base_position: int = 0, *, verify_crc: bool = True
) -> DecodedBatch:
    """The batch at `pos` of `data` with its records decoded; errors name `path` and the position in
    the file (`data` starts at `base_position` of it)."""
    try:
        return read_metadata_batch(data, pos, verify_crc)
    except CorruptBatchError as e:
        raise CorruptLogError(path, base_position + e.offset_in_file, e.reason) from None
    except (MessageDecodeError, ValueError) as e:
        raise CorruptLogError(path, base_position + pos, f"undecodable record: {e}") from None


def iter_decoded(data: bytes, path: Path, base_position: int = 0) -> Iterator[tuple[int, DecodedBatch]]:
    """(file position, batch with its records decoded) for every batch of `data`, read with the
    codec's in-place reader; `base_position` is where `data` starts in its file."""
    pos = 0
    end = len(data)
    while pos < end:
        db = decode_at(data, pos, path, base_position)
        yield base_position + pos, db
        pos += db.header.length + LOG_OVERHEAD


def checked_batches(data: bytes, path: Path) -> list[tuple[int, BatchHeader]]:
    """(position, header) of every batch of `data`, each whole and matching its CRC-32C, the
    records left undecoded: the framing of a file checked without holding all of its records."""
    found: list[tuple[int, BatchHeader]] = []
    pos = 0
    end = len(data)
    view = memoryview(data)
    try:
        while pos < end:
            h = read_batch_header(data, pos)
            if not crc_matches(view[pos : pos + h.size], h):
                raise CorruptBatchError(pos, f"CRC-32C mismatch: stored {h.crc:#010x}")
            found.append((pos, h))
            pos += h.size
    except CorruptBatchError as e:
        raise CorruptLogError(path, e.offset_in_file, e.reason) from None
    finally:
        view.release()
    return found


def decoded_run(
    db: DecodedBatch,
    path: Path,
    position: int,
    *,
    include_control: bool = False,
    min_offset: int = 0,
    from_snapshot: bool = False,
) -> EntryRun | None:
    """The records of a decoded batch from `min_offset` on (KRaft writes offset delta = record
    index); None for a control batch left out."""
    h = db.header
    control = db.is_control
    if control and not include_control:
        return None
    base = h.base_offset
    info = BatchInfo(
        base,
        base + h.last_offset_delta,
        h.partition_leader_epoch,
        h.max_timestamp,
        control,
        path,
        position,
        from_snapshot,
    )
    records = db.records
    if min_offset <= base:
        return _tuple_new(EntryRun, (base, 1, records, info))
    return _tuple_new(EntryRun, (min_offset, 1, records[min_offset - base :], info))


def run_entries(offset: int, step: int, records: list[Any], batch: BatchInfo) -> list[LogEntry]:
    """A run's records as entries (see EntryRun)."""
    # tuple.__new__ directly: LogEntry() is a Python-level call per record.
    if step:
        return [_tuple_new(LogEntry, (offset + i, r, batch)) for i, r in enumerate(records)]
    return [_tuple_new(LogEntry, (offset, r, batch)) for r in records]
