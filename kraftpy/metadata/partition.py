"""One partition's registration, as the metadata log describes it (Kafka's PartitionRegistration).

Built from a PartitionRecord and moved forward by PartitionChangeRecords; the controller and the
image both hold these. Directories are index-aligned with Replicas; a record written before
directory tracking (no Directories, or an empty list) means every replica is MIGRATING.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from enum import IntEnum
from typing import Any, NamedTuple

from kraftpy.metadata.errors import InvalidReplicaDirectoriesError, MetadataReplayError
from protocol.uuid import MIGRATING, Uuid

NO_LEADER = -1
NO_LEADER_CHANGE = -2


class LeaderRecoveryState(IntEnum):
    """Whether the leader finished recovering after an unclean election."""

    RECOVERED = 0
    RECOVERING = 1


# PartitionChangeRecord.LeaderRecoveryState: -1 leaves the state as it is
NO_RECOVERY_STATE_CHANGE = -1


def _ints(values: Iterable[int] | None) -> tuple[int, ...]:
    return () if values is None else tuple(values)


# A dict lookup, not LeaderRecoveryState(value): an enum call costs more than the rest of a replay.
_RECOVERY_STATES = {int(s): s for s in LeaderRecoveryState}


def _recovery_state(value: int) -> LeaderRecoveryState:
    state = _RECOVERY_STATES.get(value)
    if state is None:
        raise MetadataReplayError(f"invalid LeaderRecoveryState {value}")
    return state


def _directories(replicas: tuple[int, ...], directories: Sequence[Uuid] | None, rec: Any) -> tuple[Uuid, ...]:
    if not directories:
        return (MIGRATING,) * len(replicas)
    if len(directories) != len(replicas):
        raise InvalidReplicaDirectoriesError(
            f"{type(rec).__name__} for {rec.TopicId}-{rec.PartitionId} has {len(directories)} "
            f"Directories for {len(replicas)} Replicas {list(replicas)}"
        )
    return tuple(directories)


# Positional through tuple.__new__: NamedTuple's own __new__ is a Python call in between.
_new = tuple.__new__

# The record the last registration was built from, and that registration. A controller replays each
# record into its state and into the committed image it keeps beside it, one after the other: both
# then hold the same immutable registration instead of two equal ones (a 2,000,000-partition restart
# builds half as many). Identity, not equality: records are not changed once replayed. One tuple,
# swapped whole, so threads replaying at once only miss.
_last_built: tuple[Any, Any] = (None, None)


class PartitionRegistration(NamedTuple):
    """Immutable; a tuple because replay makes one per PartitionRecord and PartitionChangeRecord,
    and a tuple is the cheapest immutable value to build (100,000 partitions replay at startup)."""

    replicas: tuple[int, ...]
    directories: tuple[Uuid, ...]
    isr: tuple[int, ...]
    removing_replicas: tuple[int, ...] = ()
    adding_replicas: tuple[int, ...] = ()
    leader: int = NO_LEADER
    leader_recovery_state: LeaderRecoveryState = LeaderRecoveryState.RECOVERED
    leader_epoch: int = 0
    partition_epoch: int = 0
    elr: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()

    @classmethod
    def from_record(cls, rec: Any) -> PartitionRegistration:
        """A PartitionRecord's registration; Directories missing or empty means all MIGRATING."""
        global _last_built
        last = _last_built
        if last[0] is rec:
            return last[1]
        replicas = _ints(rec.Replicas)
        isr = rec.Isr
        built = _new(
            cls,
            (
                replicas,
                _directories(replicas, rec.Directories, rec),
                # Most partitions have every replica in sync: one tuple then serves both (a
                # 2,000,000-partition restart keeps 2,000,000 fewer tuples and their ints).
                replicas if isr == rec.Replicas else _ints(isr),
                _ints(rec.RemovingReplicas),
                _ints(rec.AddingReplicas),
                rec.Leader,
                _recovery_state(rec.LeaderRecoveryState),
                rec.LeaderEpoch,
                rec.PartitionEpoch,
                _ints(rec.EligibleLeaderReplicas),
                _ints(rec.LastKnownElr),
            ),
        )
        _last_built = (rec, built)
        return built

    def merge(self, rec: Any) -> PartitionRegistration:
        """Apply a PartitionChangeRecord (PartitionRegistration.merge).

        The partition epoch goes up on every change; the leader epoch goes up whenever the record
        names a leader, even the current one.
        """
        # One unpack instead of a getter per field: the controller merges a record per partition
        # whose leader or ISR changes, 100,000 of them when a broker with that many goes away.
        old_replicas, old_dirs, isr, removing, adding, leader, lrs, leader_epoch, epoch, elr, lk_elr = self
        replicas = old_replicas if rec.Replicas is None else tuple(rec.Replicas)
        new_dirs = rec.Directories
        if new_dirs is not None:
            directories = _directories(replicas, new_dirs, rec)
        elif replicas == old_replicas:
            directories = old_dirs
        else:
            # A replica set change without Directories only happens below JBOD's metadata.version,
            # where every entry is MIGRATING; keep what is known per broker anyway.
            known = dict(zip(old_replicas, old_dirs, strict=True))
            directories = tuple(known.get(b, MIGRATING) for b in replicas)
        if rec.Leader != NO_LEADER_CHANGE:
            leader, leader_epoch = rec.Leader, leader_epoch + 1
        if rec.LeaderRecoveryState != NO_RECOVERY_STATE_CHANGE:
            lrs = _recovery_state(rec.LeaderRecoveryState)
        change = rec.Isr
        if change is not None:
            isr = tuple(change)
        change = rec.RemovingReplicas
        if change is not None:
            removing = tuple(change)
        change = rec.AddingReplicas
        if change is not None:
            adding = tuple(change)
        change = rec.EligibleLeaderReplicas
        if change is not None:
            elr = tuple(change)
        change = rec.LastKnownElr
        if change is not None:
            lk_elr = tuple(change)
        return _new(
            PartitionRegistration,
            (replicas, directories, isr, removing, adding, leader, lrs, leader_epoch, epoch + 1, elr, lk_elr),
        )

    def has_leader(self) -> bool:
        return self.leader != NO_LEADER

    def is_replica(self, broker_id: int) -> bool:
        return broker_id in self.replicas

    def directory(self, broker_id: int) -> Uuid:
        """The directory holding `broker_id`'s replica (a reserved id when not placed yet)."""
        for replica, directory in zip(self.replicas, self.directories, strict=True):
            if replica == broker_id:
                return directory
        raise ValueError(
            f"broker {broker_id} holds no replica of this partition (replicas {list(self.replicas)})"
        )

    def to_record_fields(self, version: int) -> dict[str, Any]:
        """PartitionRecord field values at `version` (Directories from v1, ELR from v2)."""
        fields: dict[str, Any] = {
            "Replicas": list(self.replicas),
            "Isr": list(self.isr),
            "RemovingReplicas": list(self.removing_replicas),
            "AddingReplicas": list(self.adding_replicas),
            "Leader": self.leader,
            "LeaderRecoveryState": int(self.leader_recovery_state),
            "LeaderEpoch": self.leader_epoch,
            "PartitionEpoch": self.partition_epoch,
        }
        if version >= 1:
            fields["Directories"] = list(self.directories)
        if version >= 2:
            fields["EligibleLeaderReplicas"] = list(self.elr)
            fields["LastKnownElr"] = list(self.last_known_elr)
        return fields
