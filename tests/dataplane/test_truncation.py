"""Divergence checks on the leader and the follower's truncation (reference 9)."""

from __future__ import annotations

from broker.dataplane.truncation import NO_EPOCH_END, EpochEnd, Truncation, diverging_epoch, truncation_for


def test_leader_checks_the_last_fetched_epoch() -> None:
    assert diverging_epoch(-1, 10, None) is None
    assert diverging_epoch(3, 10, EpochEnd(3, 12)) is None
    assert diverging_epoch(3, 12, EpochEnd(3, 12)) is None
    # The follower has offsets of epoch 3 the leader never had.
    assert diverging_epoch(3, 15, EpochEnd(3, 12)) == EpochEnd(3, 12)
    # The leader never had epoch 3: its largest epoch below answers.
    assert diverging_epoch(3, 10, EpochEnd(2, 8)) == EpochEnd(2, 8)
    assert diverging_epoch(3, 10, None) == NO_EPOCH_END


def test_follower_truncates_within_a_shared_epoch() -> None:
    assert truncation_for(EpochEnd(3, 12), EpochEnd(3, 15), 15, 9) == Truncation(12, True)
    assert truncation_for(EpochEnd(3, 12), EpochEnd(3, 10), 15, 9) == Truncation(10, True)


def test_follower_steps_back_to_an_older_epoch_and_asks_again() -> None:
    assert truncation_for(EpochEnd(2, 8), EpochEnd(1, 6), 15, 4) == Truncation(6, False)


def test_follower_without_epochs_or_leader_without_ours() -> None:
    assert truncation_for(EpochEnd(2, 8), None, 15, 4) == Truncation(8, True)
    assert truncation_for(EpochEnd(2, 8), None, 5, 4) == Truncation(5, True)
    assert truncation_for(NO_EPOCH_END, EpochEnd(3, 12), 15, 4) == Truncation(4, True)


def test_an_append_of_the_old_epoch_after_the_same_leader_starts_a_new_one_is_refused(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """ZooKeeper mode bumps the leader epoch of a leader that stays leader. The new epoch's start
    offset is written on the log's thread; a produce of the old epoch queued behind it must not
    land after it, or followers would find old-epoch records past the old epoch's end forever."""
    import pytest

    from broker.dataplane.hosted_partition import HostedPartition
    from broker.dataplane.partition import Partition, Role
    from broker.dataplane.replica_manager import _append_as_leader, _start_leader_epoch
    from broker.storage import PartitionLog
    from kraftpy.image import TopicIdPartition
    from protocol.errors import Errors, KafkaError
    from protocol.uuid import Uuid
    from tests.broker_storage.batches import value_batch

    tp = TopicIdPartition(Uuid.random(), "t", 0)
    log = PartitionLog.open(tmp_path / "t-0")
    state = Partition(tp, 1, role=Role.LEADER, leader_id=1, leader_epoch=0)
    hp = HostedPartition(tp, state)
    _start_leader_epoch(log, 0)
    _append_as_leader(hp, log, value_batch(3), 0)
    _start_leader_epoch(log, 1)  # the controller's new epoch reached the log first
    with pytest.raises(KafkaError) as e:
        _append_as_leader(hp, log, value_batch(3), 0)
    assert e.value.code is Errors.NOT_LEADER_OR_FOLLOWER
    assert log.log_end_offset == 3
    log.close()
