"""Idempotent producers: duplicates answered with their first offsets, sequence and epoch checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.storage import LogConfig, PartitionLog
from broker.storage.producer_state import ProducerStateManager, increment_sequence
from protocol.errors import Errors, KafkaError
from protocol.record_batch import iter_batches, read_batch_header
from tests.broker_storage.batches import value_batch

PID = 4242


def produce(log: PartitionLog, seq: int, n: int = 3, epoch: int = 0, pid: int = PID, tag: int = 0):
    return log.append_as_leader(
        value_batch(n, tag=tag, producer_id=pid, producer_epoch=epoch, base_sequence=seq), leader_epoch=1
    )


def errors_of(log: PartitionLog, seq: int, epoch: int = 0) -> Errors:
    with pytest.raises(KafkaError) as e:
        produce(log, seq, epoch=epoch)
    return e.value.code


def test_retried_batch_gets_its_original_offsets_and_is_not_written_again(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path / "t-0")
    first = produce(log, 0)
    produce(log, 3)
    size = log.size_bytes
    again = produce(log, 0)
    assert again.duplicate
    assert (again.first_offset, again.last_offset) == (first.first_offset, first.last_offset) == (0, 2)
    assert log.size_bytes == size and log.log_end_offset == 6
    log.close()


def test_only_the_last_five_batches_are_remembered(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path / "t-0")
    for i in range(6):
        produce(log, 3 * i)
    assert produce(log, 3).duplicate  # batch 2 of 6 is among the last five
    assert errors_of(log, 0) == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
    log.close()


def test_sequence_gaps_and_old_epochs_are_refused(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path / "t-0")
    produce(log, 0, epoch=2)
    assert errors_of(log, 5, epoch=2) == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert errors_of(log, 3, epoch=1) == Errors.INVALID_PRODUCER_EPOCH
    assert errors_of(log, 7, epoch=3) == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER  # a new epoch starts at 0
    assert produce(log, 0, epoch=3).first_offset == 3
    assert log.log_end_offset == 6
    log.close()


def test_unknown_producer_may_start_at_any_sequence(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path / "t-0")
    assert produce(log, 1000).first_offset == 0
    assert produce(log, 1003).first_offset == 3
    log.close()


def test_state_is_rebuilt_from_the_log_on_open(tmp_path: Path) -> None:
    config = LogConfig(segment_bytes=2_000)
    log = PartitionLog.open(tmp_path / "t-0", config=config)
    for i in range(20):
        produce(log, 3 * i, tag=i)
    produce(log, 0, pid=77)
    log.close()
    log = PartitionLog.open(tmp_path / "t-0", config=config)
    dup = produce(log, 3 * 17)
    assert dup.duplicate and dup.first_offset == 51
    assert produce(log, 0, pid=77).duplicate
    assert errors_of(log, 3 * 21) == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert produce(log, 60).first_offset == 63
    log.close()


def test_truncation_rewinds_the_producer_state(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path / "t-0", config=LogConfig(segment_bytes=2_000))
    for i in range(20):
        produce(log, 3 * i, tag=i)
    assert len(log.segment_base_offsets) > 2
    log.truncate_to(30)  # keeps batches with sequences 0..29
    assert log.log_end_offset == 30
    # The batch at sequence 30 is gone, so sending it again is new, not a duplicate.
    r = produce(log, 30)
    assert not r.duplicate and r.first_offset == 30
    assert produce(log, 27).duplicate
    log.close()


def test_retention_forgets_producers_with_nothing_left(tmp_path: Path) -> None:
    log = PartitionLog.open(
        tmp_path / "t-0", config=LogConfig(segment_bytes=2_000, retention_bytes=0, retention_ms=-1)
    )
    for i in range(10):
        produce(log, 3 * i, tag=i)
    log.roll()
    log.delete_old_segments(high_watermark=log.log_end_offset)
    assert log.producers.last_entry(PID) is None
    assert produce(log, 500).first_offset == 30  # any sequence again, as Kafka after retention
    log.close()


def test_follower_appends_update_state_without_checks(tmp_path: Path) -> None:
    (tmp_path / "l").mkdir()
    (tmp_path / "f").mkdir()
    leader = PartitionLog.open(tmp_path / "l" / "t-0")
    follower = PartitionLog.open(tmp_path / "f" / "t-0")
    produce(leader, 0)
    produce(leader, 3)
    follower.append_as_follower(leader.read(0, 1 << 20).records)
    entry = follower.producers.last_entry(PID)
    assert entry is not None and entry.last_seq == 5
    leader.close()
    follower.close()


def test_sequence_wraps_after_int32_max() -> None:
    assert increment_sequence(2**31 - 2, 3) == 1
    state = ProducerStateManager()
    wrap = read_batch_header(value_batch(3, producer_id=1, producer_epoch=0, base_sequence=2**31 - 3))
    state.update(wrap, 0)
    nxt = read_batch_header(value_batch(1, producer_id=1, producer_epoch=0, base_sequence=0))
    state.check_client_batch(nxt, 3)  # 0 follows INT32_MAX


def test_expired_producers_are_forgotten(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path / "t-0", config=LogConfig(producer_id_expiration_ms=1_000))
    produce(log, 0)  # batch timestamp 1000
    assert log.remove_expired_producers(now_ms=1_500) == []
    assert log.remove_expired_producers(now_ms=2_000) == [PID]
    log.close()


def test_stored_batches_keep_producer_fields(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path / "t-0")
    produce(log, 9, epoch=4)
    (b,) = iter_batches(log.read(0, 1 << 20).records)
    assert (b.producer_id, b.producer_epoch, b.base_sequence) == (PID, 4, 9)
    log.close()
