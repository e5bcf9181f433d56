"""CreateTopics and DeleteTopics."""

from __future__ import annotations

import pytest

from protocol.errors import Errors
from protocol.metadata_records import ConfigRecord, PartitionRecord, RemoveTopicRecord, TopicRecord
from protocol.rpc.create_topics import CreateTopicsRequest
from protocol.rpc.delete_topics import DeleteTopicsRequest
from tests.controller.control_context import ControlTestContext


def cluster(n: int = 3) -> ControlTestContext:
    ctx = ControlTestContext()
    for b in range(1, n + 1):
        ctx.register(b, (f"d{b}",))
        ctx.unfence(b)
    return ctx


def test_create_topic_writes_topic_configs_then_partitions_atomically() -> None:
    ctx = cluster()
    result = ctx.create_topic("orders", 2, 3, configs={"retention.ms": "1000", "min.insync.replicas": "2"})
    topic = result.response.Topics[0]
    assert (topic.ErrorCode, topic.NumPartitions, topic.ReplicationFactor) == (0, 2, 3)
    assert result.is_atomic
    tid = topic.TopicId
    msgs = ctx.messages(result)
    assert msgs[0] == TopicRecord(Name="orders", TopicId=tid)
    assert msgs[1:3] == [
        ConfigRecord(ResourceType=2, ResourceName="orders", Name="retention.ms", Value="1000"),
        ConfigRecord(ResourceType=2, ResourceName="orders", Name="min.insync.replicas", Value="2"),
    ]
    for i, p in enumerate(msgs[3:]):
        assert isinstance(p, PartitionRecord)
        assert (p.PartitionId, p.TopicId, p.Isr, p.Leader, p.LeaderEpoch, p.PartitionEpoch) == (
            i,
            tid,
            p.Replicas,
            p.Replicas[0],
            0,
            0,
        )
        assert sorted(p.Replicas) == [1, 2, 3]
        assert p.Directories == [ctx.dir(f"d{b}") for b in p.Replicas]
    assert [r.version for r in result.records] == [0, 0, 0, 1, 1]
    assert ctx.core.m.configs.topic_config("orders") == {"retention.ms": "1000", "min.insync.replicas": "2"}


def test_defaults_for_partitions_and_replication_factor() -> None:
    ctx = cluster()
    result = ctx.create_topic("d", -1, -1)
    assert (result.response.Topics[0].NumPartitions, result.response.Topics[0].ReplicationFactor) == (1, 1)


@pytest.mark.parametrize(
    ("kwargs", "code"),
    [
        ({"partitions": 0, "rf": 1}, Errors.INVALID_PARTITIONS),
        ({"partitions": 1, "rf": 0}, Errors.INVALID_REPLICATION_FACTOR),
        ({"partitions": 1, "rf": 4}, Errors.INVALID_REPLICATION_FACTOR),
        ({"assignment": [[1, 1]]}, Errors.INVALID_REPLICA_ASSIGNMENT),
        ({"assignment": [[]]}, Errors.INVALID_REPLICA_ASSIGNMENT),
        ({"assignment": [[9]]}, Errors.INVALID_REPLICA_ASSIGNMENT),
        ({"assignment": [[1, 2], [3]]}, Errors.INVALID_REPLICA_ASSIGNMENT),
        ({"configs": {"no.such.config": "1"}}, Errors.INVALID_CONFIG),
        ({"configs": {"unclean.leader.election.enable": "maybe"}}, Errors.INVALID_CONFIG),
    ],
)
def test_invalid_topics_are_refused_without_records(kwargs: dict, code: Errors) -> None:  # type: ignore[type-arg]
    ctx = cluster()
    result = ctx.create_topic("bad", **kwargs)
    assert result.response.Topics[0].ErrorCode == code
    assert result.response.Topics[0].ErrorMessage
    assert result.records == []


def test_bad_names_and_existing_topics() -> None:
    ctx = cluster()
    assert ctx.create_topic("a/b").response.Topics[0].ErrorCode == Errors.INVALID_TOPIC_EXCEPTION
    assert ctx.create_topic("x" * 250).response.Topics[0].ErrorCode == Errors.INVALID_TOPIC_EXCEPTION
    assert ctx.create_topic("ok").response.Topics[0].ErrorCode == 0
    assert ctx.create_topic("ok").response.Topics[0].ErrorCode == Errors.TOPIC_ALREADY_EXISTS


def test_manual_assignment_with_only_fenced_brokers_is_invalid_replica_assignment() -> None:
    ctx = cluster()
    ctx.register(4, ("d4",))
    result = ctx.create_topic("f", assignment=[[4]])
    assert result.response.Topics[0].ErrorCode == Errors.INVALID_REPLICA_ASSIGNMENT


