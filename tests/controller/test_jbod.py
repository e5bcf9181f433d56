"""KIP-858 on the controller: fencing multi-dir brokers until their replicas are placed, offline
log dirs from heartbeats, and AssignReplicasToDirs."""

from __future__ import annotations

import logging

import pytest

from protocol.errors import Errors
from protocol.metadata_records import BrokerRegistrationChangeRecord, PartitionChangeRecord
from protocol.uuid import UNASSIGNED, Uuid
from tests.controller.control_context import ControlTestContext


def _two_dir_broker_beside_single_dir_broker() -> ControlTestContext:
    ctx = ControlTestContext()
    ctx.register(1, ("s",))
    ctx.unfence(1)
    ctx.register(2, ("a", "b"))
    return ctx


def test_replicas_on_a_fenced_two_dir_broker_are_unassigned_and_keep_it_fenced_until_placed() -> None:
    ctx = _two_dir_broker_beside_single_dir_broker()
    result = ctx.create_topic("t", assignment=[[2, 1], [1, 2]])
    assert result.response.Topics[0].ErrorCode == 0
    parts = [m for m in ctx.messages(result) if type(m).__name__ == "PartitionRecord"]
    assert [p.Directories for p in parts] == [[UNASSIGNED, ctx.dir("s")], [ctx.dir("s"), UNASSIGNED]]
    # Broker 2 is fenced: not in the ISR, and broker 1 leads both.
    assert [(p.Isr, p.Leader) for p in parts] == [([1], 1), ([1], 1)]

    for _ in range(3):
        r = ctx.heartbeat(2, want_fence=False)
        assert (r.response.ErrorCode, r.response.IsCaughtUp, r.response.IsFenced) == (0, True, True)
        assert r.records == []
    ctx.assign(2, "a", [("t", 0)])
    assert ctx.heartbeat(2).response.IsFenced is True
    ctx.assign(2, "b", [("t", 1)])
    result = ctx.heartbeat(2)
    assert result.response.IsFenced is False
    assert [type(m).__name__ for m in ctx.messages(result)] == ["BrokerRegistrationChangeRecord"]
    assert [ctx.partition("t", i).directories for i in (0, 1)] == [
        (ctx.dir("a"), ctx.dir("s")),
        (ctx.dir("s"), ctx.dir("b")),
    ]


def test_topic_only_on_the_two_dir_broker_has_no_leader_until_placed() -> None:
    ctx = _two_dir_broker_beside_single_dir_broker()
    ctx.unfence(2)
    result = ctx.create_topic("only2", assignment=[[2], [2]])
    tid = ctx.topic_id("only2")
    parts = [m for m in ctx.messages(result) if type(m).__name__ == "PartitionRecord"]
    assert [(p.Replicas, p.Isr, p.Leader, p.Directories) for p in parts] == [([2], [2], -1, [UNASSIGNED])] * 2
    assert ctx.core.offline_partition_count() == 2
    result = ctx.assign(2, "b", [("only2", 0)])
    assert ctx.messages(result) == [
        PartitionChangeRecord(PartitionId=0, TopicId=tid, Leader=2, Directories=[ctx.dir("b")])
    ]
    p = ctx.partition("only2", 0)
    assert (p.leader, p.leader_epoch, p.isr) == (2, 1, (2,))
    assert ctx.partition("only2", 1).leader == -1
    ctx.assign(2, "a", [("only2", 1)])
    assert ctx.partition("only2", 1).leader == 2
    assert ctx.core.offline_partition_count() == 0


def test_the_same_topic_on_a_single_dir_broker_gets_a_leader_at_once() -> None:
    ctx = _two_dir_broker_beside_single_dir_broker()
    result = ctx.create_topic("only1", assignment=[[1]])
    part = ctx.messages(result)[-1]
    assert (part.Leader, part.Directories) == (1, [ctx.dir("s")])


