"""PartitionChangeBuilder alone: elections, the never-empty ISR, leader epochs, directories."""

from __future__ import annotations

from controller.core.metadata_version import MV_3_4_IV0, MV_3_7_IV2, MV_3_9_IV0
from controller.core.partition_change import Election, PartitionChangeBuilder
from kraftpy.metadata import PartitionRegistration
from protocol.metadata_records import PartitionChangeRecord
from protocol.uuid import MIGRATING, UNASSIGNED, Uuid

TID = Uuid.from_longs(99, 1)
A, B, C = (Uuid.from_longs(500, i) for i in (1, 2, 3))


def part(replicas=(1, 2, 3), isr=(1, 2, 3), leader=1, dirs=(A, B, C), **kw) -> PartitionRegistration:  # type: ignore[no-untyped-def]
    return PartitionRegistration(
        replicas=tuple(replicas), directories=tuple(dirs), isr=tuple(isr), leader=leader, **kw
    )


def everyone(broker: int, directory: Uuid) -> bool:
    return True


def builder(p: PartitionRegistration, accept=everyone, mv: int = MV_3_9_IV0, **kw) -> PartitionChangeBuilder:  # type: ignore[no-untyped-def]
    return PartitionChangeBuilder(p, TID, 0, accept, mv, **kw)


def rec(**fields) -> PartitionChangeRecord:  # type: ignore[no-untyped-def]
    return PartitionChangeRecord(PartitionId=0, TopicId=TID, **fields)


def test_no_change_builds_nothing() -> None:
    assert builder(part()).build() is None
    assert builder(part()).set_target_isr([1, 2, 3]).build() is None


def test_shrinking_the_isr_keeps_a_valid_leader_without_an_epoch_bump() -> None:
    r = builder(part()).set_target_isr([1, 3]).build()
    assert r is not None and r.message == rec(Isr=[1, 3]) and r.version == 1


def test_isr_shrink_bumps_the_leader_epoch_below_3_6() -> None:
    r = builder(part(dirs=(MIGRATING,) * 3), mv=MV_3_4_IV0).set_target_isr([1, 3]).build()
    assert r is not None and r.message == rec(Isr=[1, 3], Leader=1) and r.version == 0


def test_removing_the_leader_elects_the_next_replica_in_replicas_order() -> None:
    r = builder(part(replicas=(1, 3, 2))).set_target_isr([2, 3]).build()
    assert r is not None and r.message == rec(Isr=[2, 3], Leader=3)


def test_unacceptable_replicas_are_skipped() -> None:
    r = builder(part(), accept=lambda b, d: b != 2).set_target_isr([2, 3]).build()
    assert r is not None and r.message == rec(Isr=[2, 3], Leader=3)


def test_acceptability_is_decided_on_the_replicas_directory() -> None:
    # Broker 2's replica is acceptable only once it is in dir B.
    p = part(leader=-1, isr=(2,), dirs=(A, UNASSIGNED, C))
    accept = lambda b, d: d != UNASSIGNED  # noqa: E731
    assert builder(p, accept=accept).build() is None
    r = builder(p, accept=accept).set_directory(2, B).build()
    assert r is not None and r.message == rec(Leader=2, Directories=[A, B, C])


def test_the_isr_is_never_written_empty() -> None:
    r = builder(part(isr=(1,))).set_target_isr([]).build()
    assert r is not None and r.message == rec(Leader=-1)


def test_unclean_election_takes_a_replica_outside_the_isr_and_marks_recovery() -> None:
    p = part(isr=(1,), leader=1)
    r = builder(p, accept=lambda b, d: b != 1).set_target_isr([]).set_election(Election.UNCLEAN).build()
    assert r is not None and r.message == rec(Isr=[2], Leader=2, LeaderRecoveryState=1)


def test_unclean_prefers_the_isr_when_possible() -> None:
    r = builder(part()).set_target_isr([2, 3]).set_election(Election.UNCLEAN).build()
    assert r is not None and r.message == rec(Isr=[2, 3], Leader=2)


def test_preferred_election_moves_leadership_to_the_first_replica() -> None:
    r = builder(part(leader=2)).set_election(Election.PREFERRED).build()
    assert r is not None and r.message == rec(Leader=1)
    assert (
        builder(part(leader=2), accept=lambda b, d: b != 1).set_election(Election.PREFERRED).build() is None
    )


def test_directories_are_written_only_from_jbod_metadata_version() -> None:
    r = builder(part(), mv=MV_3_7_IV2).set_directory(2, C).build()
    assert r is not None and r.message == rec(Directories=[A, C, C])
    assert builder(part(dirs=(MIGRATING,) * 3), mv=MV_3_4_IV0).set_directory(2, C).build() is None


def test_new_replicas_get_their_default_dir_and_dropping_one_bumps_the_epoch() -> None:
    r = builder(part(), default_dir=lambda b: UNASSIGNED).set_target_replicas([1, 2, 4]).build()
    assert r is not None
    assert r.message == rec(Isr=[1, 2], Leader=1, Replicas=[1, 2, 4], Directories=[A, B, UNASSIGNED])


def test_replica_change_below_jbod_carries_no_directories() -> None:
    r = builder(part(dirs=(MIGRATING,) * 3), mv=MV_3_4_IV0).set_target_replicas([1, 2, 3, 4]).build()
    assert r is not None and r.version == 0
    assert r.message == rec(Replicas=[1, 2, 3, 4])
    merged = part(dirs=(MIGRATING,) * 3).merge(r.message)
    assert merged.directories == (MIGRATING,) * 4


def test_merge_bumps_epochs_as_kafka_does() -> None:
    p = part()
    same_leader = p.merge(rec(Leader=1))
    assert (same_leader.leader_epoch, same_leader.partition_epoch) == (1, 1)
    isr_only = same_leader.merge(rec(Isr=[1, 2]))
    assert (isr_only.leader_epoch, isr_only.partition_epoch, isr_only.isr) == (1, 2, (1, 2))


def test_leader_recovery_state_target() -> None:
    p = part(isr=(2,), leader=2, leader_recovery_state=1)
    r = builder(p).set_target_leader_recovery_state(0).build()
    assert r is not None and r.message == rec(LeaderRecoveryState=0)


def test_a_reassignment_completes_once_the_target_isr_holds_every_kept_replica() -> None:
    D = Uuid.from_longs(500, 4)
    p = part(replicas=(1, 2, 4, 3), dirs=(A, B, D, C), adding_replicas=(4,), removing_replicas=(3,))
    assert builder(p).set_target_isr([1, 2, 3]).build() is None, "4 is not in the ISR yet"
    r = builder(p).set_target_isr([1, 2, 3, 4]).build()
    assert r is not None and r.message == rec(
        Isr=[1, 2, 4],
        Leader=1,
        Replicas=[1, 2, 4],
        RemovingReplicas=[],
        AddingReplicas=[],
        Directories=[A, B, D],
    )


def test_a_completed_reassignment_below_jbod_carries_no_directories() -> None:
    p = part(replicas=(1, 2, 3), dirs=(MIGRATING,) * 3, removing_replicas=(3,))
    r = builder(p, mv=MV_3_4_IV0).set_target_isr([1, 2]).build()
    assert r is not None and r.version == 0
    assert r.message == rec(Isr=[1, 2], Leader=1, Replicas=[1, 2], RemovingReplicas=[])