def test_manual_assignment_needs_partitions_and_rf_unset() -> None:
    ctx = cluster()
    T = CreateTopicsRequest
    req = T(
        Topics=[
            T.CreatableTopic(
                Name="m",
                NumPartitions=1,
                ReplicationFactor=1,
                Assignments=[T.CreatableReplicaAssignment(PartitionIndex=0, BrokerIds=[1])],
            )
        ]
    )
    assert ctx.core.create_topics(req, 7).response.Topics[0].ErrorCode == Errors.INVALID_REQUEST


def test_one_bad_topic_does_not_stop_the_others_and_duplicates_are_refused() -> None:
    ctx = cluster()
    T = CreateTopicsRequest
    req = T(
        Topics=[
            T.CreatableTopic(Name="good"),
            T.CreatableTopic(Name="bad", NumPartitions=0),
            T.CreatableTopic(Name="dup"),
            T.CreatableTopic(Name="dup"),
        ]
    )
    result = ctx.apply(ctx.core.create_topics(req, 7))
    assert [(t.Name, t.ErrorCode) for t in result.response.Topics] == [
        ("good", 0),
        ("bad", Errors.INVALID_PARTITIONS),
        ("dup", Errors.INVALID_REQUEST),
        ("dup", Errors.INVALID_REQUEST),
    ]
    assert set(ctx.core.m.replication.topics_by_name) == {"good"}


def test_validate_only_writes_nothing() -> None:
    ctx = cluster()
    T = CreateTopicsRequest
    result = ctx.core.create_topics(T(Topics=[T.CreatableTopic(Name="v")], ValidateOnly=True), 7)
    assert result.response.Topics[0].ErrorCode == 0 and result.records == []


def test_delete_topics_by_name_and_id() -> None:
    ctx = cluster()
    ctx.create_topic("a", 2, 2, configs={"retention.ms": "5"})
    ctx.create_topic("b")
    tid_a, tid_b = ctx.topic_id("a"), ctx.topic_id("b")
    result = ctx.delete_topic("a")
    assert ctx.messages(result) == [RemoveTopicRecord(TopicId=tid_a)]
    assert "a" not in ctx.core.m.replication.topics_by_name
    assert ctx.core.m.configs.topic_config("a") == {}
    assert all(
        tid_a not in {tp[0] for tp in ctx.core.m.replication.partitions_with_isr_member(b)} for b in (1, 2, 3)
    )
    D = DeleteTopicsRequest
    result = ctx.apply(
        ctx.core.delete_topics(
            D(Topics=[D.DeleteTopicState(TopicId=tid_b), D.DeleteTopicState(Name="zz")]), 6
        )
    )
    assert [(r.Name, r.ErrorCode) for r in result.response.Responses] == [
        ("b", 0),
        ("zz", Errors.UNKNOWN_TOPIC_OR_PARTITION),
    ]
    result = ctx.core.delete_topics(D(Topics=[D.DeleteTopicState(TopicId=tid_b)]), 6)
    assert result.response.Responses[0].ErrorCode == Errors.UNKNOWN_TOPIC_ID and result.records == []


def test_huge_partition_count_is_refused_before_placement_even_validate_only() -> None:
    ctx = cluster()
    T = CreateTopicsRequest
    for validate_only in (True, False):
        req = T(
            Topics=[T.CreatableTopic(Name="huge", NumPartitions=2147483647, ReplicationFactor=1)],
            ValidateOnly=validate_only,
        )
        result = ctx.core.create_topics(req, 7)  # fails fast: no placement of 2**31 partitions
        topic = result.response.Topics[0]
        assert topic.ErrorCode == Errors.INVALID_PARTITIONS
        assert "kraftpy.max.partitions.per.request=100000" in (topic.ErrorMessage or "")
        assert result.records == []


