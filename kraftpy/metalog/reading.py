"""Records out of batches: what replay and the tools iterate over.

Each entry carries its offset and where its batch came from, so an error can always name the
file and position. Batches were CRC-checked when the log was opened; a standalone file is
checked here as it is read.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from kraftpy.metalog.errors import CorruptLogError
from protocol.control_records import control_records
from protocol.framing import ApiMessageAndVersion
from protocol.message import MessageDecodeError
from protocol.record_batch import CorruptBatchError, RecordBatch, iter_batches, metadata_records


@dataclass(frozen=True, slots=True)
class BatchInfo:
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


def batch_entries(
    batch: RecordBatch,
    path: Path,
    position: int,
    *,
    include_control: bool = False,
    min_offset: int = 0,
    from_snapshot: bool = False,
) -> list[LogEntry]:
    if batch.is_control and not include_control:
        return []
    info = BatchInfo(
        batch.base_offset,
        batch.last_offset,
        batch.partition_leader_epoch,
        batch.max_timestamp,
        batch.is_control,
        path,
        position,
        from_snapshot,
    )
    try:
        decoded = control_records(batch) if batch.is_control else metadata_records(batch)
    except (MessageDecodeError, ValueError) as e:
        raise CorruptLogError(
            path, position, f"undecodable record in the batch at offset {batch.base_offset}: {e}"
        ) from None
    base = batch.base_offset
    return [
        LogEntry(base + r.offset_delta, rec, info)
        for r, rec in zip(batch.records, decoded, strict=True)
        if base + r.offset_delta >= min_offset
    ]


def iter_buffer_batches(data: bytes, path: Path) -> Iterator[tuple[int, RecordBatch]]:
    """(position, batch) for every batch in `data`, errors naming `path` and the position."""
    pos = 0
    try:
        for batch in iter_batches(data):
            yield pos, batch
            pos += batch.size
    except CorruptBatchError as e:
        raise CorruptLogError(path, e.offset_in_file, e.reason) from None


def metadata_entries(entries: Iterator[LogEntry]) -> Iterator[tuple[int, ApiMessageAndVersion, BatchInfo]]:
    for e in entries:
        if not e.batch.is_control:
            yield e.offset, e.record, e.batch
