"""Record batch v2: the reference's worked example, every header field, corruption and truncation, and
metadata batches written byte for byte as their records framed one by one."""

from __future__ import annotations

import struct

import pytest
from crc32c import crc32c
from hypothesis import given
from hypothesis import strategies as st

from protocol.control_records import SnapshotFooterRecord, SnapshotHeaderRecord, control_records
from protocol.framing import ApiMessageAndVersion, decode_record, encode_record
from protocol.message import MessageEncodeError
from protocol.metadata_records import FeatureLevelRecord, NoOpRecord, PartitionChangeRecord, TopicRecord
from protocol.record_batch import (
    CONTROL_FLAG,
    TRANSACTIONAL_FLAG,
    CorruptBatchError,
    Record,
    RecordBatch,
    TruncatedBatchError,
    build_control_batch,
    build_metadata_batch,
    decode_batch,
    encode_batch,
    iter_batch_positions,
    iter_batches,
    metadata_records,
    read_batch_header,
)
from protocol.uuid import Uuid

T = Uuid.from_longs(0x0123456789ABCDEF, 0x0FEDCBA987654321)

# reference 8.3: one NoOpRecord, base offset 0, leader epoch 1, timestamp 0
NOOP_BATCH = bytes.fromhex(
    "0000000000000000 0000003c 00000001 02 3a80795f 0000 00000000 0000000000000000 0000000000000000"
    " ffffffffffffffff ffff ffffffff 00000001 14 00 00 00 01 08 01140000 00"
)


def test_crc32c_is_castagnoli() -> None:
    assert crc32c(b"123456789") == 0xE3069283


def test_worked_example_is_built_byte_for_byte() -> None:
    assert len(NOOP_BATCH) == 72
    assert build_metadata_batch(0, 1, 0, [ApiMessageAndVersion(NoOpRecord(), 0)]) == NOOP_BATCH


def test_worked_example_decodes_every_header_field() -> None:
    b = decode_batch(NOOP_BATCH)
    assert (b.base_offset, b.partition_leader_epoch, b.magic, b.crc, b.attributes) == (0, 1, 2, 0x3A80795F, 0)
    assert (b.last_offset_delta, b.base_timestamp, b.max_timestamp) == (0, 0, 0)
    assert (b.producer_id, b.producer_epoch, b.base_sequence) == (-1, -1, -1)
    assert (b.length, b.size, b.last_offset, b.next_offset) == (60, 72, 0, 1)
    assert not b.is_control and not b.is_transactional
    assert b.records == [Record(0, 0, 0, None, bytes.fromhex("01140000"), [])]
    assert metadata_records(b) == [ApiMessageAndVersion(NoOpRecord(), 0)]
    assert encode_batch(b) == NOOP_BATCH


def test_header_only_read() -> None:
    h = read_batch_header(b"junk" + NOOP_BATCH, 4)
    assert (h.base_offset, h.size, h.records_count, h.partition_leader_epoch) == (0, 72, 1, 1)


def test_metadata_batch_offsets_and_timestamps() -> None:
    recs = [ApiMessageAndVersion(FeatureLevelRecord(Name="metadata.version", FeatureLevel=21), 0)] + [
        ApiMessageAndVersion(NoOpRecord(), 0)
    ] * 3
    raw = build_metadata_batch(100, 7, 1_700_000_000_000, recs)
    b = decode_batch(raw)
    assert (b.base_offset, b.last_offset, b.partition_leader_epoch) == (100, 103, 7)
    assert b.base_timestamp == b.max_timestamp == 1_700_000_000_000
    assert [r.offset_delta for r in b.records] == [0, 1, 2, 3]
    assert metadata_records(b) == recs
    assert encode_batch(b) == raw


def test_control_batch_is_control_not_transactional() -> None:
    raw = build_control_batch(
        0, 3, 5, [SnapshotHeaderRecord(Version=0, LastContainedLogTimestamp=5), SnapshotFooterRecord()]
    )
    b = decode_batch(raw)
    assert b.attributes == CONTROL_FLAG and b.is_control and not b.is_transactional
    assert [r.key for r in b.records] == [bytes.fromhex("00000003"), bytes.fromhex("00000004")]
    assert [amv.message for amv in control_records(b)] == [
        SnapshotHeaderRecord(Version=0, LastContainedLogTimestamp=5),
        SnapshotFooterRecord(Version=0),
    ]
    with pytest.raises(ValueError, match="control batch"):
        metadata_records(b)


