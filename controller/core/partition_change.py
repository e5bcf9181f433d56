"""PartitionChangeBuilder: from a partition and the wanted changes to one PartitionChangeRecord.

Every path that changes a partition (fencing, failed directories, AssignReplicasToDirs,
AlterPartition, elections) goes through here, so the rules live in one place (reference 7.9):

- the leader is kept while it stays in the ISR and acceptable; otherwise the first replica, in
  Replicas order, that is in the target ISR and acceptable; otherwise none (-1), or with an
  UNCLEAN election the first acceptable replica outside the ISR, which becomes the whole ISR with
  LeaderRecoveryState RECOVERING;
- "acceptable" is decided by the caller for a (broker, directory) pair, so a replica whose dir is
  offline (KIP-858) is never chosen; the directory looked at is the one this change leaves;
- the ISR is never written empty: taking out its last member leaves it as it was, without leader;
- replay bumps the leader epoch whenever Leader is set, so the builder sets Leader only when the
  leader changes, plus the two bumps Kafka keeps: an ISR shrink below metadata.version 3.6-IV0
  (or during a ZooKeeper migration), and a replica set that drops a replica;
- Directories are written only from JBOD's metadata.version on (a PartitionChangeRecord below it
  cannot carry them, field bug 6); new replicas get their broker's default directory;
- a reassignment under way (KIP-455: AddingReplicas or RemovingReplicas set) completes in whichever
  change first leaves every replica it keeps in the ISR: Replicas loses the removing ones, the ISR
  too, both lists are cleared, and a removed leader is replaced.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from typing import Self

from controller.core.metadata_version import MV_3_2_IV0, MV_3_6_IV0, MV_3_7_IV2, partition_record_version
from kraftpy.metadata import NO_LEADER, LeaderRecoveryState, PartitionRegistration
from protocol.framing import ApiMessageAndVersion
from protocol.metadata_records import PartitionChangeRecord
from protocol.uuid import MIGRATING, Uuid

LeaderAcceptor = Callable[[int, Uuid], bool]
"""Whether a broker may lead (and count as online) with its replica in the given directory."""

DefaultDirProvider = Callable[[int], Uuid]


class Election(enum.Enum):
    PREFERRED = "preferred"
    ONLINE = "online"
    UNCLEAN = "unclean"


class PartitionChangeBuilder:
    __slots__ = (
        "_default_dir",
        "_directory_changes",
        "_election",
        "_is_acceptable",
        "_metadata_version",
        "_partition",
        "_partition_id",
        "_target_adding",
        "_target_isr",
        "_target_lrs",
        "_target_removing",
        "_target_replicas",
        "_topic_id",
        "_zk_migration",
    )

    def __init__(
        self,
        partition: PartitionRegistration,
        topic_id: Uuid,
        partition_id: int,
        is_acceptable_leader: LeaderAcceptor,
        metadata_version: int,
        *,
        default_dir: DefaultDirProvider | None = None,
        zk_migration_enabled: bool = False,
    ) -> None:
        self._partition = partition
        self._topic_id = topic_id
        self._partition_id = partition_id
        self._is_acceptable = is_acceptable_leader
        self._metadata_version = metadata_version
        self._default_dir = default_dir
        self._zk_migration = zk_migration_enabled
        self._target_isr: tuple[int, ...] | None = None
        self._target_replicas: tuple[int, ...] | None = None
        self._target_lrs: int | None = None
        self._target_removing: tuple[int, ...] | None = None
        self._target_adding: tuple[int, ...] | None = None
        self._directory_changes: dict[int, Uuid] | None = None
        self._election = Election.ONLINE

    def set_target_isr(self, isr: Sequence[int]) -> Self:
        self._target_isr = tuple(isr)
        return self

    def set_target_replicas(self, replicas: Sequence[int]) -> Self:
        self._target_replicas = tuple(replicas)
        return self

    def set_target_removing(self, removing: Sequence[int]) -> Self:
        self._target_removing = tuple(removing)
        return self

    def set_target_adding(self, adding: Sequence[int]) -> Self:
        self._target_adding = tuple(adding)
        return self

    def set_directory(self, broker_id: int, directory: Uuid) -> Self:
        if self._directory_changes is None:
            self._directory_changes = {}
        self._directory_changes[broker_id] = directory
        return self

    def set_election(self, election: Election) -> Self:
        self._election = election
        return self

    def set_target_leader_recovery_state(self, state: int) -> Self:
        self._target_lrs = state
        return self

    def build(self) -> ApiMessageAndVersion | None:
        """The record for the change, or None when nothing would change."""
        return build_change(
            self._partition,
            self._topic_id,
            self._partition_id,
            self._is_acceptable,
            self._metadata_version,
            self._default_dir,
            self._zk_migration,
            self._election,
            self._target_isr,
            self._target_replicas,
            self._target_removing,
            self._target_adding,
            self._directory_changes,
            self._target_lrs,
        )


# A frozen dataclass's __init__ pays for object.__setattr__ per field, and a keyword call to the
# record's __init__ costs twice a positional one; one record per changed partition is built here,
# 100,000 when a dir fails.
_new_record = object.__new__
_set_message = ApiMessageAndVersion.__dict__["message"].__set__
_set_version = ApiMessageAndVersion.__dict__["version"].__set__
_change_record = PartitionChangeRecord._from_values  # type: ignore[attr-defined]
_NO_CHANGE = -2  # PartitionChangeRecord.Leader: the leader stays
_NO_LRS_CHANGE = -1  # PartitionChangeRecord.LeaderRecoveryState: the state stays
_record_versions: dict[int, int] = {}


def build_change(
    p: PartitionRegistration,
    topic_id: Uuid,
    partition_id: int,
    accept: LeaderAcceptor,
    mv: int,
    default_dir: DefaultDirProvider | None,
    zk_migration: bool,
    election: Election,
    target_isr: tuple[int, ...] | None = None,
    target_replicas: tuple[int, ...] | None = None,
    target_removing: tuple[int, ...] | None = None,
    target_adding: tuple[int, ...] | None = None,
    directory_changes: dict[int, Uuid] | None = None,
    target_lrs: int | None = None,
) -> ApiMessageAndVersion | None:
    """PartitionChangeBuilder.build without the builder: the generators that change many
    partitions at once call it directly, with the same rules (module doc)."""
    track_dirs = mv >= MV_3_7_IV2
    # One unpack instead of a property read per use: this runs once per changed partition.
    p_replicas, p_dirs, p_isr, p_removing, p_adding, p_leader, p_lrs, _, _, _, _ = p
    replicas = p_replicas if target_replicas is None else target_replicas
    isr = p_isr if target_isr is None else target_isr
    removing = p_removing if target_removing is None else target_removing
    adding = p_adding if target_adding is None else target_adding
    if removing or adding:
        done = completed_reassignment(replicas, isr, removing)
        if done is not None:
            (replicas, isr), removing, adding = done, (), ()
    replicas_changed = replicas is not p_replicas and replicas != p_replicas
    if replicas_changed:
        isr = tuple(b for b in isr if b in replicas)
    if not replicas_changed and not (directory_changes and track_dirs):
        dirs = p_dirs
    else:
        dirs = _target_directories(p, replicas, replicas_changed, track_dirs, default_dir, directory_changes)

    # Each field stays None (or the record's "no change" value) unless it changes.
    leader, unclean = _elect(p_leader, election, accept, replicas, isr, dirs)
    new_leader = leader if leader != p_leader else _NO_CHANGE
    new_isr = new_lrs = None
    if unclean:
        new_isr = [leader]
        if mv >= MV_3_2_IV0:
            new_lrs = LeaderRecoveryState.RECOVERING.value
    elif isr and isr != p_isr:
        new_isr = list(isr)
        if (
            new_leader == _NO_CHANGE
            and (mv < MV_3_6_IV0 or zk_migration)
            and any(b not in isr for b in p_isr)
        ):
            new_leader = p_leader
    new_replicas = new_dirs = None
    if replicas_changed:
        new_replicas = list(replicas)
        if new_leader == _NO_CHANGE and any(b not in replicas for b in p_replicas):
            new_leader = p_leader
    if track_dirs and (replicas_changed or (dirs is not p_dirs and dirs != p_dirs)):
        new_dirs = list(dirs)
    new_removing = list(removing) if removing != p_removing else None
    new_adding = list(adding) if adding != p_adding else None
    if target_lrs is not None and new_lrs is None and target_lrs != p_lrs:
        new_lrs = target_lrs
    if (
        new_leader == _NO_CHANGE
        and new_isr is None
        and new_lrs is None
        and new_replicas is None
        and new_dirs is None
        and new_removing is None
        and new_adding is None
    ):
        return None
    version = _record_versions.get(mv)
    if version is None:
        version = _record_versions[mv] = partition_record_version(mv)
    out = _new_record(ApiMessageAndVersion)
    _set_message(
        out,
        _change_record(
            partition_id,
            topic_id,
            new_isr,
            new_leader,
            new_replicas,
            new_removing,
            new_adding,
            _NO_LRS_CHANGE if new_lrs is None else new_lrs,
            None,
            None,
            new_dirs,
        ),
    )
    _set_version(out, version)
    return out


def _target_directories(
    p: PartitionRegistration,
    replicas: tuple[int, ...],
    replicas_changed: bool,
    track_dirs: bool,
    default_dir: DefaultDirProvider | None,
    changes: dict[int, Uuid] | None,
) -> tuple[Uuid, ...]:
    if replicas_changed:
        old = dict(zip(p.replicas, p.directories, strict=True))
        default = default_dir if track_dirs else None
        dirs = [old[b] if b in old else (default(b) if default is not None else MIGRATING) for b in replicas]
    else:
        dirs = list(p.directories)
    if changes and track_dirs:
        for i, b in enumerate(replicas):
            d = changes.get(b)
            if d is not None:
                dirs[i] = d
    return tuple(dirs)


def _elect(
    current: int,
    election: Election,
    accept: LeaderAcceptor,
    replicas: tuple[int, ...],
    isr: tuple[int, ...],
    dirs: tuple[Uuid, ...],
) -> tuple[int, bool]:
    """(leader, whether it came from an unclean election)."""
    # Loops over the replicas only where a candidate can come out of them: an ISR emptied by the
    # change (the last member's dir failed) elects nobody, cleanly.
    if current != NO_LEADER and current in isr and current in replicas:
        current_valid = accept(current, dirs[replicas.index(current)])
    else:
        current_valid = False
    if election is _PREFERRED:
        if replicas and replicas[0] in isr and accept(replicas[0], dirs[0]):
            return replicas[0], False
        if current_valid:
            return current, False
    elif current_valid:
        return current, False
    if isr:
        for i, b in enumerate(replicas):
            if b in isr and accept(b, dirs[i]):
                return b, False
    if election is _UNCLEAN:
        for i, b in enumerate(replicas):
            if accept(b, dirs[i]):
                return b, True
    return NO_LEADER, False


_PREFERRED = Election.PREFERRED
_UNCLEAN = Election.UNCLEAN


def completed_reassignment(
    replicas: tuple[int, ...], isr: tuple[int, ...], removing: tuple[int, ...]
) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """(replicas, ISR) once a reassignment is done, or None while it is not: every replica it keeps
    must be in the ISR, and neither list may end up empty (PartitionReassignmentReplicas)."""
    kept_isr = tuple(b for b in isr if b not in removing)
    kept = tuple(b for b in replicas if b not in removing)
    if not kept_isr or not kept or any(b not in kept_isr for b in kept):
        return None
    return kept, kept_isr
