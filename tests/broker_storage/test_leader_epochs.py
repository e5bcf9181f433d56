"""The leader-epoch cache of partition logs and truncation to where a follower diverges."""

from __future__ import annotations

from pathlib import Path

from broker.storage import EpochEndOffset, LogConfig, PartitionLog
from kraftpy.log.leader_epoch_checkpoint import LeaderEpochFileCache
from protocol.record_batch import iter_batches
from tests.broker_storage.batches import value_batch


def test_checkpoint_file_is_kafkas_layout(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path / "t-0")
    log.append_as_leader(value_batch(2), 1)
    log.append_as_leader(value_batch(3), 1)
    log.append_as_leader(value_batch(1), 4)
    assert (tmp_path / "t-0" / "leader-epoch-checkpoint").read_text() == "0\n2\n1 0\n4 5\n"
    log.close()
    assert LeaderEpochFileCache.load(tmp_path / "t-0").entries == [(1, 0), (4, 5)]


def test_end_offset_for_epoch(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path / "t-0")
    for epoch, n in ((1, 2), (3, 4), (3, 1), (6, 2)):
        log.append_as_leader(value_batch(n), epoch)
    assert log.end_offset_for_epoch(6) == EpochEndOffset(6, 9)  # the latest epoch ends at the log end
    assert log.end_offset_for_epoch(3) == EpochEndOffset(3, 7)
    assert log.end_offset_for_epoch(4) == EpochEndOffset(3, 7)  # unknown epoch: the one below it
    assert log.end_offset_for_epoch(0) == EpochEndOffset(0, 0)
    assert log.end_offset_for_epoch(9) is None
    assert log.end_offset_for_epoch(-1) is None
    log.close()


def test_becoming_leader_assigns_the_epoch_at_the_log_end(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path / "t-0")
    log.append_as_leader(value_batch(3), 2)
    log.assign_epoch_start_offset(5, log.log_end_offset)
    assert log.end_offset_for_epoch(2) == EpochEndOffset(2, 3)
    assert log.latest_epoch == 5
    log.close()


def test_follower_truncates_to_the_diverging_point(tmp_path: Path) -> None:
    """Old leader A wrote epoch 2 batches that new leader B (epoch 3) never got."""
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
    a = PartitionLog.open(tmp_path / "a" / "t-0")
    b = PartitionLog.open(tmp_path / "b" / "t-0")
    a.append_as_leader(value_batch(2, tag=0), 1)
    b.append_as_follower(a.read(0, 1 << 20).records)
    a.append_as_leader(value_batch(2, tag=1), 2)  # only on A
    b.assign_epoch_start_offset(3, b.log_end_offset)
    b.append_as_leader(value_batch(3, tag=2), 3)
    # A, now a follower, asks B where its last epoch (2) ends.
    diverging = b.end_offset_for_epoch(a.latest_epoch or -1)
    assert diverging == EpochEndOffset(1, 2)
    assert a.truncate_to(diverging.end_offset)
    assert a.log_end_offset == 2
    assert [(e.epoch, e.start_offset) for e in a.epoch_cache.entries] == [(1, 0)]
    a.append_as_follower(b.read(a.log_end_offset, 1 << 20).records)
    assert a.read(0, 1 << 20).records == b.read(0, 1 << 20).records
    assert [(e.epoch, e.start_offset) for e in a.epoch_cache.entries] == [(1, 0), (3, 2)]
    a.close()
    b.close()


def test_truncation_below_the_first_segment_restarts_the_log(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path / "t-0", config=LogConfig(segment_bytes=2_000, retention_ms=-1))
    for _ in range(20):
        log.append_as_leader(value_batch(3), 1)
    log.increment_log_start_offset(30)
    log.delete_old_segments(log.log_end_offset)
    first = log.segment_base_offsets[0]
    assert first > 0
    log.truncate_to(first - 5)
    assert (log.log_start_offset, log.log_end_offset, log.segment_base_offsets) == (first - 5,) * 2 + (
        [first - 5],
    )
    assert log.epoch_cache.entries == []
    log.close()


def test_truncation_deletes_later_segments_and_cuts_at_a_batch(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path / "t-0", config=LogConfig(segment_bytes=2_000, index_interval_bytes=200))
    for i in range(20):
        log.append_as_leader(value_batch(3, tag=i), 1 + i // 10)
    bases = log.segment_base_offsets
    assert log.truncate_to(bases[1] + 4)  # inside the batch bases[1]+3 .. +5
    assert log.log_end_offset == bases[1] + 3
    assert log.segment_base_offsets == bases[:2]
    assert not (tmp_path / "t-0" / f"{bases[2]:020d}.log").exists()
    assert all(off < log.log_end_offset for off, _ in log.active_segment.offset_index.entries)
    assert [b.last_offset for b in iter_batches(log.read(bases[1], 1 << 20).records)][-1] == bases[1] + 2
    assert not log.truncate_to(10**6)
    r = log.append_as_leader(value_batch(1), 9)
    assert r.first_offset == bases[1] + 3
    log.close()
    reopened = PartitionLog.open(
        tmp_path / "t-0", config=LogConfig(segment_bytes=2_000, index_interval_bytes=200)
    )
    assert reopened.log_end_offset == bases[1] + 4
    assert reopened.epoch_cache.entries[-1] == (9, bases[1] + 3)
    reopened.close()


def test_epoch_cache_is_rebuilt_when_the_checkpoint_is_lost(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path / "t-0")
    log.append_as_leader(value_batch(2), 1)
    log.append_as_leader(value_batch(2), 5)
    log.close()
    (tmp_path / "t-0" / "leader-epoch-checkpoint").write_text("garbage\n")
    log = PartitionLog.open(tmp_path / "t-0")
    assert [(e.epoch, e.start_offset) for e in log.epoch_cache.entries] == [(1, 0), (5, 2)]
    log.close()
    assert (tmp_path / "t-0" / "leader-epoch-checkpoint").read_text() == "0\n2\n1 0\n5 2\n"


def test_stale_epochs_beyond_the_log_end_are_dropped_on_open(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path / "t-0")
    log.append_as_leader(value_batch(2), 1)
    log.close()
    (tmp_path / "t-0" / "leader-epoch-checkpoint").write_text("0\n2\n1 0\n2 7\n")
    log = PartitionLog.open(tmp_path / "t-0")
    assert [(e.epoch, e.start_offset) for e in log.epoch_cache.entries] == [(1, 0)]
    log.close()