def test_partition_caps_per_request_and_per_cluster() -> None:
    from dataclasses import replace

    ctx = cluster()
    ctx.core.m.config = replace(ctx.core.m.config, max_partitions_per_request=10, max_partitions=14)
    T = CreateTopicsRequest
    req = T(
        Topics=[
            T.CreatableTopic(Name="a", NumPartitions=6, ReplicationFactor=1),
            T.CreatableTopic(Name="b", NumPartitions=6, ReplicationFactor=1),
            T.CreatableTopic(Name="c", NumPartitions=4, ReplicationFactor=1),
        ]
    )
    result = ctx.apply(ctx.core.create_topics(req, 7))
    assert [(t.Name, t.ErrorCode) for t in result.response.Topics] == [
        ("a", 0),
        ("b", Errors.POLICY_VIOLATION),
        ("c", 0),
    ]
    assert "kraftpy.max.partitions.per.request=10" in (result.response.Topics[1].ErrorMessage or "")
    result = ctx.apply(ctx.core.create_topics(T(Topics=[T.CreatableTopic(Name="d", NumPartitions=5)]), 7))
    assert result.response.Topics[0].ErrorCode == Errors.POLICY_VIOLATION
    assert "kraftpy.max.partitions=14" in (result.response.Topics[0].ErrorMessage or "")
    assert set(ctx.core.m.replication.topics_by_name) == {"a", "c"}


def test_duplicates_among_thirty_thousand_names_are_each_refused() -> None:
    # The check is one Counter pass (it was names.count per name); speed is not asserted here.
    ctx = cluster()
    T = CreateTopicsRequest
    # Distinct names, each refused at once (0 partitions), and one name given twice.
    topics = [T.CreatableTopic(Name=f"t{i}", NumPartitions=0) for i in range(30_000)]
    topics.append(T.CreatableTopic(Name="t0", NumPartitions=0))
    result = ctx.core.create_topics(T(Topics=topics, ValidateOnly=True), 7)
    codes = [t.ErrorCode for t in result.response.Topics]
    assert codes[0] == codes[-1] == Errors.INVALID_REQUEST
    assert set(codes[1:-1]) == {Errors.INVALID_PARTITIONS}


def _grow(ctx: ControlTestContext, name: str, count: int, assignments=None, validate_only: bool = False):  # type: ignore[no-untyped-def]
    from protocol.rpc.create_partitions import CreatePartitionsRequest as C

    req = C(
        Topics=[
            C.CreatePartitionsTopic(
                Name=name,
                Count=count,
                Assignments=None
                if assignments is None
                else [C.CreatePartitionsAssignment(BrokerIds=a) for a in assignments],
            )
        ],
        ValidateOnly=validate_only,
    )
    return ctx.apply(ctx.core.create_partitions(req, 3))


def test_create_partitions_adds_records_for_the_new_indexes_only() -> None:
    ctx = cluster()
    ctx.create_topic("grow", 2, 2)
    result = _grow(ctx, "grow", 4)
    assert [(r.Name, r.ErrorCode) for r in result.response.Results] == [("grow", 0)]
    msgs = ctx.messages(result)
    assert [m.PartitionId for m in msgs] == [2, 3] and all(isinstance(m, PartitionRecord) for m in msgs)
    assert all(len(m.Replicas) == 2 and m.TopicId == ctx.topic_id("grow") for m in msgs)
    assert all(m.Directories == [ctx.dir(f"d{b}") for b in m.Replicas] for m in msgs)
    assert len(ctx.core.m.replication.topics[ctx.topic_id("grow")].partitions) == 4

    manual = _grow(ctx, "grow", 5, assignments=[[3, 1]])
    assert ctx.messages(manual)[0].Replicas == [3, 1]


@pytest.mark.parametrize(
    ("count", "assignments", "code"),
    [
        (2, None, Errors.INVALID_PARTITIONS),  # no increase
        (1, None, Errors.INVALID_PARTITIONS),  # a decrease
        (4, [[1, 2]], Errors.INVALID_REPLICA_ASSIGNMENT),  # one assignment for two new partitions
        (3, [[1, 2, 3]], Errors.INVALID_REPLICA_ASSIGNMENT),  # another replication factor
        (3, [[1, 9]], Errors.INVALID_REPLICA_ASSIGNMENT),  # an unknown broker
    ],
)
def test_create_partitions_refusals_write_nothing(count: int, assignments, code: Errors) -> None:  # type: ignore[no-untyped-def]
    ctx = cluster()
    ctx.create_topic("grow", 2, 2)
    result = _grow(ctx, "grow", count, assignments)
    assert result.response.Results[0].ErrorCode == code and result.records == []
    assert len(ctx.core.m.replication.topics[ctx.topic_id("grow")].partitions) == 2


def test_create_partitions_of_an_unknown_topic_and_validate_only() -> None:
    ctx = cluster()
    ctx.create_topic("grow", 1, 1)
    assert _grow(ctx, "nope", 3).response.Results[0].ErrorCode == Errors.UNKNOWN_TOPIC_OR_PARTITION
    checked = _grow(ctx, "grow", 3, validate_only=True)
    assert checked.response.Results[0].ErrorCode == 0 and checked.records == []
