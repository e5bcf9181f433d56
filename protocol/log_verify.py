"""Checking a metadata log file end to end: every CRC, every record decoded, and every record and
batch re-encoded to the very bytes on disk. The first problem stops the check and is reported
with the file, the byte position and the offset it concerns.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from protocol.control_records import control_record_name, decode_control_record, encode_control_record
from protocol.framing import decode_records, encode_record
from protocol.log_files import read_bytes
from protocol.message import MessageDecodeError, MessageEncodeError
from protocol.metadata_records import record_name
from protocol.record_batch import LOG_OVERHEAD, CorruptBatchError, RecordBatch, decode_batch, encode_batch


@dataclass(frozen=True)
class VerifyFailure:
    path: Path
    position: int
    offset: int | None
    reason: str

    def __str__(self) -> str:
        at = f"file position {self.position}"
        if self.offset is not None:
            at += f", offset {self.offset}"
        return f"{self.path}: {at}: {self.reason}"


@dataclass
class FileReport:
    path: Path
    size: int = 0
    batches: int = 0
    control_batches: int = 0
    records: int = 0
    by_type: Counter[str] = field(default_factory=Counter)
    failure: VerifyFailure | None = None

    @property
    def ok(self) -> bool:
        return self.failure is None


def _check_records(batch: RecordBatch, report: FileReport, pos: int) -> VerifyFailure | None:
    path = report.path
    if batch.is_control:
        for r in batch.records:
            offset = batch.base_offset + r.offset_delta
            try:
                decoded = decode_control_record(r.key, r.value)
                key, value = encode_control_record(decoded)
            except (MessageDecodeError, MessageEncodeError) as e:
                return VerifyFailure(path, pos, offset, f"control record: {e}")
            if key != r.key or value != r.value:
                return VerifyFailure(path, pos, offset, "control record re-encodes to different bytes")
            report.by_type[control_record_name(getattr(decoded, "message", decoded))] += 1
        return None
    values = [r.value for r in batch.records]
    for r, value in zip(batch.records, values, strict=True):
        if value is None:
            return VerifyFailure(
                path, pos, batch.base_offset + r.offset_delta, "metadata record with a null value"
            )
    try:
        decoded = decode_records(values)  # type: ignore[arg-type]
    except MessageDecodeError as e:
        return _locate_bad_record(batch, values, path, pos, e)  # type: ignore[arg-type]
    for r, value, amv in zip(batch.records, values, decoded, strict=True):
        offset = batch.base_offset + r.offset_delta
        try:
            again = encode_record(amv)
        except MessageEncodeError as e:
            return VerifyFailure(path, pos, offset, f"{record_name(amv.message)} v{amv.version}: {e}")
        if again != value:
            return VerifyFailure(
                path, pos, offset, f"{record_name(amv.message)} v{amv.version} re-encodes to different bytes"
            )
        report.by_type[record_name(amv.message)] += 1
    return None


def _locate_bad_record(
    batch: RecordBatch, values: list[bytes], path: Path, pos: int, error: Exception
) -> VerifyFailure:
    for r, value in zip(batch.records, values, strict=True):
        try:
            decode_records([value])
        except MessageDecodeError as e:
            return VerifyFailure(path, pos, batch.base_offset + r.offset_delta, str(e))
    return VerifyFailure(path, pos, batch.base_offset, str(error))


def verify_file(path: Path) -> FileReport:
    """Check one segment, snapshot or bootstrap.checkpoint; stops at the first problem."""
    data = read_bytes(path)
    report = FileReport(path, size=len(data))
    pos = 0
    end = len(data)
    next_offset: int | None = None
    last_epoch = -1
    while pos < end:
        try:
            batch = decode_batch(data, pos, verify_crc=True)
        except CorruptBatchError as e:
            report.failure = VerifyFailure(path, e.offset_in_file, _offset_hint(data, pos), e.reason)
            return report
        size = batch.length + LOG_OVERHEAD
        # BaseOffset and PartitionLeaderEpoch sit outside the CRC: offsets must follow on and
        # epochs never go back, or a damaged header would pass unnoticed
        if next_offset is not None and batch.base_offset != next_offset:
            report.failure = VerifyFailure(
                path, pos, batch.base_offset, f"batch base offset {batch.base_offset}, expected {next_offset}"
            )
            return report
        if batch.partition_leader_epoch < last_epoch:
            report.failure = VerifyFailure(
                path,
                pos,
                batch.base_offset,
                f"leader epoch {batch.partition_leader_epoch} is lower than the previous batch's {last_epoch}",
            )
            return report
        if batch.last_offset_delta != len(batch.records) - 1 and batch.records:
            report.failure = VerifyFailure(
                path,
                pos,
                batch.base_offset,
                f"last offset delta {batch.last_offset_delta} with {len(batch.records)} records",
            )
            return report
        next_offset = batch.base_offset + batch.last_offset_delta + 1
        last_epoch = batch.partition_leader_epoch
        report.batches += 1
        report.control_batches += batch.is_control
        report.records += len(batch.records)
        failure = _check_records(batch, report, pos)
        if failure is None and encode_batch(batch) != data[pos : pos + size]:
            failure = VerifyFailure(path, pos, batch.base_offset, "batch re-encodes to different bytes")
        if failure is not None:
            report.failure = failure
            return report
        pos += size
    return report


def _offset_hint(data: bytes, pos: int) -> int | None:
    """The base offset a damaged batch claims, when its first 8 bytes are there to read."""
    if len(data) - pos >= 8:
        return int.from_bytes(data[pos : pos + 8], "big", signed=True)
    return None
