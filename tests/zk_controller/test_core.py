"""The ZooKeeper-mode controller's decisions, driven event by event without ZooKeeper or sockets."""

from __future__ import annotations

from controller.zk.core import (
    AlterPartitionItem,
    DeleteLogDirEventWrite,
    DeleteTopicRequestWrite,
    DeleteTopicWrite,
    PartitionStateWrite,
    ZkControllerCore,
    ZkControllerResult,
    ZkSnapshot,
)
from controller.zk.model import LEADER_DURING_DELETE, NO_LEADER, LeaderAndIsr, LiveBroker, TopicAssignment
from controller.zk.requests import LeaderAndIsrOut, StopReplicaOut, UpdateMetadataOut
from protocol.errors import Errors
from protocol.uuid import Uuid

TID = Uuid.from_longs(7, 7)


def broker(b: int, epoch: int | None = None) -> LiveBroker:
    return LiveBroker(b, epoch if epoch is not None else 100 + b)


def brokers(*ids: int) -> dict[int, LiveBroker]:
    return {b: broker(b) for b in ids}


def applied(core: ZkControllerCore, result: ZkControllerResult) -> ZkControllerResult:
    """The shell's part: ZooKeeper took the writes."""
    core.replay(result.writes)
    return result


def cluster(*ids: int, topics: dict[str, dict[int, tuple[int, ...]]] | None = None) -> ZkControllerCore:
    core = ZkControllerCore(controller_id=ids[0], epoch=1)
    applied(core, core.on_become_controller(ZkSnapshot(live=brokers(*ids), topics={}, states={})))
    if topics:
        applied(core, core.on_topic_change({t: TopicAssignment(TID, parts) for t, parts in topics.items()}))
    return core


def of(result: ZkControllerResult, kind: type, broker_id: int | None = None) -> list:
    return [
        r for r in result.requests if isinstance(r, kind) and (broker_id is None or r.broker_id == broker_id)
    ]


def test_a_new_topic_gets_leaders_from_its_live_replicas_with_is_new() -> None:
    core = cluster(1, 2, 3)
    result = applied(core, core.on_topic_change({"t": TopicAssignment(TID, {0: (2, 3, 4), 1: (3, 1, 2)})}))
    assert core.states[("t", 0)] == LeaderAndIsr(2, 0, (2, 3), controller_epoch=1, zk_version=0)
    assert core.states[("t", 1)] == LeaderAndIsr(3, 0, (3, 1, 2), controller_epoch=1, zk_version=0)
    creates = [w for w in result.writes if isinstance(w, PartitionStateWrite)]
    assert {w.expected_version for w in creates} == {None}
    lai = of(result, LeaderAndIsrOut, 2)[0]
    assert [(p.tp, p.is_new) for p in lai.partitions] == [(("t", 0), True), (("t", 1), True)]
    assert lai.broker_epoch == 102
    assert {r.broker_id for r in of(result, UpdateMetadataOut)} == {1, 2, 3}
    um = of(result, UpdateMetadataOut, 1)[0]
    assert {p.tp: p.offline_replicas for p in um.partitions} == {("t", 0): (4,), ("t", 1): ()}


def test_state_moves_only_when_the_writes_are_replayed() -> None:
    core = cluster(1, 2, 3, topics={"t": {0: (1, 2, 3)}})
    before = core.states[("t", 0)]
    result = core.on_broker_change(brokers(2, 3))
    assert core.states[("t", 0)] == before
    (write,) = [w for w in result.writes if isinstance(w, PartitionStateWrite)]
    assert write.expected_version == 0 and write.state.zk_version == 1
    core.replay(result.writes)
    assert core.states[("t", 0)] == LeaderAndIsr(2, 1, (2, 3), controller_epoch=1, zk_version=1)


def test_a_dead_leader_is_replaced_from_the_isr_in_one_write_per_partition() -> None:
    core = cluster(1, 2, 3, topics={"t": {0: (1, 2, 3), 1: (2, 3, 1)}})
    result = applied(core, core.on_broker_change(brokers(2, 3)))
    assert core.states[("t", 0)].leader == 2 and core.states[("t", 0)].isr == (2, 3)
    assert core.states[("t", 1)].leader == 2 and core.states[("t", 1)].isr == (2, 3)
    assert len([w for w in result.writes if isinstance(w, PartitionStateWrite)]) == 2
    # The requests carry the state the event ends with.
    for lai in of(result, LeaderAndIsrOut):
        for p in lai.partitions:
            assert p.state == core.states[p.tp]
    assert not of(result, LeaderAndIsrOut, 1)
    um = of(result, UpdateMetadataOut, 3)[0]
    assert [b.id for b in um.live_brokers] == [2, 3]
    assert {p.tp: p.offline_replicas for p in um.partitions} == {("t", 0): (1,), ("t", 1): (1,)}


