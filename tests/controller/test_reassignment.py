"""AlterPartitionReassignments and ListPartitionReassignments (KIP-455) on the controller: starting,
completing once the ISR holds every target replica (through the leader's AlterPartition), a removed
leader replaced with an epoch bump, cancelling, refusals that write nothing, and field bug 6 (every
record that changes Replicas carries Directories when the metadata.version has them)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from controller.core.metadata_version import (
    MV_3_3_IV3,
    MV_3_6_IV0,
    MV_3_7_IV2,
    MV_3_9_IV0,
    MV_4_0_IV0,
    partition_record_version,
)
from kraftpy.image import MetadataDelta, MetadataImage
from kraftpy.metadata import NO_LEADER_CHANGE
from protocol.errors import Errors
from protocol.metadata_records import PartitionChangeRecord
from protocol.rpc.alter_partition_reassignments import AlterPartitionReassignmentsRequest
from protocol.rpc.list_partition_reassignments import ListPartitionReassignmentsRequest
from protocol.rpc.metadata import MetadataRequest
from protocol.uuid import MIGRATING, UNASSIGNED
from tests.controller.control_context import ControlTestContext

A = AlterPartitionReassignmentsRequest
L = ListPartitionReassignmentsRequest
Target = Mapping[tuple[str, int], Sequence[int] | None]


def cluster(n: int = 4, *, unclean: bool = False) -> ControlTestContext:
    ctx = ControlTestContext(unclean_leader_election_enable=unclean)
    for b in range(1, n + 1):
        ctx.register(b, (f"d{b}",))
        ctx.unfence(b)
    return ctx


def reassign(ctx: ControlTestContext, targets: Target) -> Any:
    """One AlterPartitionReassignments (None cancels), applied; the result."""
    by_topic: dict[str, list[A.ReassignablePartition]] = {}
    for (topic, pid), replicas in targets.items():
        by_topic.setdefault(topic, []).append(
            A.ReassignablePartition(PartitionIndex=pid, Replicas=None if replicas is None else list(replicas))
        )
    req = A(Topics=[A.ReassignableTopic(Name=t, Partitions=ps) for t, ps in by_topic.items()])
    return ctx.apply(ctx.core.alter_partition_reassignments(req, 0))


def errors(result: Any) -> dict[tuple[str, int], Errors]:
    return {
        (t.Name, p.PartitionIndex): Errors(p.ErrorCode)
        for t in result.response.Responses
        for p in t.Partitions
    }


def listed(ctx: ControlTestContext, topics: Mapping[str, Sequence[int]] | None = None) -> dict[Any, Any]:
    req = L(Topics=None if topics is None else [L.ListPartitionReassignmentsTopics(Name=t, PartitionIndexes=list(ps)) for t, ps in topics.items()])  # fmt: skip
    resp = ctx.core.list_partition_reassignments(req, 0)
    assert resp.ErrorCode == 0
    return {
        (t.Name, p.PartitionIndex): (p.Replicas, p.AddingReplicas, p.RemovingReplicas)
        for t in resp.Topics
        for p in t.Partitions
    }


def offline(ctx: ControlTestContext, topic: str, pid: int) -> list[int]:
    resp = ctx.core.metadata(MetadataRequest(Topics=[MetadataRequest.MetadataRequestTopic(Name=topic)]), 12)
    return list(next(p for p in resp.Topics[0].Partitions if p.PartitionIndex == pid).OfflineReplicas)


def change(ctx: ControlTestContext, topic: str, **fields: Any) -> PartitionChangeRecord:
    return PartitionChangeRecord(PartitionId=0, TopicId=ctx.topic_id(topic), **fields)


# ---- start and complete ---------------------------------------------------------------------------


def test_start_adds_the_new_replicas_with_their_default_dirs_and_marks_adding_and_removing() -> None:
    ctx = cluster()
    ctx.create_topic("t", assignment=[[1, 2, 3]])
    before = ctx.partition("t", 0)
    result = reassign(ctx, {("t", 0): [1, 2, 4]})
    assert errors(result) == {("t", 0): Errors.NONE}
    assert result.is_atomic
    assert ctx.messages(result) == [
        change(
            ctx,
            "t",
            Replicas=[1, 2, 4, 3],
            RemovingReplicas=[3],
            AddingReplicas=[4],
            Directories=[ctx.dir("d1"), ctx.dir("d2"), ctx.dir("d4"), ctx.dir("d3")],
        )
    ]
    p = ctx.partition("t", 0)
    # Nothing is dropped yet: same leader, same leader epoch, same ISR.
    assert (p.leader, p.leader_epoch, p.isr) == (1, before.leader_epoch, (1, 2, 3))
    assert listed(ctx) == {("t", 0): ([1, 2, 4, 3], [4], [3])}
    assert ctx.core.m.replication.reassigning_partition_count() == 1


def test_completes_when_the_leader_adds_the_new_replica_to_the_isr() -> None:
    ctx = cluster()
    ctx.create_topic("t", assignment=[[1, 2, 3]])
    reassign(ctx, {("t", 0): [1, 2, 4]})
    epoch = ctx.partition("t", 0).leader_epoch
    result = ctx.alter_partition("t", 0, [1, 2, 3, 4])
    part = result.response.Topics[0].Partitions[0]
    assert part.ErrorCode == 0
    # The leader stays, but a replica left: the leader epoch goes up (Leader set to the same one).
    assert ctx.messages(result) == [
        change(
            ctx,
            "t",
            Isr=[1, 2, 4],
            Leader=1,
            Replicas=[1, 2, 4],
            RemovingReplicas=[],
            AddingReplicas=[],
            Directories=[ctx.dir("d1"), ctx.dir("d2"), ctx.dir("d4")],
        )
    ]
    p = ctx.partition("t", 0)
    assert (p.replicas, p.isr, p.leader, p.leader_epoch) == ((1, 2, 4), (1, 2, 4), 1, epoch + 1)
    assert (part.LeaderEpoch, part.Isr, part.PartitionEpoch) == (epoch + 1, [1, 2, 4], p.partition_epoch)
    assert listed(ctx) == {}
    assert ctx.core.m.replication.reassigning_partition_count() == 0


def test_isr_growth_short_of_the_target_does_not_complete() -> None:
    ctx = cluster(5)
    ctx.create_topic("t", assignment=[[1, 2, 3]])
    reassign(ctx, {("t", 0): [1, 4, 5]})
    result = ctx.alter_partition("t", 0, [1, 2, 3, 4])
    assert ctx.messages(result) == [change(ctx, "t", Isr=[1, 2, 3, 4])]
    assert listed(ctx) == {("t", 0): ([1, 4, 5, 2, 3], [4, 5], [2, 3])}
    ctx.alter_partition("t", 0, [1, 2, 3, 4, 5])
    p = ctx.partition("t", 0)
    assert (p.replicas, p.isr, p.adding_replicas, p.removing_replicas) == ((1, 4, 5), (1, 4, 5), (), ())


@pytest.mark.parametrize(
    ("version", "code"), [(3, Errors.NEW_LEADER_ELECTED), (1, Errors.FENCED_LEADER_EPOCH)]
)
def test_a_removed_leader_is_replaced_and_told_so(version: int, code: Errors) -> None:
    ctx = cluster()
    ctx.create_topic("t", assignment=[[1, 2, 3]])
    reassign(ctx, {("t", 0): [2, 3, 4]})
    epoch = ctx.partition("t", 0).leader_epoch
    result = ctx.alter_partition("t", 0, [1, 2, 3, 4], version=version)
    assert result.response.Topics[0].Partitions[0].ErrorCode == code
    assert ctx.messages(result) == [
        change(
            ctx,
            "t",
            Isr=[2, 3, 4],
            Leader=2,
            Replicas=[2, 3, 4],
            RemovingReplicas=[],
            AddingReplicas=[],
            Directories=[ctx.dir("d2"), ctx.dir("d3"), ctx.dir("d4")],
        )
    ]
    p = ctx.partition("t", 0)
    assert (p.leader, p.leader_epoch) == (2, epoch + 1)


def test_a_target_that_adds_nothing_completes_at_once() -> None:
    ctx = cluster()
    ctx.create_topic("t", assignment=[[1, 2, 3]])
    result = reassign(ctx, {("t", 0): [2, 3]})
    assert ctx.messages(result) == [
        change(ctx, "t", Isr=[2, 3], Leader=2, Replicas=[2, 3], Directories=[ctx.dir("d2"), ctx.dir("d3")])
    ]
    assert listed(ctx) == {}


def test_a_new_order_of_the_same_replicas_changes_no_leader_and_no_epoch() -> None:
    ctx = cluster()
    ctx.create_topic("t", assignment=[[1, 2, 3]])
    result = reassign(ctx, {("t", 0): [3, 2, 1]})
    assert ctx.messages(result) == [
        change(ctx, "t", Replicas=[3, 2, 1], Directories=[ctx.dir("d3"), ctx.dir("d2"), ctx.dir("d1")])
    ]
    assert ctx.partition("t", 0).leader_epoch == 0
    assert reassign(ctx, {("t", 0): [3, 2, 1]}).records == [], "the same assignment again changes nothing"


def test_removal_waits_for_a_kept_replica_that_is_out_of_the_isr() -> None:
    ctx = cluster()
    ctx.create_topic("t", assignment=[[1, 2, 3]])
    ctx.alter_partition("t", 0, [1, 3])
    result = reassign(ctx, {("t", 0): [1, 2]})
    assert ctx.messages(result) == [change(ctx, "t", RemovingReplicas=[3])]
    assert listed(ctx) == {("t", 0): ([1, 2, 3], [], [3])}
    ctx.alter_partition("t", 0, [1, 2, 3])
    p = ctx.partition("t", 0)
    assert (p.replicas, p.isr, p.removing_replicas) == ((1, 2), (1, 2), ())


def test_other_changes_keep_the_reassignment_under_way() -> None:
    """A fenced broker leaves the ISR; the record doing it keeps AddingReplicas and RemovingReplicas."""
    ctx = cluster()
    ctx.create_topic("t", assignment=[[1, 2, 3]])
    reassign(ctx, {("t", 0): [1, 2, 4]})
    result = ctx.heartbeat(2, want_fence=True)
    assert ctx.messages(result)[0] == change(ctx, "t", Isr=[1, 3])
    assert listed(ctx) == {("t", 0): ([1, 2, 4, 3], [4], [3])}
    ctx.unfence(2)
    ctx.alter_partition("t", 0, [1, 3, 4])
    assert listed(ctx) == {("t", 0): ([1, 2, 4, 3], [4], [3])}, "2 is a target replica out of the ISR"
    ctx.alter_partition("t", 0, [1, 3, 4, 2])
    assert (ctx.partition("t", 0).replicas, ctx.partition("t", 0).isr) == ((1, 2, 4), (1, 4, 2))


def test_the_directory_of_a_new_replica_follows_the_default_dir_rule() -> None:
    ctx = cluster(3)
    ctx.register(4, ("a", "b"))
    ctx.unfence(4)
    ctx.create_topic("t", assignment=[[1, 2, 3]])
    reassign(ctx, {("t", 0): [1, 2, 4]})
    assert ctx.partition("t", 0).directory(4) == UNASSIGNED, "several dirs: the broker will choose"


def test_a_broker_registered_without_dirs_gets_migrating_replicas() -> None:
    ctx = ControlTestContext(MV_3_7_IV2 - 1)
    for b in (1, 2, 3):
        ctx.register(b, (f"d{b}",))
        ctx.unfence(b)
    from tests.controller.test_field_bugs import _bump_metadata_version

    _bump_metadata_version(ctx, MV_3_7_IV2)
    ctx.register(4, ("d4",))
    ctx.unfence(4)
    ctx.create_topic("t", assignment=[[1, 2, 4]])
    result = reassign(ctx, {("t", 0): [1, 2, 3]})
    assert ctx.messages(result)[0].Directories == [MIGRATING, MIGRATING, MIGRATING, ctx.dir("d4")]


# ---- brokers that cannot take the replica yet -------------------------------------------------------


def test_a_fenced_target_broker_starts_the_reassignment_but_cannot_complete_it() -> None:
    ctx = cluster(3)
    ctx.register(4, ("d4",))  # registered, never unfenced
    ctx.create_topic("t", assignment=[[1, 2, 3]])
    assert errors(reassign(ctx, {("t", 0): [1, 2, 4]})) == {("t", 0): Errors.NONE}
    assert offline(ctx, "t", 0) == [4]
    result = ctx.alter_partition("t", 0, [1, 2, 3, 4])
    assert result.response.Topics[0].Partitions[0].ErrorCode == Errors.INELIGIBLE_REPLICA
    assert result.records == []
    assert listed(ctx) == {("t", 0): ([1, 2, 4, 3], [4], [3])}
    ctx.unfence(4)
    ctx.alter_partition("t", 0, [1, 2, 3, 4])
    assert ctx.partition("t", 0).replicas == (1, 2, 4)


def test_an_added_replica_in_an_offline_dir_is_offline_and_the_reassignment_waits() -> None:
    ctx = cluster(3)
    ctx.register(4, ("a", "b"))
    ctx.unfence(4)
    ctx.create_topic("t", assignment=[[1, 2, 3]])
    reassign(ctx, {("t", 0): [1, 2, 4]})
    ctx.assign(4, "a", [("t", 0)])
    assert offline(ctx, "t", 0) == []
    ctx.heartbeat(4, offline=("a",))
    assert offline(ctx, "t", 0) == [4]
    result = ctx.alter_partition("t", 0, [1, 2, 3, 4])
    assert result.response.Topics[0].Partitions[0].ErrorCode == Errors.INELIGIBLE_REPLICA
    assert result.records == []
    assert listed(ctx) == {("t", 0): ([1, 2, 4, 3], [4], [3])}


# ---- cancel -------------------------------------------------------------------------------------------


def test_cancel_goes_back_to_the_original_replicas_and_their_dirs() -> None:
    ctx = cluster(5)
    ctx.create_topic("t", assignment=[[1, 2, 3]])
    original = ctx.partition("t", 0)
    reassign(ctx, {("t", 0): [3, 4, 5]})
    ctx.alter_partition("t", 0, [1, 2, 3, 4])  # 4 caught up, 5 not yet
    epoch = ctx.partition("t", 0).leader_epoch
    result = reassign(ctx, {("t", 0): None})
    assert errors(result) == {("t", 0): Errors.NONE}
    # The replicas from before, in the order the reassignment left them (Kafka's
    # PartitionReassignmentRevert takes the adding ones out of the current list); each keeps its dir.
    dirs = dict(zip(original.replicas, original.directories, strict=True))
    assert ctx.messages(result) == [
        change(
            ctx,
            "t",
            Isr=[1, 2, 3],
            Leader=1,
            Replicas=[3, 1, 2],
            RemovingReplicas=[],
            AddingReplicas=[],
            Directories=[dirs[3], dirs[1], dirs[2]],
        )
    ]
    p = ctx.partition("t", 0)
    assert (p.replicas, p.isr, p.leader) == ((3, 1, 2), (1, 2, 3), 1)
    assert p.leader_epoch == epoch + 1, "replicas 4 and 5 were dropped"
    assert listed(ctx) == {}


def test_cancel_that_would_need_an_unclean_election_is_refused_unless_the_topic_allows_it() -> None:
    for unclean in (False, True):
        ctx = cluster(3, unclean=unclean)
        ctx.create_topic("t", assignment=[[1]])
        reassign(ctx, {("t", 0): [2, 3]})
        ctx.alter_partition("t", 0, [1, 2])
        ctx.heartbeat(1, want_fence=True)  # only the added 2 is left in the ISR, and leads
        assert (ctx.partition("t", 0).isr, ctx.partition("t", 0).leader) == ((2,), 2)
        result = reassign(ctx, {("t", 0): None})
        if not unclean:
            assert errors(result) == {("t", 0): Errors.INVALID_REPLICA_ASSIGNMENT}
            assert result.records == []
            continue
        assert errors(result) == {("t", 0): Errors.NONE}
        p = ctx.partition("t", 0)
        assert (p.replicas, p.isr, p.adding_replicas, p.removing_replicas) == ((1,), (1,), (), ())


# ---- refusals -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "code"),
    [
        ({("nope", 0): [1, 2]}, Errors.UNKNOWN_TOPIC_OR_PARTITION),
        ({("t", 7): [1, 2]}, Errors.UNKNOWN_TOPIC_OR_PARTITION),
        ({("t", 0): []}, Errors.INVALID_REPLICA_ASSIGNMENT),
        ({("t", 0): [1, 2, 2]}, Errors.INVALID_REPLICA_ASSIGNMENT),
        ({("t", 0): [1, 9]}, Errors.INVALID_REPLICA_ASSIGNMENT),
        ({("t", 0): [1, -1]}, Errors.INVALID_REPLICA_ASSIGNMENT),
        ({("t", 0): None}, Errors.NO_REASSIGNMENT_IN_PROGRESS),
        ({("nope", 0): None}, Errors.UNKNOWN_TOPIC_OR_PARTITION),
    ],
)
def test_refusals_write_nothing(target: Target, code: Errors) -> None:
    ctx = cluster()
    ctx.create_topic("t", assignment=[[1, 2, 3]])
    before = ctx.core.state()
    result = reassign(ctx, target)
    assert list(errors(result).values()) == [code]
    assert all(p.ErrorMessage for t in result.response.Responses for p in t.Partitions)
    assert result.records == []
    assert ctx.core.state() == before


def test_one_refused_partition_does_not_stop_the_others() -> None:
    ctx = cluster()
    ctx.create_topic("t", 2, 1, assignment=[[1], [2]])
    result = reassign(ctx, {("t", 0): [3], ("t", 1): [9]})
    assert errors(result) == {("t", 0): Errors.NONE, ("t", 1): Errors.INVALID_REPLICA_ASSIGNMENT}
    assert [m.PartitionId for m in ctx.messages(result)] == [0]


# ---- list ----------------------------------------------------------------------------------------------


def test_list_names_only_partitions_being_reassigned() -> None:
    ctx = cluster(5)
    ctx.create_topic("a", assignment=[[1, 2], [2, 3], [3, 4]])
    ctx.create_topic("b", assignment=[[1, 2]])
    reassign(ctx, {("a", 0): [4, 5], ("a", 2): [5, 4, 3], ("b", 0): [2, 5]})
    assert listed(ctx) == {
        ("a", 0): ([4, 5, 1, 2], [4, 5], [1, 2]),
        ("a", 2): ([5, 4, 3], [5], []),
        ("b", 0): ([2, 5, 1], [5], [1]),
    }
    assert listed(ctx, {"a": [0, 1, 9], "nope": [0]}) == {("a", 0): ([4, 5, 1, 2], [4, 5], [1, 2])}
    assert listed(ctx, {"b": [0]}) == {("b", 0): ([2, 5, 1], [5], [1])}
    assert ctx.core.m.replication.reassigning_partition_count() == 3


def test_the_log_replays_to_the_same_state_reassignments_included() -> None:
    ctx = cluster(5)
    ctx.create_topic("a", assignment=[[1, 2], [2, 3]])
    reassign(ctx, {("a", 0): [4, 5], ("a", 1): [3, 4]})
    ctx.alter_partition("a", 1, [2, 3, 4])
    replayed = ctx.replayed_from_empty()
    assert replayed.state() == ctx.core.state()
    assert replayed.m.replication.reassigning_partitions() == ctx.core.m.replication.reassigning_partitions()


# ---- field bug 6: Directories on every replica change, where the metadata.version has them --------------


@pytest.mark.parametrize("mv", [MV_3_3_IV3, MV_3_6_IV0, MV_3_7_IV2 - 1, MV_3_7_IV2, MV_3_9_IV0, MV_4_0_IV0])
def test_field_bug_6_reassignment_records_replay_through_the_image_at_every_metadata_version(mv: int) -> None:
    jbod = mv >= MV_3_7_IV2
    ctx = ControlTestContext(mv)
    for b in (1, 2, 3):
        ctx.register(b, (f"d{b}",))
        ctx.unfence(b)
    ctx.register(4, ("d4a", "d4b") if jbod else ("d4",))  # below JBOD's level one dir only (field bug 1)
    ctx.unfence(4)
    first = ctx.next_offset
    ctx.create_topic("t", assignment=[[1, 2, 3], [1, 2, 3], [1, 2, 3]])
    reassign(ctx, {("t", 0): [2, 3, 4], ("t", 1): [4, 3, 2], ("t", 2): [3, 1]})
    if jbod:
        # A v1 record holds UNASSIGNED; the multi-dir broker then says where the replica went
        # (until it does, kraftpy counts the replica offline: docs/kip-deviations.md).
        assert ctx.partition("t", 0).directory(4) == UNASSIGNED
        ctx.assign(4, "d4a", [("t", 0)])
    ctx.alter_partition("t", 0, [1, 2, 3, 4])
    reassign(ctx, {("t", 1): None})

    changes = [r for r in ctx.log[first:] if isinstance(r.message, PartitionChangeRecord)]
    assert any(r.message.Replicas is not None for r in changes)
    for r in changes:
        assert r.version == partition_record_version(mv)
        rec = r.message
        if not jbod:
            assert rec.Directories is None, "a version-0 PartitionChangeRecord cannot hold Directories"
        elif rec.Replicas is not None:
            assert rec.Directories is not None and len(rec.Directories) == len(rec.Replicas), rec

    delta = MetadataDelta(MetadataImage.EMPTY)
    for offset, r in enumerate(ctx.log):
        delta.replay(r.message, offset)
    image = delta.apply()
    topic = image.topics.get_topic("t")
    assert topic is not None
    for pid, p in topic.partitions.items():
        assert p == ctx.partition("t", pid), "the image and the controller agree"
        if not jbod:
            assert p.directories == (MIGRATING,) * len(p.replicas), "nothing a record below JBOD cannot hold"
    assert [topic.partitions[i].replicas for i in (0, 1, 2)] == [(2, 3, 4), (3, 2, 1), (3, 1)]
    assert topic.partitions[1].adding_replicas == ()
    # A snapshot of that image at that metadata.version loses nothing.
    again = MetadataDelta(MetadataImage.EMPTY)
    for r in image.write(mv):
        again.replay(r.message, 0)
    assert again.apply().topics.get_topic("t").partitions == topic.partitions  # type: ignore[union-attr]
    assert ctx.replayed_from_empty().state() == ctx.core.state()


def test_no_leader_change_marker_is_left_when_nothing_drops() -> None:
    ctx = cluster()
    ctx.create_topic("t", assignment=[[1, 2]])
    result = reassign(ctx, {("t", 0): [1, 2, 3]})
    assert ctx.messages(result)[0].Leader == NO_LEADER_CHANGE
    result = ctx.alter_partition("t", 0, [1, 2, 3])
    msg = ctx.messages(result)[0]
    assert (msg.Leader, msg.Replicas, msg.AddingReplicas) == (NO_LEADER_CHANGE, None, [])
