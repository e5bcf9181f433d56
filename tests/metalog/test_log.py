from __future__ import annotations

from pathlib import Path

import pytest

from kraftpy.metalog import LogError, MetadataLog, MetadataLogConfig, OffsetOutOfRangeError
from kraftpy.metalog.files import PARTITION_DIR
from protocol.record_batch import iter_batches, metadata_records
from tests.metalog.helpers import mv, noops, topic_records


def open_log(tmp_path: Path, **config: int) -> MetadataLog:
    return MetadataLog.open(tmp_path, MetadataLogConfig(**config))


def test_new_log_has_kafkas_layout(tmp_path: Path) -> None:
    with open_log(tmp_path) as log:
        assert log.dir == tmp_path / PARTITION_DIR
        assert (log.log_start_offset, log.log_end_offset) == (0, 0)
    part = tmp_path / PARTITION_DIR
    assert (part / "partition.metadata").read_bytes() == b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ"
    assert (part / "00000000000000000000.log").exists()


def test_append_flush_reopen(tmp_path: Path) -> None:
    with open_log(tmp_path) as log:
        assert log.append([mv()], leader_epoch=1, timestamp_ms=100) == (0, 0)
        assert log.append(topic_records(0), leader_epoch=1, timestamp_ms=101) == (1, 2)
        assert log.append(noops(3), leader_epoch=2, timestamp_ms=102) == (3, 5)
        assert log.flushed_offset == 0
        assert log.flush() == 6
        assert log.flushed_offset == 6
    part = tmp_path / PARTITION_DIR
    assert (part / "leader-epoch-checkpoint").read_text() == "0\n2\n1 0\n2 3\n"
    with open_log(tmp_path) as log:
        assert log.log_end_offset == 6
        assert log.recovery.clean and log.recovery.batches == 3
        assert [(e.offset, type(e.record.message).__name__, e.batch.epoch) for e in log.entries()] == [
            (0, "FeatureLevelRecord", 1),
            (1, "TopicRecord", 1),
            (2, "PartitionRecord", 1),
            (3, "NoOpRecord", 2),
            (4, "NoOpRecord", 2),
            (5, "NoOpRecord", 2),
        ]
        img = log.load_image()
        assert img.topics.get_topic("t0") is not None
        assert (img.provenance.offset, img.provenance.epoch, img.provenance.last_contained_log_time_ms) == (
            5,
            2,
            102,
        )
        assert log.append(noops(1), 2) == (6, 6)


def test_bad_appends_change_nothing(tmp_path: Path) -> None:
    with open_log(tmp_path) as log:
        log.append(noops(1), leader_epoch=5)
        with pytest.raises(ValueError):
            log.append([], 5)
        with pytest.raises(LogError, match="older than the log's latest 5"):
            log.append(noops(1), leader_epoch=4)
        assert log.log_end_offset == 1


def test_segments_roll_by_size(tmp_path: Path) -> None:
    with open_log(tmp_path, segment_bytes=1024) as log:
        for i in range(60):
            log.append(topic_records(i), leader_epoch=1, timestamp_ms=i)
        log.flush()
        bases = [s.base_offset for s in log.segments]
        assert len(bases) > 3
        assert all(s.size <= 1024 for s in log.segments)
        for seg, nxt in zip(log.segments, log.segments[1:], strict=False):
            assert seg.next_offset == nxt.base_offset
    files = sorted(p.name for p in (tmp_path / PARTITION_DIR).glob("*.log"))
    assert files == [f"{b:020d}.log" for b in bases]
    with open_log(tmp_path, segment_bytes=1024) as log:
        assert log.log_end_offset == 120
        assert len(list(log.entries())) == 120


def test_segments_have_kafkas_indexes_and_rolled_ones_are_synced(tmp_path: Path) -> None:
    with open_log(tmp_path, segment_bytes=4096) as log:
        for i in range(200):
            log.append(topic_records(i), leader_epoch=1, timestamp_ms=i)
        rolled = log.segments[:-1]
        assert rolled and all(not s.dirty for s in rolled)
        want = [s.offset_index.entries for s in log.segments]
    part = tmp_path / PARTITION_DIR
    logs = sorted(p.stem for p in part.glob("*.log"))
    assert sorted(p.stem for p in part.glob("*.index")) == logs
    assert sorted(p.stem for p in part.glob("*.timeindex")) == logs
    (part / f"{logs[0]}.index").unlink()
    (part / "00000000000099999999.index").write_bytes(b"")  # an orphan goes on open
    with open_log(tmp_path, segment_bytes=4096) as log:
        assert [s.offset_index.entries for s in log.segments] == want
        assert "00000000000099999999.index" in log.recovery.removed_files
        assert len(list(log.entries())) == 400
    assert (part / f"{logs[0]}.index").exists()


