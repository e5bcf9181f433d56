"""A failed log dir changes many partitions in one pass: the records must be exactly those a plain
per-partition build gives (one PartitionChangeBuilder per partition, each change visible to the
next step of the operation), the batch bytes exactly those of the records framed one by one, and
replaying them must leave the state a replay from an empty log leaves."""

from __future__ import annotations

from typing import Any

from controller.core.partition_change import Election, PartitionChangeBuilder
from controller.core.replication_control import OperationView, ReplicationControlManager
from kraftpy.metadata import PartitionRegistration
from protocol.framing import ApiMessageAndVersion, encode_record
from protocol.metadata_records import BrokerRegistrationChangeRecord
from protocol.record_batch import Record, RecordBatch, build_metadata_batch, encode_batch
from tests.controller.control_context import ControlTestContext

FAILING = 1


def _cluster() -> ControlTestContext:
    """Broker 1 has dirs a and b; its partitions differ in replication factor, leader, ISR, which
    other replicas could lead (broker 3 is fenced), and whether the topic allows unclean election."""
    ctx = ControlTestContext()
    ctx.register(1, ("a", "b"))
    ctx.unfence(1)
    for b, d in ((2, "c"), (3, "d"), (4, "e")):
        ctx.register(b, (d,))
        ctx.unfence(b)
    ctx.create_topic("single", assignment=[[1]] * 5)
    for name in ("three", "three2"):  # ISRs repeat across partitions and topics
        ctx.create_topic(name, assignment=[[1, 2, 3], [2, 1, 4], [3, 4, 1], [1, 3, 4], [4, 2, 1], [2, 3, 4]])
    ctx.create_topic(
        "unclean", assignment=[[1, 3], [1, 2], [3, 1]], configs={"unclean.leader.election.enable": "true"}
    )
    ctx.create_topic("single2", assignment=[[1]] * 3)
    placed: dict[str, list[tuple[str, int]]] = {"a": [], "b": []}
    for name, n in (("single", 5), ("three", 6), ("three2", 6), ("unclean", 3), ("single2", 3)):
        for pid in range(n):
            if 1 in ctx.partition(name, pid).replicas:
                in_b = (name.startswith("single") and pid % 2 == 0) or (name, pid) == ("three", 4)
                placed["b" if in_b else "a"].append((name, pid))
    ctx.assign(1, "a", placed["a"])
    ctx.assign(1, "b", placed["b"])
    ctx.alter_partition("three", 3, [1, 4])  # 3 out of this ISR
    ctx.alter_partition("unclean", 0, [1])  # only broker 1 left in these ISRs
    ctx.alter_partition("unclean", 1, [1])
    ctx.heartbeat(3, want_fence=True)  # 3 may not lead anything now
    ctx.elect_preferred()
    return ctx


def _plain_build(
    replication: ReplicationControlManager,
    tps: list[Any],
    changed: dict[Any, PartitionRegistration],
    out: list[ApiMessageAndVersion],
) -> None:
    """Broker 1 out of each partition's ISR and leadership, one builder per partition."""
    accept = replication.acceptor(OperationView(), FAILING)
    for tp in tps:
        p = changed.get(tp) or replication.partition(tp)
        assert p is not None
        builder = PartitionChangeBuilder(
            p,
            tp[0],
            tp[1],
            accept,
            replication.features.metadata_version,
            default_dir=replication.default_dir_provider(OperationView()),
        )
        if FAILING in p.isr:
            builder.set_target_isr([b for b in p.isr if b != FAILING])
        if replication.unclean_allowed(tp[0], OperationView()):
            builder.set_election(Election.UNCLEAN)
        record = builder.build()
        if record is not None:
            out.append(record)
            changed[tp] = p.merge(record.message)


def _framed_one_by_one(records: list[ApiMessageAndVersion]) -> bytes:
    return encode_batch(
        RecordBatch(
            base_offset=5,
            partition_leader_epoch=2,
            attributes=0,
            last_offset_delta=len(records) - 1,
            base_timestamp=9,
            max_timestamp=9,
            producer_id=-1,
            producer_epoch=-1,
            base_sequence=-1,
            records=[Record(0, 0, i, None, encode_record(r), []) for i, r in enumerate(records)],
        )
    )


def _check_replay(ctx: ControlTestContext) -> None:
    assert ctx.core.m.replication.state() == ctx.replayed_from_empty().m.replication.state()


def test_one_failed_dir_writes_what_a_per_partition_build_writes() -> None:
    ctx = _cluster()
    replication = ctx.core.m.replication
    in_a = replication.partitions_on(FAILING, ctx.dir("a"))
    expected: list[ApiMessageAndVersion] = []
    _plain_build(replication, in_a, {}, expected)
    # Leaders moved, ISRs shrunk, partitions left leaderless, one unclean election.
    assert {(r.message.Leader, r.message.Isr is None, r.message.LeaderRecoveryState) for r in expected} == {
        (-1, True, -1),
        (2, False, -1),
        (-2, False, -1),
        (4, False, -1),
        (2, False, 1),
    }
    epoch = ctx.registration(FAILING).epoch

    result = ctx.heartbeat(FAILING, offline=["a"])

    assert result.records[:-1] == expected
    assert result.records[-1] == ApiMessageAndVersion(
        BrokerRegistrationChangeRecord(BrokerId=FAILING, BrokerEpoch=epoch, LogDirs=[ctx.dir("b")]), 2
    )
    assert build_metadata_batch(5, 2, 9, result.records) == _framed_one_by_one(result.records)
    _check_replay(ctx)


def test_every_dir_failing_then_fencing_writes_what_a_per_partition_build_writes() -> None:
    """The fencing step reads the partitions the dir steps changed, as a plain build sees them."""
    ctx = _cluster()
    replication = ctx.core.m.replication
    expected: list[ApiMessageAndVersion] = []
    changed: dict[Any, PartitionRegistration] = {}
    for d in ("a", "b"):
        _plain_build(replication, replication.partitions_on(FAILING, ctx.dir(d)), changed, expected)
    _plain_build(replication, replication.partitions_with_isr_member(FAILING), changed, expected)
    epoch = ctx.registration(FAILING).epoch

    result = ctx.heartbeat(FAILING, offline=["a", "b"])

    assert result.response.ShouldShutDown
    assert result.records[:-1] == expected
    assert result.records[-1] == ApiMessageAndVersion(
        BrokerRegistrationChangeRecord(BrokerId=FAILING, BrokerEpoch=epoch, Fenced=1), 0
    )
    assert build_metadata_batch(5, 2, 9, result.records) == _framed_one_by_one(result.records)
    _check_replay(ctx)
