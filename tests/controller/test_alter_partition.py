"""AlterPartition: the checks of reference 7.9 and the change it writes."""

from __future__ import annotations

import pytest

from protocol.errors import Errors
from protocol.metadata_records import PartitionChangeRecord
from tests.controller.control_context import ControlTestContext


def setup() -> ControlTestContext:
    ctx = ControlTestContext()
    for b in (1, 2, 3):
        ctx.register(b, (f"d{b}",))
        ctx.unfence(b)
    ctx.create_topic("t", assignment=[[1, 2, 3]])
    return ctx


def _partition_error(result) -> int:  # type: ignore[no-untyped-def]
    return result.response.Topics[0].Partitions[0].ErrorCode


def test_leader_shrinks_and_expands_the_isr() -> None:
    ctx = setup()
    tid = ctx.topic_id("t")
    result = ctx.alter_partition("t", 0, [1, 3])
    assert ctx.messages(result) == [PartitionChangeRecord(PartitionId=0, TopicId=tid, Isr=[1, 3])]
    p = result.response.Topics[0].Partitions[0]
    assert (p.ErrorCode, p.LeaderId, p.LeaderEpoch, p.Isr, p.PartitionEpoch) == (0, 1, 0, [1, 3], 1)
    result = ctx.alter_partition("t", 0, [1, 2, 3])
    assert ctx.partition("t", 0).isr == (1, 2, 3) and ctx.partition("t", 0).partition_epoch == 2


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_every_version_names_the_topic_its_way(version: int) -> None:
    ctx = setup()
    assert _partition_error(ctx.alter_partition("t", 0, [1, 2], version=version)) == 0


def test_checks_in_order() -> None:
    ctx = setup()
    assert _partition_error(ctx.alter_partition("t", 0, [1], leader_epoch=1)) == Errors.NOT_CONTROLLER
    assert _partition_error(ctx.alter_partition("t", 0, [1], partition_epoch=5)) == Errors.NOT_CONTROLLER
    ctx.heartbeat(1, want_fence=True)  # leader 2, leader epoch 1, partition epoch 1
    assert (
        _partition_error(ctx.alter_partition("t", 0, [2], leader_epoch=0, partition_epoch=0))
        == Errors.FENCED_LEADER_EPOCH
    )
    assert _partition_error(ctx.alter_partition("t", 0, [2, 3], broker_id=3)) == Errors.INVALID_REQUEST
    assert (
        _partition_error(ctx.alter_partition("t", 0, [2, 3], partition_epoch=0))
        == Errors.INVALID_UPDATE_VERSION
    )
    assert _partition_error(ctx.alter_partition("t", 0, [2, 9])) == Errors.INVALID_REQUEST
    assert _partition_error(ctx.alter_partition("t", 0, [3])) == Errors.INVALID_REQUEST
    assert (
        _partition_error(ctx.alter_partition("t", 0, [2, 3], leader_recovery_state=1))
        == Errors.INVALID_REQUEST
    )
    assert _partition_error(ctx.alter_partition("t", 0, [2, 1])) == Errors.INELIGIBLE_REPLICA
    assert _partition_error(ctx.alter_partition("t", 0, [2, 1], version=1)) == Errors.OPERATION_NOT_ATTEMPTED


def test_stale_broker_epoch_and_unknown_topics() -> None:
    from protocol.rpc.alter_partition import AlterPartitionRequest as A
    from protocol.uuid import Uuid

    ctx = setup()
    req = A(BrokerId=1, BrokerEpoch=999, Topics=[])
    assert ctx.core.alter_partition(req, 3).response.ErrorCode == Errors.STALE_BROKER_EPOCH
    epoch = ctx.registration(1).epoch
    req = A(
        BrokerId=1,
        BrokerEpoch=epoch,
        Topics=[A.TopicData(TopicId=Uuid.from_longs(1, 999), Partitions=[A.PartitionData(PartitionIndex=0)])],
    )
    assert (
        ctx.core.alter_partition(req, 3).response.Topics[0].Partitions[0].ErrorCode == Errors.UNKNOWN_TOPIC_ID
    )
    req = A(
        BrokerId=1,
        BrokerEpoch=epoch,
        Topics=[A.TopicData(TopicName="nope", Partitions=[A.PartitionData(PartitionIndex=0)])],
    )
    assert (
        ctx.core.alter_partition(req, 1).response.Topics[0].Partitions[0].ErrorCode
        == Errors.UNKNOWN_TOPIC_OR_PARTITION
    )
    req = A(
        BrokerId=1,
        BrokerEpoch=epoch,
        Topics=[A.TopicData(TopicId=ctx.topic_id("t"), Partitions=[A.PartitionData(PartitionIndex=7)])],
    )
    assert (
        ctx.core.alter_partition(req, 3).response.Topics[0].Partitions[0].ErrorCode
        == Errors.UNKNOWN_TOPIC_OR_PARTITION
    )


def test_a_replica_in_an_unplaced_dir_of_a_multi_dir_broker_may_not_join_the_isr() -> None:
    ctx = ControlTestContext()
    ctx.register(1, ("s",))
    ctx.unfence(1)
    ctx.register(2, ("a", "b"))
    ctx.unfence(2)
    ctx.create_topic("t", assignment=[[1, 2]])
    ctx.alter_partition("t", 0, [1])
    assert _partition_error(ctx.alter_partition("t", 0, [1, 2])) == Errors.INELIGIBLE_REPLICA
    ctx.assign(2, "a", [("t", 0)])
    assert _partition_error(ctx.alter_partition("t", 0, [1, 2])) == 0