def test_segments_roll_by_time(tmp_path: Path) -> None:
    with open_log(tmp_path, segment_ms=1000) as log:
        log.append(noops(1), 1, timestamp_ms=0)
        log.append(noops(1), 1, timestamp_ms=999)
        log.append(noops(1), 1, timestamp_ms=1000)
        assert [s.base_offset for s in log.segments] == [0, 2]


def test_read_returns_whole_batches(tmp_path: Path) -> None:
    with open_log(tmp_path, segment_bytes=600) as log:
        for i in range(20):
            log.append(noops(3), leader_epoch=1, timestamp_ms=i)  # offsets 3i..3i+2
        everything = log.read(0, 1 << 20)
        batches = list(iter_batches(everything))
        assert [b.base_offset for b in batches] == list(range(0, 60, 3))
        # from the middle of a batch: starts at that batch
        part = list(iter_batches(log.read(31, 1 << 20)))
        assert part[0].base_offset == 30 and part[-1].last_offset == 59
        # max_bytes is respected, but at least one batch comes back
        one_size = batches[0].size
        assert len(log.read(0, 1)) == one_size
        assert len(log.read(0, 2 * one_size + 5)) == 2 * one_size
        assert log.read(60, 100) == b""
        with pytest.raises(OffsetOutOfRangeError):
            log.read(61, 100)
        records = [r for b in iter_batches(log.read(45, 10_000)) for r in metadata_records(b)]
        assert len(records) == 15


def test_append_raw_batches_copies_bytes_and_validates(tmp_path: Path) -> None:
    with MetadataLog.open(tmp_path / "leader", MetadataLogConfig(segment_bytes=500)) as leader:
        for i in range(10):
            leader.append(topic_records(i), leader_epoch=1 + i // 5, timestamp_ms=i)
        data = leader.read(0, 1 << 20)
        epochs = leader.epoch_entries()
    with MetadataLog.open(tmp_path / "follower", MetadataLogConfig(segment_bytes=500)) as follower:
        assert follower.append_raw_batches(data) == (0, 19)
        assert follower.read(0, 1 << 20) == data
        assert follower.epoch_entries() == epochs
        assert len(follower.segments) > 1
        # again: does not continue the log
        with pytest.raises(LogError, match="does not continue the log at 20"):
            follower.append_raw_batches(data)
        follower.truncate_to(0)
        # the third batch is damaged: the first two must not be written either
        sizes = [b.size for b in iter_batches(data)]
        bad = bytearray(data)
        bad[sum(sizes[:2]) + 70] ^= 0xFF
        with pytest.raises(LogError, match="batch at offset 4 fails its CRC-32C check"):
            follower.append_raw_batches(bytes(bad))
        assert follower.log_end_offset == 0
        with pytest.raises(LogError, match="position 0"):
            follower.append_raw_batches(data[:30])


def test_truncate_to(tmp_path: Path) -> None:
    with open_log(tmp_path, segment_bytes=400) as log:
        for i in range(12):
            log.append(noops(2), leader_epoch=1 + i // 4, timestamp_ms=i)  # epoch 1: 0-7, 2: 8-15, 3: 16-23
        assert len(log.segments) > 2
        log.truncate_to(11)  # inside the batch 10..11: the whole batch goes
        assert log.log_end_offset == 10
        assert [e.epoch for e in log.epoch_entries()] == [1, 2]
        log.truncate_to(8)
        assert log.epoch_entries()[-1].epoch == 1
        assert log.end_offset_for_epoch(1).offset == 8
        log.append(noops(1), leader_epoch=4)
        assert log.end_offset_for_epoch(2) == (8, 1)
        log.flush()
    with open_log(tmp_path, segment_bytes=400) as log:
        assert log.log_end_offset == 9
        assert [(e.epoch, e.start_offset) for e in log.epoch_entries()] == [(1, 0), (4, 8)]


def test_read_only_open_needs_an_existing_log(tmp_path: Path) -> None:
    with pytest.raises(LogError, match="no such metadata log directory"):
        MetadataLog.open(tmp_path, read_only=True)
    with open_log(tmp_path) as log:
        log.append(noops(1), 1)
    with MetadataLog.open(tmp_path, read_only=True) as ro:
        assert ro.log_end_offset == 1
        with pytest.raises(LogError, match="read-only"):
            ro.append(noops(1), 1)
