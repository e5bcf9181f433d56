"""Metadata transactions: an abort puts back each manager's snapshot, all of it and nothing deeper."""

from __future__ import annotations

import dataclasses
from typing import Any

from protocol.framing import ApiMessageAndVersion
from protocol.metadata_records import AbortTransactionRecord, BeginTransactionRecord, ProducerIdsRecord
from tests.controller.control_context import ControlTestContext


def begin() -> ApiMessageAndVersion:
    return ApiMessageAndVersion(BeginTransactionRecord(Name="t"), 0)


def abort() -> ApiMessageAndVersion:
    return ApiMessageAndVersion(AbortTransactionRecord(Reason="test"), 0)


def ordered(value: Any) -> Any:
    """`value` with every dict as a list of pairs, so that == also compares insertion order; lists
    are copied, since an index may append to them in place."""
    if isinstance(value, dict):
        return [(k, ordered(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [ordered(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (type(value), [ordered(getattr(value, f.name)) for f in dataclasses.fields(value)])
    return value


def attributes(manager: object) -> dict[str, Any]:
    return {name: ordered(value) for name, value in vars(manager).items()}


def cluster() -> ControlTestContext:
    ctx = ControlTestContext()
    for b in (1, 2, 3):
        ctx.register(b, (f"{b}a", f"{b}b"))
        ctx.unfence(b)
    ctx.create_topic("keep", partitions=4, rf=3, configs={"retention.ms": "1000"})
    return ctx


def changes_inside_a_transaction(ctx: ControlTestContext) -> None:
    ctx.replay([begin()])
    ctx.create_topic("drop", partitions=2, rf=2, configs={"cleanup.policy": "compact"})
    ctx.heartbeat(1, want_fence=True)
    ctx.heartbeat(2, offline=("2a",))
    ctx.replay([ApiMessageAndVersion(ProducerIdsRecord(BrokerId=3, BrokerEpoch=0, NextProducerId=5000), 0)])
    ctx.register(3, ("3a", "3b", "3c"))


def test_an_abort_puts_back_every_attribute_of_every_replicated_manager_in_order() -> None:
    # Every attribute, not only those a snapshot names: one added later without a snapshot fails here.
    ctx = cluster()
    managers = ctx.core._replicated()
    before = [attributes(m) for m in managers]
    changes_inside_a_transaction(ctx)
    assert [attributes(m) for m in managers] != before
    ctx.replay([abort()])
    assert [attributes(m) for m in managers] == before
    assert not ctx.core.in_transaction


def test_a_snapshot_shares_the_immutable_registrations_and_partitions() -> None:
    ctx = cluster()
    tid = ctx.topic_id("keep")
    partition = ctx.core.m.replication.topics[tid].partitions[0]
    registration = ctx.core.m.cluster.registrations[1]
    changes_inside_a_transaction(ctx)
    ctx.replay([abort()])
    assert ctx.core.m.replication.topics[tid].partitions[0] is partition
    assert ctx.core.m.cluster.registrations[1] is registration


def test_after_an_abort_operations_write_what_they_would_have_written_without_the_transaction() -> None:
    aborted, plain = cluster(), cluster()
    changes_inside_a_transaction(aborted)
    aborted.replay([abort()])
    for ctx in (aborted, plain):
        ctx.advance(10)
    assert aborted.messages(aborted.heartbeat(2, want_fence=True)) == plain.messages(
        plain.heartbeat(2, want_fence=True)
    )
    assert aborted.messages(aborted.heartbeat(1, offline=("1b",))) == plain.messages(
        plain.heartbeat(1, offline=("1b",))
    )
    assert aborted.core.state() == plain.core.state()


def test_the_partition_count_follows_replay() -> None:
    ctx = cluster()
    replication = ctx.core.m.replication
    assert replication.partition_count() == sum(len(t.partitions) for t in replication.topics.values()) == 4
    ctx.create_topic("more", partitions=3, rf=2)
    assert replication.partition_count() == 7