def test_the_last_isr_member_dying_leaves_the_partition_leaderless_with_it_in_the_isr() -> None:
    core = cluster(1, 2, topics={"t": {0: (1,)}})
    applied(core, core.on_broker_change(brokers(2)))
    assert core.states[("t", 0)].leader == NO_LEADER and core.states[("t", 0)].isr == (1,)
    assert core.offline_partition_count() == 1
    result = applied(core, core.on_broker_change(brokers(1, 2)))
    assert core.states[("t", 0)].leader == 1
    assert core.offline_partition_count() == 0
    lai = of(result, LeaderAndIsrOut, 1)[0]
    assert lai.full and lai.partitions[0].state.leader == 1


def test_a_broker_that_came_back_with_a_new_epoch_is_treated_as_dead_then_new() -> None:
    core = cluster(1, 2, 3, topics={"t": {0: (1, 2, 3)}})
    result = applied(core, core.on_broker_change({**brokers(2, 3), 1: broker(1, epoch=555)}))
    assert core.live[1].epoch == 555
    assert core.states[("t", 0)].leader == 2
    assert of(result, LeaderAndIsrOut, 1)[0].broker_epoch == 555


def test_kip112_log_dir_event_then_storage_error_moves_leadership_and_shrinks_the_isr() -> None:
    core = cluster(1, 2, 3, topics={"t": {0: (1, 2, 3), 1: (2, 1, 3)}})
    result = applied(core, core.on_log_dir_event({"log_dir_event_0000000000": 1}))
    assert DeleteLogDirEventWrite("log_dir_event_0000000000") in result.writes
    (lai,) = of(result, LeaderAndIsrOut)
    assert lai.broker_id == 1 and [p.tp for p in lai.partitions] == [("t", 0), ("t", 1)]
    assert not lai.partitions[0].is_new

    # Broker 1 answers: t-0 is in its failed dir, t-1 is fine.
    result = applied(
        core,
        core.on_leader_and_isr_response(1, {("t", 0): Errors.KAFKA_STORAGE_ERROR, ("t", 1): Errors.NONE}),
    )
    assert core.offline_dirs[1] == {("t", 0)}
    assert core.states[("t", 0)].leader == 2 and 1 not in core.states[("t", 0)].isr
    assert core.states[("t", 1)].isr == (2, 1, 3)
    (stop,) = of(result, StopReplicaOut, 1)
    assert [(tp, delete) for tp, _, delete in stop.partitions] == [(("t", 0), False)]
    um = of(result, UpdateMetadataOut, 2)[0]
    assert {p.tp: p.offline_replicas for p in um.partitions}[("t", 0)] == (1,)
    # The same answer again changes nothing.
    again = core.on_leader_and_isr_response(1, {("t", 0): Errors.KAFKA_STORAGE_ERROR})
    assert again.writes == [] and again.requests == []


def test_an_offline_dir_replica_is_not_elected_and_comes_back_when_the_broker_restarts() -> None:
    core = cluster(1, 2, topics={"t": {0: (1, 2)}})
    applied(core, core.on_leader_and_isr_response(1, {("t", 0): Errors.KAFKA_STORAGE_ERROR}))
    assert core.states[("t", 0)].leader == 2
    applied(core, core.on_broker_change(brokers(1)))  # broker 2 dies too: 1 is live, but its replica is not
    assert core.states[("t", 0)].leader == NO_LEADER
    assert core.offline_replicas(("t", 0)) == (1, 2)
    applied(core, core.on_broker_change({1: broker(1, epoch=900)}))  # 1 restarted: its dirs are fresh
    assert core.offline_dirs.get(1) is None
    assert core.states[("t", 0)].leader == NO_LEADER  # 1 left the ISR: no unclean election
    core.unclean_leader_election = True
    applied(core, core.on_broker_change({1: broker(1, epoch=901)}))
    assert core.states[("t", 0)].leader == 1 and core.states[("t", 0)].isr == (1,)


