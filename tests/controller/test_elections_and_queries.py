"""Unclean and preferred elections, and the Metadata answer."""

from __future__ import annotations

from controller.core.elections import ELECTION_NOT_NEEDED, ELIGIBLE_LEADERS_NOT_AVAILABLE
from controller.core.partition_change import Election
from protocol.errors import Errors
from protocol.metadata_records import PartitionChangeRecord
from protocol.rpc.metadata import MetadataRequest
from tests.controller.control_context import ControlTestContext


def two_brokers(unclean_default: bool = False) -> ControlTestContext:
    ctx = ControlTestContext(unclean_leader_election_enable=unclean_default)
    for b in (1, 2):
        ctx.register(b, (f"d{b}",))
        ctx.unfence(b)
    return ctx


def test_unclean_election_follows_the_topic_config_when_the_last_isr_member_is_fenced() -> None:
    ctx = two_brokers()
    ctx.create_topic("u", assignment=[[1, 2]], configs={"unclean.leader.election.enable": "true"})
    ctx.create_topic("c", assignment=[[1, 2]])
    ctx.alter_partition("u", 0, [1])
    ctx.alter_partition("c", 0, [1])
    result = ctx.heartbeat(1, want_fence=True)
    u, c = ctx.topic_id("u"), ctx.topic_id("c")
    assert ctx.messages(result)[:2] == [
        PartitionChangeRecord(PartitionId=0, TopicId=u, Isr=[2], Leader=2, LeaderRecoveryState=1),
        PartitionChangeRecord(PartitionId=0, TopicId=c, Leader=-1),
    ]
    assert ctx.partition("u", 0).leader_recovery_state == 1


def test_the_cluster_default_allows_unclean_election_too() -> None:
    ctx = two_brokers(unclean_default=True)
    ctx.create_topic("c", assignment=[[1, 2]])
    ctx.alter_partition("c", 0, [1])
    ctx.heartbeat(1, want_fence=True)
    assert ctx.partition("c", 0).leader == 2


def test_elect_leaders_results() -> None:
    ctx = two_brokers()
    ctx.create_topic("c", assignment=[[1, 2]])
    ctx.alter_partition("c", 0, [1])
    ctx.heartbeat(1, want_fence=True)
    tp = (ctx.topic_id("c"), 0)
    assert ctx.apply(ctx.core.elect_leaders(Election.ONLINE)).response == {tp: ELIGIBLE_LEADERS_NOT_AVAILABLE}
    assert ctx.apply(ctx.core.maybe_elect_unclean_leaders()).response == {}
    result = ctx.apply(ctx.core.elect_leaders(Election.UNCLEAN, [tp]))
    assert result.response == {tp: 0} and ctx.partition("c", 0).leader == 2
    assert ctx.apply(ctx.core.elect_leaders(Election.UNCLEAN, [tp])).response == {tp: ELECTION_NOT_NEEDED}


def test_metadata_by_name_and_id() -> None:
    ctx = two_brokers()
    ctx.create_topic("a", 2, 2)
    md = ctx.core.metadata(
        MetadataRequest(
            Topics=[
                MetadataRequest.MetadataRequestTopic(Name="a"),
                MetadataRequest.MetadataRequestTopic(Name="zz"),
            ]
        ),
        9,
    )
    assert [(t.Name, t.ErrorCode) for t in md.Topics] == [("a", 0), ("zz", Errors.UNKNOWN_TOPIC_OR_PARTITION)]
    assert [b.NodeId for b in md.Brokers] == [1, 2] and md.ControllerId == 3000
    part = md.Topics[0].Partitions[0]
    assert part.ReplicaDirectories == [ctx.dir(f"d{b}") for b in part.ReplicaNodes]
    by_id = ctx.core.metadata(
        MetadataRequest(Topics=[MetadataRequest.MetadataRequestTopic(TopicId=ctx.topic_id("a"), Name=None)]),
        12,
    )
    assert by_id.Topics[0].Name == "a"
    wire = md.to_wire(9, "json")
    assert "ReplicaDirectories" in wire["Topics"][0]["Partitions"][0]
    assert "ReplicaDirectories" not in md.to_wire(8, "json")["Topics"][0]["Partitions"][0]


def test_a_metadata_answer_built_later_shows_the_state_it_was_taken_from() -> None:
    """The controller copies a Metadata answer's inputs on its queue and may build the models off the
    loop afterwards; writes in between must not leak into it."""
    ctx = two_brokers()
    ctx.create_topic("a", 1, 2)
    answer = ctx.core.metadata_answer(MetadataRequest(Topics=None), 12)
    before = ctx.partition("a", 0)
    ctx.heartbeat(before.leader, want_fence=True)
    ctx.create_topic("b", 1, 1)
    assert ctx.partition("a", 0).leader != before.leader
    md = answer.build()
    assert [t.Name for t in md.Topics] == ["a"]
    assert md.Topics[0].Partitions[0].LeaderId == before.leader
    assert md.Topics[0].Partitions[0].OfflineReplicas == []
    assert [b.NodeId for b in md.Brokers] == [1, 2]


def test_only_a_large_metadata_answer_is_marked_for_building_off_the_loop() -> None:
    ctx = two_brokers()
    ctx.create_topic("a", 3, 2)
    small = ctx.core.metadata_answer(MetadataRequest(Topics=[{"Name": "a"}, {"Name": "zz"}]), 12)
    assert not small.large
    many = [{"Name": f"t{i}"} for i in range(5000)]
    large = ctx.core.metadata_answer(MetadataRequest(Topics=many), 12)
    assert large.large
    assert {t.ErrorCode for t in large.build().Topics} == {Errors.UNKNOWN_TOPIC_OR_PARTITION}


def test_preferred_replica_imbalance_counts_partitions_away_from_their_first_replica() -> None:
    ctx = two_brokers()
    ctx.create_topic("a", assignment=[[1, 2], [2, 1]])
    imbalance = ctx.core.m.replication.preferred_replica_imbalance_count
    assert [ctx.partition("a", p).leader for p in (0, 1)] == [1, 2] and imbalance() == 0
    ctx.heartbeat(1, want_fence=True)
    assert ctx.partition("a", 0).leader == 2 and imbalance() == 1
