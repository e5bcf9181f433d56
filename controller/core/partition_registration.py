"""One partition as the controller holds it, built from a PartitionRecord and merged with changes."""

from __future__ import annotations

from typing import Any

from protocol.uuid import MIGRATING, Uuid

NO_LEADER = -1
NO_LEADER_CHANGE = -2

LEADER_RECOVERED = 0
LEADER_RECOVERING = 1
NO_RECOVERY_STATE_CHANGE = -1


class InvalidReplicaDirectoriesError(ValueError):
    """A record whose Directories do not line up with its Replicas."""


def _directories(directories: list[Uuid] | None, replicas: tuple[int, ...], what: str) -> tuple[Uuid, ...]:
    # Missing or empty Directories mean "placed before directories were tracked" (Kafka: all MIGRATING).
    if not directories:
        return (MIGRATING,) * len(replicas)
    if len(directories) != len(replicas):
        raise InvalidReplicaDirectoriesError(
            f"{what}: {len(directories)} directories for {len(replicas)} replicas"
        )
    return tuple(directories)


_FIELDS = (
    "replicas",
    "directories",
    "isr",
    "removing_replicas",
    "adding_replicas",
    "leader",
    "leader_recovery_state",
    "leader_epoch",
    "partition_epoch",
    "elr",
    "last_known_elr",
)


class PartitionRegistration:
    """A value object: never change one, `merge` gives the next.

    A plain slotted class rather than a frozen dataclass: a controller merges one of these per
    PartitionChangeRecord, and a broker leading 100,000 partitions in a failed dir makes as many.
    """

    __slots__ = _FIELDS

    replicas: tuple[int, ...]
    directories: tuple[Uuid, ...]
    isr: tuple[int, ...]
    removing_replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...]
    leader: int
    leader_recovery_state: int
    leader_epoch: int
    partition_epoch: int
    elr: tuple[int, ...]
    last_known_elr: tuple[int, ...]

    def __init__(
        self,
        replicas: tuple[int, ...],
        directories: tuple[Uuid, ...],
        isr: tuple[int, ...],
        removing_replicas: tuple[int, ...] = (),
        adding_replicas: tuple[int, ...] = (),
        leader: int = NO_LEADER,
        leader_recovery_state: int = LEADER_RECOVERED,
        leader_epoch: int = 0,
        partition_epoch: int = 0,
        elr: tuple[int, ...] = (),
        last_known_elr: tuple[int, ...] = (),
    ) -> None:
        self.replicas = replicas
        self.directories = directories
        self.isr = isr
        self.removing_replicas = removing_replicas
        self.adding_replicas = adding_replicas
        self.leader = leader
        self.leader_recovery_state = leader_recovery_state
        self.leader_epoch = leader_epoch
        self.partition_epoch = partition_epoch
        self.elr = elr
        self.last_known_elr = last_known_elr

    def _values(self) -> tuple[object, ...]:
        return tuple(getattr(self, f) for f in _FIELDS)

    def __eq__(self, other: object) -> bool:
        if type(other) is not PartitionRegistration:
            return NotImplemented
        return self._values() == other._values()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        inner = ", ".join(f"{f}={getattr(self, f)!r}" for f in _FIELDS)
        return f"PartitionRegistration({inner})"

    @classmethod
    def from_record(cls, record: Any) -> PartitionRegistration:
        replicas = tuple(record.Replicas)
        return cls(
            replicas=replicas,
            directories=_directories(record.Directories, replicas, "PartitionRecord"),
            isr=tuple(record.Isr),
            removing_replicas=tuple(record.RemovingReplicas),
            adding_replicas=tuple(record.AddingReplicas),
            leader=record.Leader,
            leader_recovery_state=record.LeaderRecoveryState,
            leader_epoch=record.LeaderEpoch,
            partition_epoch=record.PartitionEpoch,
            elr=tuple(record.EligibleLeaderReplicas or ()),
            last_known_elr=tuple(record.LastKnownElr or ()),
        )

    def merge(self, change: Any) -> PartitionRegistration:
        """The partition after a PartitionChangeRecord: every change bumps the partition epoch,
        and any Leader other than "no change" bumps the leader epoch (even the same leader)."""
        replicas = self.replicas if change.Replicas is None else tuple(change.Replicas)
        if change.Directories is not None:
            directories = _directories(change.Directories, replicas, "PartitionChangeRecord")
        elif change.Replicas is not None:
            # Replicas changed without directories (a record written below JBOD's metadata.version):
            # replicas that stay keep their dir, new ones are MIGRATING.
            old = dict(zip(self.replicas, self.directories, strict=True))
            directories = tuple(old.get(b, MIGRATING) for b in replicas)
        else:
            directories = self.directories
        leader, leader_epoch = self.leader, self.leader_epoch
        if change.Leader != NO_LEADER_CHANGE:
            leader, leader_epoch = change.Leader, leader_epoch + 1
        lrs = self.leader_recovery_state
        if change.LeaderRecoveryState != NO_RECOVERY_STATE_CHANGE:
            lrs = change.LeaderRecoveryState
        elr = change.EligibleLeaderReplicas
        last_known_elr = change.LastKnownElr
        return PartitionRegistration(
            replicas,
            directories,
            self.isr if change.Isr is None else tuple(change.Isr),
            self.removing_replicas if change.RemovingReplicas is None else tuple(change.RemovingReplicas),
            self.adding_replicas if change.AddingReplicas is None else tuple(change.AddingReplicas),
            leader,
            lrs,
            leader_epoch,
            self.partition_epoch + 1,
            self.elr if elr is None else tuple(elr),
            self.last_known_elr if last_known_elr is None else tuple(last_known_elr),
        )

    def directory(self, broker_id: int) -> Uuid | None:
        """The dir assigned to `broker_id`'s replica, or None when it is not a replica."""
        for b, d in zip(self.replicas, self.directories, strict=True):
            if b == broker_id:
                return d
        return None

    def has_leader(self) -> bool:
        return self.leader != NO_LEADER