def test_alter_partition_checks_epochs_and_eligibility() -> None:
    core = cluster(1, 2, 3, topics={"t": {0: (1, 2, 3)}})
    st = core.states[("t", 0)]
    tp = ("t", 0)

    def alter(isr: tuple[int, ...], *, epoch: int = st.leader_epoch, version: int | None = None, by: int = 1):
        v = core.states[tp].zk_version if version is None else version
        result = applied(core, core.on_alter_partition(by, 100 + by, [AlterPartitionItem(tp, epoch, isr, v)]))
        error, answers = result.response
        return error, answers[0] if answers else None, result

    assert alter((1, 2), by=2)[1].error == Errors.NOT_LEADER_OR_FOLLOWER
    assert alter((1, 2), epoch=st.leader_epoch + 1)[1].error == Errors.FENCED_LEADER_EPOCH
    assert alter((1, 2), version=5)[1].error == Errors.INVALID_UPDATE_VERSION
    assert alter((1, 2, 4))[1].error == Errors.INELIGIBLE_REPLICA
    assert core.on_alter_partition(1, 999, []).response[0] == Errors.STALE_BROKER_EPOCH
    error, answer, result = alter((1, 2))
    assert error == Errors.NONE and answer.error == Errors.NONE
    assert answer.state == core.states[tp] and core.states[tp].isr == (1, 2)
    assert core.states[tp].leader_epoch == st.leader_epoch and core.states[tp].zk_version == st.zk_version + 1
    assert {r.broker_id for r in of(result, UpdateMetadataOut)} == {1, 2, 3}


def test_controlled_shutdown_moves_leaders_and_followers_out() -> None:
    core = cluster(1, 2, 3, topics={"t": {0: (1, 2, 3), 1: (2, 1, 3), 2: (1,)}})
    result = applied(core, core.on_controlled_shutdown(1, 101))
    error, remaining = result.response
    assert error == Errors.NONE and remaining == []
    assert core.states[("t", 0)].leader == 2 and core.states[("t", 0)].isr == (2, 3)
    assert core.states[("t", 1)].leader == 2 and core.states[("t", 1)].isr == (2, 3)
    assert core.states[("t", 2)].leader == 1  # a single replica stays
    assert [tp for tp, _, d in of(result, StopReplicaOut, 1)[0].partitions] == [("t", 1)]
    assert core.on_controlled_shutdown(1, 5).response[0] == Errors.STALE_BROKER_EPOCH


def test_topic_deletion_waits_for_every_replica_then_removes_the_znodes() -> None:
    core = cluster(1, 2, topics={"t": {0: (1, 2)}})
    result = applied(core, core.on_topic_deletion(["t", "nope"]))
    assert DeleteTopicRequestWrite("nope") in result.writes
    assert {r.broker_id for r in of(result, StopReplicaOut)} == {1, 2}
    um = of(result, UpdateMetadataOut, 1)[0]
    assert um.partitions[0].state.leader == LEADER_DURING_DELETE
    result = applied(core, core.on_stop_replica_response(1, {("t", 0): Errors.NONE}))
    assert result.writes == []
    result = applied(core, core.on_stop_replica_response(2, {("t", 0): Errors.NONE}))
    assert result.writes == [DeleteTopicWrite("t", (0,))]
    assert "t" not in core.topics and ("t", 0) not in core.states


def test_a_new_controller_tells_every_broker_everything_and_elects_where_needed() -> None:
    states = {("t", 0): LeaderAndIsr(9, 4, (9, 1), controller_epoch=3, zk_version=7)}
    core = ZkControllerCore(controller_id=1, epoch=4)
    result = applied(
        core,
        core.on_become_controller(
            ZkSnapshot(
                live=brokers(1, 2),
                topics={"t": TopicAssignment(TID, {0: (9, 1, 2)}), "u": TopicAssignment(TID, {0: (2,)})},
                states=states,
                log_dir_events=["log_dir_event_0000000003"],
            )
        ),
    )
    assert core.states[("t", 0)] == LeaderAndIsr(1, 5, (1,), controller_epoch=4, zk_version=8)
    assert core.states[("u", 0)].leader == 2 and core.states[("u", 0)].zk_version == 0
    assert DeleteLogDirEventWrite("log_dir_event_0000000003") in result.writes
    assert all(r.full for r in of(result, LeaderAndIsrOut))
    assert {r.broker_id for r in of(result, UpdateMetadataOut)} == {1, 2}