def test_offline_log_dir_changes_exactly_the_partitions_assigned_to_it() -> None:
    ctx = ControlTestContext()
    ctx.register(1, ("s",))
    ctx.unfence(1)
    epoch = ctx.register(2, ("a", "b")).response.BrokerEpoch
    ctx.unfence(2)
    ctx.create_topic("t", assignment=[[2, 1], [2, 1], [1, 2]])
    ctx.create_topic("u", assignment=[[2]])
    ctx.assign(2, "a", [("t", 0), ("t", 2)])
    ctx.assign(2, "b", [("t", 1), ("u", 0)])
    ctx.alter_partition("t", 2, [1, 2])
    ctx.elect_preferred()
    tid = ctx.topic_id("t")
    assert [ctx.partition("t", i).leader for i in range(3)] == [2, 2, 1]

    result = ctx.heartbeat(2, offline=["a"])
    assert result.response.ErrorCode == 0 and result.response.IsFenced is False
    assert ctx.messages(result) == [
        PartitionChangeRecord(PartitionId=0, TopicId=tid, Isr=[1], Leader=1),
        PartitionChangeRecord(PartitionId=2, TopicId=tid, Isr=[1]),
        BrokerRegistrationChangeRecord(BrokerId=2, BrokerEpoch=epoch, LogDirs=[ctx.dir("b")]),
    ]
    assert [r.version for r in result.records] == [1, 1, 2]
    assert ctx.registration(2).directories == (ctx.dir("b"),)
    assert ctx.registration(2).registered_directories == {ctx.dir("a"), ctx.dir("b")}
    assert ctx.core.m.cluster.directory_to_broker == {ctx.dir("s"): 1, ctx.dir("b"): 2}
    # Partitions in b are untouched; broker 2 is still unfenced and leads them.
    assert ctx.partition("t", 1).leader == 2 and ctx.partition("u", 0).leader == 2
    # The offline replicas count as offline and are never elected again.
    md = ctx.core.metadata(__import__("protocol.rpc.metadata", fromlist=["x"]).MetadataRequest(), 12)
    offline = {(t.Name, p.PartitionIndex): p.OfflineReplicas for t in md.Topics for p in t.Partitions}
    assert offline == {("t", 0): [2], ("t", 1): [], ("t", 2): [2], ("u", 0): []}
    ctx.heartbeat(1, want_fence=True)
    assert ctx.partition("t", 0).leader == -1 and ctx.partition("t", 0).isr == (1,)


def test_offline_dir_that_held_the_only_isr_member_leaves_the_partition_without_leader() -> None:
    ctx = ControlTestContext()
    ctx.register(2, ("a", "b"))
    ctx.unfence(2)
    ctx.create_topic("t", assignment=[[2]])
    ctx.assign(2, "a", [("t", 0)])
    result = ctx.heartbeat(2, offline=["a"])
    tid = ctx.topic_id("t")
    assert ctx.messages(result)[0] == PartitionChangeRecord(PartitionId=0, TopicId=tid, Leader=-1)
    p = ctx.partition("t", 0)
    assert (p.leader, p.isr) == (-1, (2,))


