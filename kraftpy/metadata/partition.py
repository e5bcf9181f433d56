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
        replicas = _ints(rec.Replicas)
        return cls(
            replicas,
            _directories(replicas, rec.Directories, rec),
            _ints(rec.Isr),
            _ints(rec.RemovingReplicas),
            _ints(rec.AddingReplicas),
            rec.Leader,
            _recovery_state(rec.LeaderRecoveryState),
            rec.LeaderEpoch,
            rec.PartitionEpoch,
            _ints(rec.EligibleLeaderReplicas),
            _ints(rec.LastKnownElr),
        )

    def merge(self, rec: Any) -> PartitionRegistration:
        """Apply a PartitionChangeRecord (PartitionRegistration.merge).

        The partition epoch goes up on every change; the leader epoch goes up whenever the record
        names a leader, even the current one.
        """
        replicas = self.replicas if rec.Replicas is None else tuple(rec.Replicas)
        new_dirs = rec.Directories
        if new_dirs is not None:
            directories = _directories(replicas, new_dirs, rec)
        elif replicas == self.replicas:
            directories = self.directories
        else:
            # A replica set change without Directories only happens below JBOD's metadata.version,
            # where every entry is MIGRATING; keep what is known per broker anyway.
            known = dict(zip(self.replicas, self.directories, strict=True))
            directories = tuple(known.get(b, MIGRATING) for b in replicas)
        leader = rec.Leader
        if leader == NO_LEADER_CHANGE:
            leader, leader_epoch = self.leader, self.leader_epoch
        else:
            leader_epoch = self.leader_epoch + 1
        lrs = rec.LeaderRecoveryState
        elr = rec.EligibleLeaderReplicas
        last_known_elr = rec.LastKnownElr
        return PartitionRegistration(
            replicas,
            directories,
            self.isr if rec.Isr is None else tuple(rec.Isr),
            self.removing_replicas if rec.RemovingReplicas is None else tuple(rec.RemovingReplicas),
            self.adding_replicas if rec.AddingReplicas is None else tuple(rec.AddingReplicas),
            leader,
            self.leader_recovery_state if lrs == NO_RECOVERY_STATE_CHANGE else _recovery_state(lrs),
            leader_epoch,
            self.partition_epoch + 1,
            self.elr if elr is None else tuple(elr),
            self.last_known_elr if last_known_elr is None else tuple(last_known_elr),
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
