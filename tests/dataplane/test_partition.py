"""The partition state machine: HW, acks=all, min.insync.replicas, ISR shrink and expand (reference 7.9)."""

from __future__ import annotations

import pytest

from broker.dataplane.partition import Partition, Role
from kraftpy.image import PartitionRegistration, TopicIdPartition
from protocol.errors import Errors, KafkaError
from protocol.uuid import UNASSIGNED, Uuid

TP = TopicIdPartition(Uuid.random(), "t", 0)
LAG = 30_000


def reg(
    leader: int = 1,
    isr: tuple[int, ...] = (1, 2, 3),
    leader_epoch: int = 0,
    partition_epoch: int = 0,
    replicas: tuple[int, ...] = (1, 2, 3),
) -> PartitionRegistration:
    return PartitionRegistration(
        replicas=replicas,
        directories=(UNASSIGNED,) * len(replicas),
        isr=isr,
        leader=leader,
        leader_epoch=leader_epoch,
        partition_epoch=partition_epoch,
    )


def leader(isr: tuple[int, ...] = (1, 2, 3), leo: int = 0, now: int = 0, **kw: int) -> Partition:
    p = Partition(TP, 1)
    p.set_cluster_view({1, 2, 3}, {1: 10, 2: 20, 3: 30})
    p.become_leader(reg(isr=isr, **kw), log_end_offset=leo, log_start_offset=0, high_watermark=0, now_ms=now)
    return p


def test_high_watermark_is_the_smallest_isr_log_end_and_never_moves_back() -> None:
    p = leader()
    assert not p.leader_appended(10)
    assert p.high_watermark == 0  # followers have not fetched from this leader yet
    p.follower_fetched(2, 10, 20, now_ms=1, lag_ms=LAG)
    assert p.high_watermark == 0
    assert p.follower_fetched(3, 5, 30, now_ms=1, lag_ms=LAG).high_watermark_moved
    assert p.high_watermark == 5
    p.follower_fetched(3, 10, 30, now_ms=2, lag_ms=LAG)
    assert p.high_watermark == 10
    p.follower_fetched(3, 7, 30, now_ms=3, lag_ms=LAG)  # a follower that truncated
    assert p.high_watermark == 10


def test_leader_alone_in_the_isr_commits_on_append() -> None:
    p = leader(isr=(1,))
    assert p.leader_appended(4)
    assert p.high_watermark == 4
    assert p.acks_all_status(4, 1) is Errors.NONE


def test_acks_all_waits_for_the_high_watermark() -> None:
    p = leader()
    p.leader_appended(3)
    assert p.acks_all_status(3, 2) is None
    p.follower_fetched(2, 3, 20, now_ms=1, lag_ms=LAG)
    p.follower_fetched(3, 3, 30, now_ms=1, lag_ms=LAG)
    assert p.acks_all_status(3, 2) is Errors.NONE
    assert p.acks_all_status(4, 2) is None


def test_min_insync_replicas_before_and_after_append() -> None:
    p = leader(isr=(1, 2))
    p.check_produce(-1, 2)
    with pytest.raises(KafkaError) as e:
        p.check_produce(-1, 3)
    assert e.value.code is Errors.NOT_ENOUGH_REPLICAS
    p.check_produce(1, 3)  # acks=1 does not care
    p.leader_appended(2)
    p.follower_fetched(2, 2, 20, now_ms=1, lag_ms=LAG)
    # The ISR shrank to the leader alone after the append (metadata from the controller).
    p.update_registration(reg(isr=(1,), partition_epoch=1))
    p.leader_appended(2)
    assert p.acks_all_status(2, 2) is Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND


def test_not_leader_and_offline_answers() -> None:
    p = leader()
    p.become_follower(reg(leader=2, leader_epoch=1), log_end_offset=0, log_start_offset=0, high_watermark=0)
    assert p.acks_all_status(1, 1) is Errors.NOT_LEADER_OR_FOLLOWER
    with pytest.raises(KafkaError) as e:
        p.check_produce(1, 1)
    assert e.value.code is Errors.NOT_LEADER_OR_FOLLOWER
    p.go_offline()
    assert p.role is Role.OFFLINE
    assert p.acks_all_status(1, 1) is Errors.KAFKA_STORAGE_ERROR
    with pytest.raises(KafkaError) as e:
        p.check_produce(1, 1)
    assert e.value.code is Errors.KAFKA_STORAGE_ERROR