def test_unknown_offline_dirs_are_ignored_with_a_warning_and_the_heartbeat_still_counts(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ctx = ControlTestContext()
    ctx.register(2, ("a", "b"))
    with caplog.at_level(logging.WARNING, logger="controller.core.broker_lifecycle"):
        result = ctx.heartbeat(2, offline=["zz"])
    assert result.response.ErrorCode == 0
    assert result.response.IsFenced is False
    assert "unknown offline log dirs" in caplog.text
    assert [type(m).__name__ for m in ctx.messages(result)] == ["BrokerRegistrationChangeRecord"]
    assert ctx.messages(result)[0].Fenced == -1


def test_every_dir_offline_fences_the_broker_and_tells_it_to_shut_down() -> None:
    ctx = ControlTestContext()
    epoch = ctx.register(2, ("a", "b")).response.BrokerEpoch
    ctx.unfence(2)
    ctx.create_topic("t", assignment=[[2]])
    ctx.assign(2, "a", [("t", 0)])
    ctx.heartbeat(2, offline=["b"])
    result = ctx.heartbeat(2, offline=["b", "a"])
    tid = ctx.topic_id("t")
    assert ctx.messages(result) == [
        PartitionChangeRecord(PartitionId=0, TopicId=tid, Leader=-1),
        BrokerRegistrationChangeRecord(BrokerId=2, BrokerEpoch=epoch, Fenced=1),
    ]
    assert (result.response.IsFenced, result.response.ShouldShutDown) == (True, True)
    # It keeps reporting both; it stays fenced.
    again = ctx.heartbeat(2, offline=["b", "a"])
    assert (again.response.IsFenced, again.response.ShouldShutDown) == (True, True)
    assert again.records == []


def test_assignment_errors_per_partition() -> None:
    ctx = ControlTestContext()
    ctx.register(1, ("s",))
    ctx.unfence(1)
    ctx.register(2, ("a", "b"))
    ctx.create_topic("t", assignment=[[1]])
    result = ctx.assign(2, "a", [("t", 0), ("t", 5), (Uuid.from_longs(77, 77), 0)])
    codes = [
        (t.TopicId, p.PartitionIndex, p.ErrorCode)
        for d in result.response.Directories
        for t in d.Topics
        for p in t.Partitions
    ]
    assert codes == [
        (ctx.topic_id("t"), 0, Errors.NOT_LEADER_OR_FOLLOWER),
        (ctx.topic_id("t"), 5, Errors.UNKNOWN_TOPIC_OR_PARTITION),
        (Uuid.from_longs(77, 77), 0, Errors.UNKNOWN_TOPIC_ID),
    ]
    assert result.records == []


def test_assignment_epoch_and_registration_checks() -> None:
    ctx = ControlTestContext()
    ctx.register(1, ("a",))
    assert ctx.assign(1, "a", [], epoch=12345).response.ErrorCode == Errors.STALE_BROKER_EPOCH
    assert ctx.assign(9, "a", [], epoch=1).response.ErrorCode == Errors.BROKER_ID_NOT_REGISTERED


def test_assignment_below_jbod_metadata_version_is_unsupported() -> None:
    ctx = ControlTestContext(16)
    ctx.register(1, ("a",))
    assert ctx.assign(1, "a", []).response.ErrorCode == Errors.UNSUPPORTED_VERSION


@pytest.mark.parametrize("target", ["zz", "LOST", "a"])
def test_assignment_into_an_offline_or_unknown_dir_makes_the_replica_offline(target: str) -> None:
    ctx = ControlTestContext()
    ctx.register(1, ("s",))
    ctx.unfence(1)
    ctx.register(2, ("a", "b"))
    ctx.unfence(2)
    ctx.create_topic("t", assignment=[[2, 1]])
    ctx.assign(2, "b", [("t", 0)])
    ctx.elect_preferred()
    ctx.heartbeat(2, offline=["a"])
    assert ctx.partition("t", 0).leader == 2
    result = ctx.assign(2, target, [("t", 0)])
    assert result.response.Directories[0].Topics[0].Partitions[0].ErrorCode == 0
    tid = ctx.topic_id("t")
    assert ctx.messages(result) == [
        PartitionChangeRecord(
            PartitionId=0, TopicId=tid, Isr=[1], Leader=1, Directories=[ctx.dir(target), ctx.dir("s")]
        )
    ]


def test_migrating_replicas_keep_a_multi_dir_broker_fenced_and_lost_ones_do_not() -> None:
    from protocol.framing import ApiMessageAndVersion
    from protocol.metadata_records import PartitionRecord, TopicRecord
    from protocol.uuid import MIGRATING

    ctx = ControlTestContext()
    ctx.register(2, ("a", "b"))
    tid = Uuid.from_longs(4242, 1)
    ctx.replay(
        [
            ApiMessageAndVersion(TopicRecord(Name="old", TopicId=tid), 0),
            ApiMessageAndVersion(
                PartitionRecord(
                    PartitionId=0, TopicId=tid, Replicas=[2], Isr=[2], Leader=-1, Directories=[MIGRATING]
                ),
                1,
            ),
            ApiMessageAndVersion(
                PartitionRecord(
                    PartitionId=1,
                    TopicId=tid,
                    Replicas=[2],
                    Isr=[2],
                    Leader=-1,
                    Directories=[ctx.dir("gone")],
                ),
                1,
            ),
        ]
    )
    assert ctx.heartbeat(2).response.IsFenced is True
    ctx.assign(2, "a", [(tid, 0)])
    # A replica in a dir the broker did not register still blocks ...
    assert ctx.heartbeat(2).response.IsFenced is True
    # ... until the broker says where it is, even if that is LOST.
    ctx.assign(2, "LOST", [(tid, 1)])
    result = ctx.heartbeat(2)
    assert result.response.IsFenced is False
    assert ctx.partition("old", 0).leader == 2
    assert ctx.partition("old", 1).leader == -1


def test_dirs_reported_offline_do_not_keep_a_refenced_broker_fenced() -> None:
    ctx = ControlTestContext()
    ctx.register(2, ("a", "b"))
    ctx.unfence(2)
    ctx.create_topic("t", assignment=[[2], [2]])
    ctx.assign(2, "a", [("t", 0)])
    ctx.assign(2, "b", [("t", 1)])
    ctx.heartbeat(2, offline=["a"])
    ctx.heartbeat(2, want_fence=True)
    result = ctx.heartbeat(2, offline=["a"])
    assert result.response.IsFenced is False
    assert ctx.partition("t", 0).leader == -1
    assert ctx.partition("t", 1).leader == 2


def test_single_dir_broker_behaves_as_before() -> None:
    ctx = ControlTestContext()
    ctx.register(1, ("s",))
    ctx.unfence(1)
    tid = Uuid.from_longs(4243, 1)
    from protocol.framing import ApiMessageAndVersion
    from protocol.metadata_records import PartitionRecord, TopicRecord

    ctx.replay(
        [
            ApiMessageAndVersion(TopicRecord(Name="u", TopicId=tid), 0),
            ApiMessageAndVersion(
                PartitionRecord(
                    PartitionId=0, TopicId=tid, Replicas=[1], Isr=[1], Leader=-1, Directories=[UNASSIGNED]
                ),
                1,
            ),
        ]
    )
    ctx.heartbeat(1, want_fence=True)
    result = ctx.heartbeat(1)
    assert result.response.IsFenced is False
    assert ctx.partition("u", 0).leader == 1
