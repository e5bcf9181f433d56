"""Appends, reads, segment roll, the offset index and retention of a partition log on a real dir."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import pytest
from crc32c import crc32c

from broker.storage import LogConfig, OffsetOutOfRangeError, PartitionLog, UnexpectedAppendOffsetError
from kraftpy.log.partition_metadata import read_partition_metadata
from protocol.errors import Errors, KafkaError
from protocol.record_batch import CRC_START, decode_batch, iter_batches
from protocol.uuid import Uuid
from tests.broker_storage.batches import make_batch, value_batch

SMALL = LogConfig(segment_bytes=4_000, index_interval_bytes=500)


def open_log(tmp_path: Path, config: LogConfig = SMALL, **kw: object) -> PartitionLog:
    return PartitionLog.open(tmp_path / "orders-3", config=config, **kw)  # type: ignore[arg-type]


def fill(log: PartitionLog, batches: int, records: int = 4, epoch: int = 1, ts: int = 1_000) -> None:
    for i in range(batches):
        log.append_as_leader(value_batch(records, tag=i, timestamp=ts), leader_epoch=epoch, now_ms=ts)


def offsets_of(data: bytes) -> list[int]:
    return [b.base_offset for b in iter_batches(data)]


def test_new_log_is_empty_and_writes_partition_metadata(tmp_path: Path) -> None:
    topic_id = Uuid.random()
    log = open_log(tmp_path, topic_id=topic_id)
    assert (log.log_start_offset, log.log_end_offset, log.size_bytes) == (0, 0, 0)
    assert log.topic_partition == ("orders", 3)
    assert read_partition_metadata(tmp_path / "orders-3") == topic_id
    text = (tmp_path / "orders-3" / "partition.metadata").read_text()
    assert text == f"version: 0\ntopic_id: {topic_id}"
    assert log.read(0, 1000).records == b""
    log.close()


def test_a_closed_log_answers_not_leader_or_follower(tmp_path: Path) -> None:
    """A fetch or produce that reaches a log closed under it (a broker shutting down, a replica
    deleted) gets a retriable error code, not UNKNOWN_SERVER_ERROR."""
    from broker.storage import LogClosedError
    from protocol.errors import Errors

    log = open_log(tmp_path)
    log.close()
    with pytest.raises(LogClosedError) as e:
        log.read(0, 1000)
    assert e.value.code is Errors.NOT_LEADER_OR_FOLLOWER


def test_leader_append_assigns_offsets_and_epoch_and_keeps_crc(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    first = log.append_as_leader(value_batch(3, tag=0), leader_epoch=7, now_ms=1)
    second = log.append_as_leader(value_batch(2, tag=1), leader_epoch=7, now_ms=1)
    assert (first.first_offset, first.last_offset) == (0, 2)
    assert (second.first_offset, second.last_offset) == (3, 4)
    assert log.log_end_offset == 5
    data = log.read(0, 1 << 20).records
    batches = list(iter_batches(data))  # decode_batch verifies each CRC-32C
    assert [(b.base_offset, b.last_offset, b.partition_leader_epoch) for b in batches] == [
        (0, 2, 7),
        (3, 4, 7),
    ]
    assert [r.value[:4] for r in batches[1].records] == [b"1:0:", b"1:1:"]
    log.close()


def test_every_stored_batch_is_byte_compatible(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    fill(log, 30)
    log.close()
    seg_files = sorted((tmp_path / "orders-3").glob("*.log"))
    assert len(seg_files) > 1
    expected = 0
    for f in seg_files:
        assert f.name == f"{int(f.stem):020d}.log"
        raw = f.read_bytes()
        for batch in iter_batches(raw, verify_crc=True):
            assert batch.base_offset == expected
            expected = batch.next_offset
        # The CRC is Kafka's: CRC-32C from Attributes to the end of the batch.
        b = decode_batch(raw)
        assert crc32c(raw[CRC_START : b.size]) == b.crc
    assert expected == 120


def test_read_respects_max_bytes_max_offset_and_returns_whole_batches(tmp_path: Path) -> None:
    log = open_log(tmp_path, LogConfig())
    fill(log, 10)  # 10 batches of 4 records
    one = len(log.read(0, 1 << 20).records) // 10
    r = log.read(5, one * 3 + one // 2)
    assert offsets_of(r.records) == [4, 8, 12] and r.next_offset == 16
    # An offset inside a batch returns that whole batch.
    assert offsets_of(log.read(6, one).records) == [4]
    # Less than one batch of room still returns one batch (KIP-74), unless asked not to.
    assert offsets_of(log.read(0, 10).records) == [0]
    assert log.read(0, 10, min_one_batch=False).records == b""
    # max_offset (the high watermark) is exclusive and never splits a batch.
    assert offsets_of(log.read(0, 1 << 20, max_offset=12).records) == [0, 4, 8]
    assert offsets_of(log.read(0, 1 << 20, max_offset=13).records) == [0, 4, 8]
    assert log.read(12, 1 << 20, max_offset=12).records == b""
    assert log.read(40, 100).records == b"" and log.read(40, 100).next_offset == 40
    with pytest.raises(OffsetOutOfRangeError) as e:
        log.read(41, 100)
    assert e.value.code == Errors.OFFSET_OUT_OF_RANGE
    log.close()


def test_segments_roll_on_size_and_reads_cross_them(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    fill(log, 40)
    bases = log.segment_base_offsets
    assert len(bases) > 3 and bases[0] == 0
    assert all(s.size <= SMALL.segment_bytes for s in log.segments)
    offset, seen = 0, []
    while offset < log.log_end_offset:
        r = log.read(offset, 700)
        seen += offsets_of(r.records)
        offset = r.next_offset
    assert seen == list(range(0, 160, 4))
    log.close()


def test_segment_rolls_on_segment_ms_by_batch_timestamps(tmp_path: Path) -> None:
    log = open_log(tmp_path, LogConfig(segment_ms=60_000))
    log.append_as_leader(value_batch(1, timestamp=1_000), 0, now_ms=1_000)
    log.append_as_leader(value_batch(1, timestamp=50_000), 0, now_ms=50_000)
    assert log.segment_base_offsets == [0]
    log.append_as_leader(value_batch(1, timestamp=61_001), 0, now_ms=61_001)
    assert log.segment_base_offsets == [0, 2]
    log.close()


def test_offset_index_is_sparse_and_points_at_batches(tmp_path: Path) -> None:
    log = open_log(tmp_path, LogConfig(index_interval_bytes=1_000))
    fill(log, 40)
    seg = log.segments[0]
    entries = seg.offset_index.entries
    assert entries, "one entry about every index.interval.bytes"
    raw = (tmp_path / "orders-3" / "00000000000000000000.log").read_bytes()
    index_raw = (tmp_path / "orders-3" / "00000000000000000000.index").read_bytes()
    assert len(index_raw) == 8 * len(entries)
    for i, (offset, position) in enumerate(entries):
        assert int.from_bytes(index_raw[8 * i : 8 * i + 4], "big") == offset
        assert decode_batch(raw, position).last_offset == offset
    assert all(b[1] - a[1] > 1_000 for a, b in itertools.pairwise(entries))
    log.close()


def test_leader_append_rejects_bad_batches_and_changes_nothing(tmp_path: Path) -> None:
    log = open_log(tmp_path, LogConfig(max_message_bytes=2_000))
    good = bytearray(value_batch(3))
    bad_crc = bytearray(good)
    bad_crc[-1] ^= 0xFF
    cases = {
        Errors.CORRUPT_MESSAGE: [bytes(bad_crc), b"\x00" * 5 + b"\x01" * 60],
        Errors.MESSAGE_TOO_LARGE: [value_batch(30, size=100)],
    }
    for code, inputs in cases.items():
        for data in inputs:
            with pytest.raises(KafkaError) as e:
                log.append_as_leader(data, 1)
            assert e.value.code == code
    for data in (value_batch(1, base_offset=5), good + good, good[:-3]):
        with pytest.raises(KafkaError):
            log.append_as_leader(bytes(data), 1)
    assert (log.log_end_offset, log.size_bytes) == (0, 0)
    assert log.append_as_leader(b"", 1).valid_bytes == 0
    log.close()


def test_follower_append_keeps_offsets_and_epochs(tmp_path: Path) -> None:
    (tmp_path / "leader").mkdir()
    leader = PartitionLog.open(tmp_path / "leader" / "t-0")
    leader.append_as_leader(value_batch(2, tag=0), 3)
    leader.append_as_leader(value_batch(2, tag=1), 4)
    leader.append_as_leader(value_batch(2, tag=2), 4)
    fetched = leader.read(0, 1 << 20).records
    (tmp_path / "follower").mkdir()
    follower = PartitionLog.open(tmp_path / "follower" / "t-0")
    partial = fetched + fetched[:30]  # a fetch response may end with part of a batch
    r = follower.append_as_follower(partial)
    assert (r.first_offset, r.last_offset, r.num_batches, r.valid_bytes) == (0, 5, 3, len(fetched))
    assert follower.read(0, 1 << 20).records == fetched
    assert [(e.epoch, e.start_offset) for e in follower.epoch_cache.entries] == [(3, 0), (4, 2)]
    with pytest.raises(UnexpectedAppendOffsetError):
        follower.append_as_follower(fetched)
    leader.close()
    follower.close()


def test_retention_by_bytes_deletes_whole_old_segments_below_high_watermark(tmp_path: Path) -> None:
    log = open_log(tmp_path, LogConfig(segment_bytes=4_000, retention_bytes=8_000, retention_ms=-1))
    fill(log, 40)
    total, bases = log.size_bytes, log.segment_base_offsets
    assert log.delete_old_segments(high_watermark=0) == 0, "nothing above the high watermark goes"
    deleted = log.delete_old_segments(high_watermark=log.log_end_offset)
    assert deleted > 0
    assert log.size_bytes <= 8_000 + 4_000 and log.size_bytes < total
    assert log.log_start_offset == log.segment_base_offsets[0] == bases[deleted]
    assert not (tmp_path / "orders-3" / "00000000000000000000.log").exists()
    with pytest.raises(OffsetOutOfRangeError):
        log.read(0, 100)
    assert offsets_of(log.read(log.log_start_offset, 200).records)[0] == log.log_start_offset
    log.close()


def test_retention_by_time_can_empty_the_log_and_keeps_the_end_offset(tmp_path: Path) -> None:
    log = open_log(tmp_path, LogConfig(segment_bytes=4_000, retention_ms=10_000))
    fill(log, 40, ts=1_000)
    leo = log.log_end_offset
    assert log.delete_old_segments(leo, now_ms=5_000) == 0
    assert log.delete_old_segments(leo, now_ms=20_000) > 0
    assert (log.log_start_offset, log.log_end_offset, log.size_bytes) == (leo, leo, 0)
    assert log.segment_base_offsets == [leo]
    r = log.append_as_leader(value_batch(1, timestamp=30_000), 2, now_ms=30_000)
    assert r.first_offset == leo
    log.close()


def test_log_start_offset_moves_and_breached_segments_go(tmp_path: Path) -> None:
    log = open_log(tmp_path, LogConfig(segment_bytes=4_000, retention_ms=-1))
    fill(log, 40)
    second = log.segment_base_offsets[1]
    assert log.increment_log_start_offset(second + 1)
    assert log.segment_base_offsets[0] == 0
    assert log.delete_old_segments(high_watermark=log.log_end_offset) == 1
    assert log.segment_base_offsets[0] == second
    assert log.log_start_offset == second + 1
    log.close()


def test_reopen_restores_offsets_start_and_reads(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    fill(log, 40)
    log.increment_log_start_offset(10)
    before = log.read(10, 1 << 20).records
    leo, start = log.log_end_offset, log.log_start_offset
    log.close()
    log = open_log(tmp_path, log_start_offset=start, recovery_point=leo)
    assert (log.log_start_offset, log.log_end_offset) == (start, leo)
    assert log.read(10, 1 << 20).records == before
    assert log.recovery_report is None
    log.close()


def test_close_releases_every_file_handle(tmp_path: Path) -> None:
    def open_fds_under(path: Path) -> list[str]:
        out = []
        for fd in os.listdir("/proc/self/fd"):
            try:
                target = os.readlink(f"/proc/self/fd/{fd}")
            except FileNotFoundError:
                continue
            if target.startswith(str(path)):
                out.append(target)
        return out

    log = open_log(tmp_path)
    fill(log, 40)
    log.read(0, 100)
    assert open_fds_under(tmp_path)
    log.close()
    assert open_fds_under(tmp_path) == []
    log = open_log(tmp_path)
    log.close_handles()
    assert open_fds_under(tmp_path) == []


def test_delete_removes_the_dir(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    fill(log, 5)
    log.delete()
    assert list(tmp_path.iterdir()) == []


def test_flush_moves_recovery_point(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    fill(log, 3)
    assert log.recovery_point == 0
    log.flush()
    assert log.recovery_point == log.log_end_offset == 12
    log.close()


def test_idempotent_batch_builder_round_trips() -> None:
    raw = make_batch([b"a"], producer_id=9, producer_epoch=1, base_sequence=4)
    b = decode_batch(raw)
    assert (b.producer_id, b.producer_epoch, b.base_sequence) == (9, 1, 4)


def _open_files_under(path: Path) -> int:
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}").startswith(str(path)):
                n += 1
        except OSError:
            continue
    return n


def test_older_segments_hold_no_descriptor_while_idle(tmp_path: Path) -> None:
    """Issue: each open partition held a descriptor per segment, so brokers ran out of them."""
    log = open_log(tmp_path)
    fill(log, 120)
    segments = len(log.segment_base_offsets)
    assert segments > 10
    assert _open_files_under(log.dir) <= 3  # the active segment and its two indexes at most
    log.close()

    log = open_log(tmp_path)
    assert _open_files_under(log.dir) <= 3
    everything = b""
    offset = log.log_start_offset
    while offset < log.log_end_offset:  # a catch-up read through every segment
        r = log.read(offset, 10_000)
        everything += r.records
        offset = r.next_offset
    assert offsets_of(everything) == list(range(0, log.log_end_offset, 4))  # every batch, once
    assert _open_files_under(log.dir) <= 3
    fill(log, 5)  # writes and rolls go on as before
    log.flush()
    assert len(log.segment_base_offsets) >= segments
    log.close()
    assert _open_files_under(tmp_path) == 0