def test_general_batches_round_trip() -> None:
    batch = RecordBatch(
        base_offset=5,
        partition_leader_epoch=2,
        attributes=TRANSACTIONAL_FLAG,
        last_offset_delta=1,
        base_timestamp=10,
        max_timestamp=99,
        producer_id=42,
        producer_epoch=3,
        base_sequence=7,
        records=[
            Record(0, 0, 0, b"k", b"v", [("h", b"x"), ("n", None)]),
            Record(0, 89, 1, None, None, []),
        ],
    )
    raw = encode_batch(batch)
    again = decode_batch(raw)
    assert again.records == batch.records
    assert (again.producer_id, again.producer_epoch, again.base_sequence, again.is_transactional) == (
        42,
        3,
        7,
        True,
    )
    assert encode_batch(again) == raw
    assert batch.size == len(raw)


record_st = st.builds(
    Record,
    attributes=st.just(0),
    timestamp_delta=st.integers(-(2**40), 2**40),
    offset_delta=st.integers(0, 2**31 - 1),
    key=st.none() | st.binary(max_size=300),
    value=st.none() | st.binary(max_size=300),
    headers=st.lists(st.tuples(st.text(max_size=10), st.none() | st.binary(max_size=20)), max_size=3),
)


@given(st.lists(record_st, min_size=1, max_size=5), st.integers(0, 2**62), st.integers(-1, 2**31 - 1))
def test_any_batch_round_trips(records: list[Record], base_offset: int, epoch: int) -> None:
    batch = RecordBatch(
        base_offset=base_offset,
        partition_leader_epoch=epoch,
        records=records,
        last_offset_delta=len(records) - 1,
    )
    raw = encode_batch(batch)
    again = decode_batch(raw)
    assert again.records == records
    assert encode_batch(again) == raw


def test_bad_crc_names_the_batch_position() -> None:
    two = NOOP_BATCH + build_metadata_batch(1, 1, 0, [ApiMessageAndVersion(NoOpRecord(), 0)])
    bad = bytearray(two)
    bad[72 + 65] ^= 0x01
    batches = iter_batches(bytes(bad))
    next(batches)
    with pytest.raises(CorruptBatchError) as e:
        next(batches)
    assert e.value.offset_in_file == 72
    assert "CRC" in e.value.reason
    # the leader epoch is outside the CRC: changing it is not a CRC error
    moved = bytearray(NOOP_BATCH)
    moved[15] = 9
    assert decode_batch(bytes(moved)).partition_leader_epoch == 9


def test_crc_check_can_be_skipped() -> None:
    bad = bytearray(NOOP_BATCH)
    bad[-2] ^= 0x01
    with pytest.raises(CorruptBatchError):
        decode_batch(bytes(bad))
    assert decode_batch(bytes(bad), verify_crc=False).base_offset == 0


@pytest.mark.parametrize("cut", [1, 11, 12, 40, 61, 71])
def test_truncated_tail_is_a_truncation_error(cut: int) -> None:
    data = NOOP_BATCH + NOOP_BATCH[:cut]
    with pytest.raises(TruncatedBatchError) as e:
        list(iter_batches(data))
    assert e.value.offset_in_file == 72


def test_bad_magic_and_bad_length() -> None:
    bad = bytearray(NOOP_BATCH)
    bad[16] = 1
    with pytest.raises(CorruptBatchError, match="magic"):
        decode_batch(bytes(bad))
    bad = bytearray(NOOP_BATCH)
    bad[8:12] = struct.pack(">i", 10)
    with pytest.raises(CorruptBatchError, match="length"):
        decode_batch(bytes(bad))


def test_record_count_mismatch_is_corrupt() -> None:
    bad = bytearray(NOOP_BATCH)
    bad[57:61] = struct.pack(">i", 2)
    fixed = bad[:17] + struct.pack(">I", crc32c(bytes(bad[21:]))) + bad[21:]
    with pytest.raises(CorruptBatchError, match="records"):
        decode_batch(bytes(fixed))


def test_compressed_batches_are_refused_clearly() -> None:
    bad = bytearray(NOOP_BATCH)
    bad[22] = 1  # gzip
    fixed = bad[:17] + struct.pack(">I", crc32c(bytes(bad[21:]))) + bad[21:]
    with pytest.raises(CorruptBatchError, match="gzip"):
        decode_batch(bytes(fixed))


