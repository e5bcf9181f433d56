"""The in-place reader gives exactly what the general path gives, and falls back when it must."""

from __future__ import annotations

from pathlib import Path

import pytest

from protocol.control_records import control_records
from protocol.framing import ApiMessageAndVersion, encode_record
from protocol.message import MessageDecodeError
from protocol.metadata_batches import iter_metadata_batches, read_metadata_batch
from protocol.metadata_records import NoOpRecord, PartitionChangeRecord, TopicRecord
from protocol.record_batch import (
    CorruptBatchError,
    Record,
    RecordBatch,
    TruncatedBatchError,
    build_metadata_batch,
    encode_batch,
    iter_batches,
    metadata_records,
)
from protocol.uuid import Uuid

T = Uuid.random()


def _general(data: bytes) -> list[tuple[int, list[object]]]:
    return [
        (b.base_offset, control_records(b) if b.is_control else metadata_records(b))
        for b in iter_batches(data)
    ]


def _fast(data: bytes) -> list[tuple[int, list[object]]]:
    return [(d.base_offset, d.records) for d in iter_metadata_batches(data)]


def test_same_records_as_the_general_path_on_every_sample(samples_dir: Path) -> None:
    for path in sorted(p for p in samples_dir.rglob("*") if p.suffix in (".log", ".checkpoint")):
        data = path.read_bytes()
        assert _fast(data) == _general(data), path


def test_large_batches_use_two_byte_offset_deltas() -> None:
    recs = [
        ApiMessageAndVersion(PartitionChangeRecord(PartitionId=i, TopicId=T, Leader=i % 5), 0)
        for i in range(300)
    ]
    recs += [
        ApiMessageAndVersion(NoOpRecord(), 0),
        ApiMessageAndVersion(TopicRecord(Name="x" * 200, TopicId=T), 0),
    ]
    data = build_metadata_batch(10, 2, 3, recs)
    d = read_metadata_batch(data)
    assert d.records == recs
    assert (d.position, d.base_offset, d.header.records_count, d.is_control) == (0, 10, 302, False)


def test_records_of_another_shape_take_the_general_path() -> None:
    value = encode_record(ApiMessageAndVersion(NoOpRecord(), 0))
    batch = RecordBatch(
        base_offset=0,
        last_offset_delta=1,
        records=[Record(0, 5, 0, None, value, []), Record(0, 0, 1, b"k", value, [("h", b"v")])],
    )
    assert read_metadata_batch(encode_batch(batch)).records == [ApiMessageAndVersion(NoOpRecord(), 0)] * 2


def test_unknown_types_and_bad_records() -> None:
    unknown_value = bytes.fromhex("01630007")
    batch = RecordBatch(last_offset_delta=0, records=[Record(0, 0, 0, None, unknown_value, [])])
    (amv,) = read_metadata_batch(encode_batch(batch)).records
    assert amv.message.api_key == 99
    broken = RecordBatch(
        last_offset_delta=0, records=[Record(0, 0, 0, None, bytes.fromhex("010200057400"), [])]
    )
    with pytest.raises(MessageDecodeError, match="TopicRecord"):
        read_metadata_batch(encode_batch(broken))
    trailing = RecordBatch(
        last_offset_delta=0, records=[Record(0, 0, 0, None, bytes.fromhex("0114000000"), [])]
    )
    with pytest.raises(MessageDecodeError, match="NoOpRecord"):
        read_metadata_batch(encode_batch(trailing))


def test_crc_and_truncation_errors() -> None:
    data = build_metadata_batch(0, 1, 0, [ApiMessageAndVersion(NoOpRecord(), 0)])
    bad = bytearray(data)
    bad[-3] ^= 1
    with pytest.raises(CorruptBatchError, match="CRC"):
        read_metadata_batch(bytes(bad))
    with pytest.raises(TruncatedBatchError):
        list(iter_metadata_batches(data + data[:30]))