def test_request_leader_epoch_is_checked() -> None:
    p = leader(leader_epoch=5)
    p.check_leader_epoch(5)
    p.check_leader_epoch(-1)
    for epoch, code in ((4, Errors.FENCED_LEADER_EPOCH), (6, Errors.UNKNOWN_LEADER_EPOCH)):
        with pytest.raises(KafkaError) as e:
            p.check_leader_epoch(epoch)
        assert e.value.code is code


def test_a_read_checks_the_offline_dir_then_the_epoch_then_leadership() -> None:
    # Kafka's order: a follower told of its new leader before the leader itself gets
    # UNKNOWN_LEADER_EPOCH (retried at once), not NOT_LEADER_OR_FOLLOWER (retried after a backoff)
    p = Partition(TP, 2)
    p.set_cluster_view({1, 2, 3}, {1: 10, 2: 20, 3: 30})
    p.become_follower(reg(leader=1, leader_epoch=2), log_end_offset=0, log_start_offset=0, high_watermark=0)
    for epoch, code in (
        (3, Errors.UNKNOWN_LEADER_EPOCH),
        (1, Errors.FENCED_LEADER_EPOCH),
        (2, Errors.NOT_LEADER_OR_FOLLOWER),
    ):
        with pytest.raises(KafkaError) as e:
            p.check_leader_at(epoch)
        assert e.value.code is code
    leader(leader_epoch=2).check_leader_at(2)


def test_lagging_follower_is_dropped_and_counted_until_the_controller_agrees() -> None:
    p = leader(now=0)
    p.leader_appended(10)
    p.follower_fetched(2, 10, 20, now_ms=100, lag_ms=LAG)
    p.follower_fetched(3, 2, 30, now_ms=100, lag_ms=LAG)
    assert p.maybe_shrink_isr(now_ms=LAG, lag_ms=LAG) is None  # within the lag time
    change = p.maybe_shrink_isr(now_ms=LAG + 1, lag_ms=LAG)
    assert change is not None and change.new_isr == (1, 2)
    assert (change.leader_epoch, change.partition_epoch) == (0, 0)
    assert change.broker_epochs == (10, 20)
    assert p.maybe_shrink_isr(now_ms=LAG + 2, lag_ms=LAG) is None  # one change in flight at a time
    # Until committed, the leaving replica still holds the HW back.
    p.follower_fetched(2, 10, 20, now_ms=LAG + 3, lag_ms=LAG)
    assert p.high_watermark == 2
    assert p.isr_change_committed(1, 0, 1, [1, 2])
    assert p.isr == (1, 2) and p.partition_epoch == 1 and not p.isr_change_in_flight
    p.maybe_increment_high_watermark(LAG + 4, LAG)
    assert p.high_watermark == 10


def test_a_follower_at_the_leader_end_is_never_out_of_sync() -> None:
    p = leader(now=0)
    p.leader_appended(5)
    p.follower_fetched(2, 5, 20, now_ms=1, lag_ms=LAG)
    p.follower_fetched(3, 5, 30, now_ms=1, lag_ms=LAG)
    assert p.out_of_sync_replicas(now_ms=10 * LAG, lag_ms=LAG) == []


def test_caught_up_follower_rejoins_and_counts_while_pending() -> None:
    p = leader(isr=(1, 2), now=0)
    p.leader_appended(6)
    p.follower_fetched(2, 6, 20, now_ms=1, lag_ms=LAG)
    assert p.high_watermark == 6
    assert p.follower_fetched(3, 4, 30, now_ms=2, lag_ms=LAG).isr_change is None  # below the HW
    p.leader_appended(8)
    result = p.follower_fetched(3, 6, 30, now_ms=3, lag_ms=LAG)
    assert result.isr_change is not None and result.isr_change.new_isr == (1, 2, 3)
    assert result.isr_change.broker_epochs == (10, 20, 30)
    assert p.maximal_isr == (1, 2, 3)
    p.follower_fetched(2, 8, 20, now_ms=4, lag_ms=LAG)
    assert p.high_watermark == 6  # the joining replica already counts
    p.follower_fetched(3, 8, 30, now_ms=5, lag_ms=LAG)
    assert p.high_watermark == 8