def test_a_new_controller_takes_brokers_that_died_before_it_out_of_the_isrs() -> None:
    """No broker event comes for them, and the leader cannot shrink the ISR to one still naming a
    dead broker (INELIGIBLE_REPLICA): the failover itself does it, as ReplicaStateMachine.startup."""
    states = {
        ("t", 0): LeaderAndIsr(2, 0, (2, 3, 1), controller_epoch=1, zk_version=0),
        ("t", 1): LeaderAndIsr(1, 3, (1, 3), controller_epoch=1, zk_version=4),
    }
    core = ZkControllerCore(controller_id=2, epoch=2)
    result = applied(
        core,
        core.on_become_controller(
            ZkSnapshot(
                live=brokers(2),
                topics={"t": TopicAssignment(TID, {0: (2, 3, 1), 1: (1, 3, 2)})},
                states=states,
            )
        ),
    )
    # One leader epoch per replica taken out, as Kafka removes them one replica at a time.
    assert core.states[("t", 0)] == LeaderAndIsr(2, 2, (2,), controller_epoch=2, zk_version=1)
    # No live replica in the ISR: leaderless, the last ISR member kept (no unclean election).
    assert core.states[("t", 1)].leader == NO_LEADER and core.states[("t", 1)].isr == (3,)
    assert len([w for w in result.writes if isinstance(w, PartitionStateWrite)]) == 2
    (lai,) = of(result, LeaderAndIsrOut, 2)
    assert {p.tp: p.state.isr for p in lai.partitions}[("t", 0)] == (2,)


def test_preferred_leaders_return_once_the_imbalance_passes_the_threshold() -> None:
    core = cluster(1, 2, topics={"t": {0: (1, 2), 1: (2, 1)}})
    applied(core, core.on_broker_change(brokers(2)))
    applied(core, core.on_broker_change(brokers(1, 2)))
    assert core.states[("t", 0)].leader == 2
    # 1 is not back in the ISR yet: nothing to do.
    assert core.on_preferred_election_check().writes == []
    st = core.states[("t", 0)]
    applied(
        core,
        core.on_alter_partition(
            2, 102, [AlterPartitionItem(("t", 0), st.leader_epoch, (2, 1), st.zk_version)]
        ),
    )
    applied(core, core.on_preferred_election_check())
    assert core.states[("t", 0)].leader == 1


def test_placement_spreads_leaders_and_followers_like_admin_utils() -> None:
    import random

    import pytest

    from controller.zk.placement import PlacementError, assign_replicas

    got = assign_replicas([3, 1, 2], 6, 3, rng=random.Random(4))
    assert sorted(r[0] for r in got.values()) == [1, 1, 2, 2, 3, 3]
    assert all(len(set(r)) == 3 for r in got.values())
    with pytest.raises(PlacementError, match="larger than available brokers: 3"):
        assign_replicas([1, 2, 3], 1, 4, rng=random.Random(0))


def test_a_replica_already_out_of_the_isr_is_published_offline() -> None:
    """A broker that restarts with the replica's dir dead: it is out of the ISR already, and
    UpdateMetadata must still list it in OfflineReplicas."""
    core = cluster(1, 2, 3, topics={"t": {0: (1, 2, 3)}})
    applied(core, core.on_broker_change(brokers(1, 3)))
    applied(core, core.on_broker_change({**brokers(1, 3), 2: broker(2, epoch=500)}))
    result = applied(core, core.on_leader_and_isr_response(2, {("t", 0): Errors.KAFKA_STORAGE_ERROR}))
    assert [w for w in result.writes] == []
    um = of(result, UpdateMetadataOut, 1)[0]
    assert {p.tp: p.offline_replicas for p in um.partitions} == {("t", 0): (2,)}


def test_preferred_replica_imbalance_counts_partitions_away_from_their_first_replica() -> None:
    core = cluster(1, 2, 3, topics={"t": {0: (1, 2, 3), 1: (2, 3, 1)}})
    assert core.preferred_replica_imbalance_count() == 0
    applied(core, core.on_broker_change(brokers(2, 3)))
    assert core.states[("t", 0)].leader == 2 and core.preferred_replica_imbalance_count() == 1