def test_positions_scan_and_memoryview_input() -> None:
    data = NOOP_BATCH + build_metadata_batch(1, 1, 0, [ApiMessageAndVersion(NoOpRecord(), 0)] * 2)
    assert [(p, h.base_offset, h.records_count) for p, h in iter_batch_positions(data)] == [
        (0, 0, 1),
        (72, 1, 2),
    ]
    b = decode_batch(memoryview(data), 72)
    assert b.base_offset == 1 and len(b.records) == 2


def test_empty_batches_cannot_be_built() -> None:
    with pytest.raises(ValueError):
        build_metadata_batch(0, 0, 0, [])


# ---- metadata batches are written as records framed one by one --------------------------------------


def _one_by_one(base: int, epoch: int, ts: int, records: list[ApiMessageAndVersion]) -> bytes:
    """The batch build_metadata_batch writes, built the plain way: each record framed on its own."""
    return encode_batch(
        RecordBatch(
            base_offset=base,
            partition_leader_epoch=epoch,
            attributes=0,
            last_offset_delta=len(records) - 1,
            base_timestamp=ts,
            max_timestamp=ts,
            producer_id=-1,
            producer_epoch=-1,
            base_sequence=-1,
            records=[
                Record(
                    attributes=0,
                    timestamp_delta=0,
                    offset_delta=i,
                    key=None,
                    value=encode_record(r),
                    headers=[],
                )
                for i, r in enumerate(records)
            ],
        )
    )


def test_metadata_batches_are_written_as_records_framed_one_by_one() -> None:
    # Runs of one type and version, types and versions alternating, an unknown record written back
    # as read, values longer than the varint table, and offset deltas past one byte.
    unknown = decode_record(bytes((1, 200, 3)) + b"raw bytes")
    records = (
        [
            ApiMessageAndVersion(PartitionChangeRecord(PartitionId=i, TopicId=T, Leader=-1), 1)
            for i in range(70)
        ]
        + [ApiMessageAndVersion(PartitionChangeRecord(PartitionId=1, TopicId=T, Isr=[1, 2]), 0)]
        + [ApiMessageAndVersion(TopicRecord(Name="t" * 5000, TopicId=T), 0), unknown]
        + [ApiMessageAndVersion(NoOpRecord(), 0), unknown, ApiMessageAndVersion(NoOpRecord(), 0)]
        + [
            ApiMessageAndVersion(PartitionChangeRecord(PartitionId=i, TopicId=T, Isr=[i]), 1)
            for i in range(9000)
        ]
    )
    assert type(unknown.message).__name__ == "UnknownRecord"
    for chunk in (records[:1], records[:75], records):
        assert build_metadata_batch(7, 3, 1_700_000_000_000, chunk) == _one_by_one(
            7, 3, 1_700_000_000_000, chunk
        )
    assert metadata_records(next(iter_batches(build_metadata_batch(0, 1, 2, records)))) == records


def test_a_record_that_cannot_be_written_fails_as_encode_record_says() -> None:
    bad = ApiMessageAndVersion(PartitionChangeRecord(PartitionId=1, TopicId=T, Isr=["x"]), 1)  # type: ignore[list-item]
    good = ApiMessageAndVersion(NoOpRecord(), 0)
    with pytest.raises(MessageEncodeError) as expected:
        encode_record(bad)
    with pytest.raises(MessageEncodeError) as got:
        build_metadata_batch(0, 0, 0, [good, bad, good])
    assert str(got.value) == str(expected.value)


def test_metadata_batches_built_on_several_threads_at_once_are_each_right(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The loop and the log's thread build metadata batches at the same time; the record heads they
    share must stay right for both, however their threads interleave."""
    import sys
    import threading

    import protocol.record_batch as rb

    sizes = (3000, 6000, 9000)
    batches = {n: [ApiMessageAndVersion(NoOpRecord(), 0)] * n for n in sizes}
    expected = {n: rb.build_metadata_batch(0, 1, 5, batches[n]) for n in sizes}
    got: dict[int, list[bytes]] = {n: [] for n in sizes}
    old_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter can
    try:
        for _ in range(10):
            monkeypatch.setattr(rb, "_RECORD_HEADS", [])
            threads = [
                threading.Thread(
                    target=lambda n=n: got[n].append(rb.build_metadata_batch(0, 1, 5, batches[n]))
                )
                for n in sizes
            ]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
    finally:
        sys.setswitchinterval(old_interval)
    for n in sizes:
        assert len(got[n]) == 10 and all(b == expected[n] for b in got[n]), n