def test_expansion_needs_an_eligible_broker_with_its_registered_epoch() -> None:
    p = leader(isr=(1, 2))
    p.set_cluster_view({1, 2}, {1: 10, 2: 20, 3: 30})  # broker 3 fenced
    assert p.follower_fetched(3, 0, 30, now_ms=1, lag_ms=LAG).isr_change is None
    p.set_cluster_view({1, 2, 3}, {1: 10, 2: 20, 3: 31})  # re-registered since it fetched
    assert p.follower_fetched(3, 0, 30, now_ms=2, lag_ms=LAG).isr_change is None
    assert p.follower_fetched(3, 0, 31, now_ms=3, lag_ms=LAG).isr_change is not None


def test_a_newcomer_the_controller_found_ineligible_waits_for_new_metadata() -> None:
    """Otherwise each of its fetches would send the same refused AlterPartition again."""
    p = leader(isr=(1, 2))
    p.set_cluster_view({1, 2, 3}, {1: 10, 2: 20, 3: 30})
    assert p.follower_fetched(3, 0, 30, now_ms=1, lag_ms=LAG).isr_change is not None
    p.isr_change_failed(ineligible=True)
    assert p.follower_fetched(3, 0, 30, now_ms=2, lag_ms=LAG).isr_change is None
    p.update_registration(reg(isr=(1, 2), partition_epoch=1))  # e.g. its replica placed in a dir
    assert p.follower_fetched(3, 0, 30, now_ms=3, lag_ms=LAG).isr_change is not None
    p.isr_change_failed()  # any other refusal: tried again at the next fetch
    assert p.follower_fetched(3, 0, 30, now_ms=4, lag_ms=LAG).isr_change is not None


def test_expansion_waits_for_the_leader_epoch_start() -> None:
    p = leader(isr=(1, 2), leo=5)  # this epoch starts at 5; HW restarts at 0
    assert p.follower_fetched(3, 3, 30, now_ms=1, lag_ms=LAG).isr_change is None
    assert p.follower_fetched(3, 5, 30, now_ms=2, lag_ms=LAG).isr_change is not None


def test_a_newer_registration_supersedes_a_pending_change() -> None:
    p = leader(now=0)
    p.leader_appended(1)
    assert p.maybe_shrink_isr(now_ms=LAG + 1, lag_ms=LAG) is not None
    p.update_registration(reg(isr=(1, 3), partition_epoch=1))  # the controller removed 2 on its own
    assert not p.isr_change_in_flight and p.isr == (1, 3)
    assert not p.isr_change_committed(1, 0, 0, [1, 2])  # the stale answer is ignored
    assert p.isr == (1, 3)


def test_new_leader_epoch_resets_follower_progress() -> None:
    p = leader()
    p.leader_appended(4)
    p.follower_fetched(2, 4, 20, now_ms=1, lag_ms=LAG)
    p.follower_fetched(3, 4, 30, now_ms=1, lag_ms=LAG)
    p.become_follower(reg(leader=2, leader_epoch=1), log_end_offset=4, log_start_offset=0, high_watermark=4)
    assert p.become_leader(
        reg(leader_epoch=2), log_end_offset=4, log_start_offset=0, high_watermark=0, now_ms=5
    )
    assert p.high_watermark == 4 and p.leader_epoch_start_offset == 4
    assert all(f.log_end_offset == -1 for f in p.followers.values())
    assert not p.become_leader(
        reg(leader_epoch=2), log_end_offset=4, log_start_offset=0, high_watermark=0, now_ms=6
    )


def test_follower_high_watermark_follows_the_leader_within_its_log() -> None:
    p = Partition(TP, 2)
    p.become_follower(reg(), log_end_offset=0, log_start_offset=0, high_watermark=0)
    assert p.follower_appended(5, leader_high_watermark=9, leader_log_start=0)
    assert p.high_watermark == 5
    p.truncated(3)
    assert p.high_watermark == 3 and p.log_end_offset == 3
