from __future__ import annotations

import pytest

from kraftpy.metadata import (
    InvalidReplicaDirectoriesError,
    LeaderRecoveryState,
    PartitionRegistration,
)
from protocol import metadata_records as mr
from protocol.uuid import LOST, MIGRATING, UNASSIGNED
from tests.image.records import DIR_1A, DIR_2A, DIR_3A, TOPIC_A, partition


def test_missing_or_empty_directories_mean_all_migrating() -> None:
    for rec in (partition(TOPIC_A, 0, [1, 2, 3]), partition(TOPIC_A, 0, [1, 2, 3], [])):
        reg = PartitionRegistration.from_record(rec)
        assert reg.directories == (MIGRATING, MIGRATING, MIGRATING)
        assert reg.directory(2) == MIGRATING


def test_directories_not_aligned_with_replicas_are_rejected() -> None:
    with pytest.raises(InvalidReplicaDirectoriesError, match="2 Directories for 3 Replicas"):
        PartitionRegistration.from_record(partition(TOPIC_A, 0, [1, 2, 3], [DIR_1A, DIR_2A]))


def test_directory_of_each_replica() -> None:
    reg = PartitionRegistration.from_record(partition(TOPIC_A, 0, [1, 2, 3], [DIR_1A, UNASSIGNED, LOST]))
    assert [reg.directory(b) for b in (1, 2, 3)] == [DIR_1A, UNASSIGNED, LOST]
    with pytest.raises(ValueError, match="broker 4 holds no replica"):
        reg.directory(4)


def test_an_isr_equal_to_the_replicas_is_the_replicas_tuple_itself() -> None:
    full = PartitionRegistration.from_record(partition(TOPIC_A, 0, [1001, 1002, 1003]))
    assert full.isr == (1001, 1002, 1003) and full.isr is full.replicas
    shrunk = PartitionRegistration.from_record(partition(TOPIC_A, 1, [1001, 1002, 1003], isr=[1002]))
    assert shrunk.isr == (1002,) and shrunk.replicas == (1001, 1002, 1003)
    reordered = PartitionRegistration.from_record(partition(TOPIC_A, 2, [1, 2, 3], isr=[3, 2, 1]))
    assert reordered.isr == (3, 2, 1) and reordered.isr is not reordered.replicas
    # Merging an ISR change leaves the replicas as they were.
    after = full.merge(_change(Isr=[1001]))
    assert after.isr == (1001,) and after.replicas == (1001, 1002, 1003)


def _change(**kw: object) -> mr.PartitionChangeRecord:
    return mr.PartitionChangeRecord(PartitionId=0, TopicId=TOPIC_A, **kw)


def test_partition_epoch_bumps_on_every_change_and_leader_epoch_whenever_leader_is_named() -> None:
    reg = PartitionRegistration.from_record(partition(TOPIC_A, 0, [1, 2, 3], [DIR_1A, DIR_2A, DIR_3A]))
    assert (reg.leader, reg.leader_epoch, reg.partition_epoch) == (1, 0, 0)

    isr_only = reg.merge(_change(Isr=[1, 2]))
    assert isr_only.isr == (1, 2)
    assert (isr_only.leader, isr_only.leader_epoch, isr_only.partition_epoch) == (1, 0, 1)

    same_leader = isr_only.merge(_change(Leader=1))
    assert (same_leader.leader, same_leader.leader_epoch, same_leader.partition_epoch) == (1, 1, 2)

    no_leader = same_leader.merge(_change(Leader=-1))
    assert (no_leader.leader, no_leader.leader_epoch, no_leader.partition_epoch) == (-1, 2, 3)
    assert not no_leader.has_leader()

    dirs_only = no_leader.merge(_change(Directories=[DIR_1A, LOST, DIR_3A]))
    assert dirs_only.directory(2) == LOST
    assert (dirs_only.leader_epoch, dirs_only.partition_epoch) == (2, 4)


def test_leader_recovery_state_minus_one_keeps_it() -> None:
    reg = PartitionRegistration.from_record(partition(TOPIC_A, 0, [1]))
    recovering = reg.merge(_change(Leader=1, LeaderRecoveryState=1))
    assert recovering.leader_recovery_state is LeaderRecoveryState.RECOVERING
    assert recovering.merge(_change(Isr=[1])).leader_recovery_state is LeaderRecoveryState.RECOVERING
    assert (
        recovering.merge(_change(LeaderRecoveryState=0)).leader_recovery_state
        is LeaderRecoveryState.RECOVERED
    )


def test_reassignment_fields_and_replica_change_keep_known_directories() -> None:
    reg = PartitionRegistration.from_record(partition(TOPIC_A, 0, [1, 2], [DIR_1A, DIR_2A]))
    moving = reg.merge(_change(Replicas=[1, 2, 3], AddingReplicas=[3]))
    assert moving.adding_replicas == (3,)
    assert moving.directories == (DIR_1A, DIR_2A, MIGRATING)
    done = moving.merge(_change(Replicas=[3, 1], AddingReplicas=[], Directories=[DIR_3A, DIR_1A]))
    assert done.replicas == (3, 1)
    assert done.directory(3) == DIR_3A
    with pytest.raises(InvalidReplicaDirectoriesError):
        done.merge(_change(Replicas=[3, 1, 2], Directories=[DIR_3A]))


def test_elr_fields() -> None:
    rec = mr.PartitionRecord(
        PartitionId=0,
        TopicId=TOPIC_A,
        Replicas=[1, 2],
        Isr=[1],
        Leader=1,
        EligibleLeaderReplicas=[2],
        LastKnownElr=[],
    )
    reg = PartitionRegistration.from_record(rec)
    assert reg.elr == (2,)
    assert reg.merge(_change(EligibleLeaderReplicas=[], LastKnownElr=[2])).last_known_elr == (2,)
    assert reg.merge(_change(Isr=[1, 2])).elr == (2,)


def test_a_record_replayed_twice_in_a_row_gives_one_shared_registration() -> None:
    rec = partition(TOPIC_A, 0, [1, 2, 3], [DIR_1A, DIR_2A, DIR_3A])
    first = PartitionRegistration.from_record(rec)
    assert PartitionRegistration.from_record(rec) is first
    # An equal record of its own gets an equal registration built from it.
    twin = partition(TOPIC_A, 0, [1, 2, 3], [DIR_1A, DIR_2A, DIR_3A])
    built = PartitionRegistration.from_record(twin)
    assert built == first and built is not first
    other = partition(TOPIC_A, 1, [2, 3], [DIR_2A, DIR_3A])
    assert PartitionRegistration.from_record(other).replicas == (2, 3)
    assert PartitionRegistration.from_record(rec) == first
