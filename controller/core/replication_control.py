"""Topics and partitions, their indexes, and the record generators that move leaders and ISRs.

Indexes (kept up to date by replay, so no operation ever scans every partition):
- replicas by (broker, directory) (`ReplicaIndex`): the partitions to touch when a directory
  fails, the KIP-858 "all placed?" check before unfencing a multi-dir broker, and through it the
  partitions a broker leads or is in the ISR of, for fencing and controlled shutdown;
- the set of leaderless partitions;
- the partitions being reassigned (KIP-455), for ListPartitionReassignments and the gauge.
Every index keeps its partitions in the order they joined it, so generated records come out in the
same order on every run.

Generators (`handle_*`, `generate_leader_and_isr_updates`) append to the caller's record list and
read partitions and registrations through an `OperationView`, which holds what the operation's
earlier records will have changed; two steps of one operation therefore never contradict each other.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from controller.core.cluster_control import ClusterControlManager
from controller.core.configuration_control import ConfigurationControlManager
from controller.core.feature_control import FeatureControlManager
from controller.core.metadata_version import MV_3_3_IV2, MV_3_3_IV3
from controller.core.partition_change import Election, LeaderAcceptor, PartitionChangeBuilder, build_change
from controller.core.placement import default_dir
from controller.core.replica_index import ReplicaIndex
from kraftpy.metadata import NO_LEADER, BrokerRegistration, PartitionRegistration
from protocol.framing import ApiMessageAndVersion
from protocol.metadata_records import BrokerRegistrationChangeRecord, FenceBrokerRecord, UnfenceBrokerRecord
from protocol.uuid import Uuid

TopicIdPartition = tuple[Uuid, int]
_UNSEEN: Any = object()


@dataclass(slots=True)
class TopicControlInfo:
    name: str
    id: Uuid
    partitions: dict[int, PartitionRegistration] = field(default_factory=dict)


_PartitionSet = dict[TopicIdPartition, None]
_ReplicationSnapshot = tuple[
    dict[Uuid, TopicControlInfo],
    dict[str, Uuid],
    ReplicaIndex,
    _PartitionSet,
    _PartitionSet,
    int,
]


class OperationView:
    """Partitions and broker registrations as the records an operation produced so far leave them.

    A changed partition is kept as (partition before, change) and merged only when read again:
    most operations never look twice, and failing a dir can change 100,000 partitions at once.
    Changes recorded in bulk (`record_changes`) are not even indexed until something reads one.
    """

    __slots__ = ("_partitions", "_unindexed", "default_dir", "registrations", "unclean")

    def __init__(self) -> None:
        self._partitions: dict[
            TopicIdPartition, PartitionRegistration | tuple[PartitionRegistration, Any]
        ] = {}
        self._unindexed: list[list[tuple[TopicIdPartition, PartitionRegistration, Any]]] = []
        self.registrations: dict[int, BrokerRegistration] = {}
        self.unclean: dict[Uuid, bool] = {}
        self.default_dir: Any = None

    def _index(self) -> None:
        partitions = self._partitions
        for changes in self._unindexed:
            for tp, before, change in changes:
                partitions[tp] = (before, change)
        self._unindexed = []

    def partition(self, tp: TopicIdPartition) -> PartitionRegistration | None:
        if self._unindexed:
            self._index()
        entry = self._partitions.get(tp)
        if entry is None or type(entry) is PartitionRegistration:
            return entry
        merged = entry[0].merge(entry[1])
        self._partitions[tp] = merged
        return merged

    def record_change(self, tp: TopicIdPartition, before: PartitionRegistration, change: Any) -> None:
        if self._unindexed:
            self._index()
        self._partitions[tp] = (before, change)

    def record_changes(self, changes: list[tuple[TopicIdPartition, PartitionRegistration, Any]]) -> None:
        """Many record_change calls, in order; the list becomes the view's."""
        if changes:
            self._unindexed.append(changes)

    def changed(self) -> list[tuple[TopicIdPartition, PartitionRegistration]]:
        if self._unindexed:
            self._index()
        out = []
        for tp in list(self._partitions):
            p = self.partition(tp)
            assert p is not None
            out.append((tp, p))
        return out

    def has_changes(self) -> bool:
        return bool(self._partitions) or bool(self._unindexed)


class ReplicationControlManager:
    def __init__(
        self,
        cluster: ClusterControlManager,
        features: FeatureControlManager,
        configs: ConfigurationControlManager,
        *,
        zk_migration_enabled: bool = False,
    ) -> None:
        self.cluster = cluster
        self.features = features
        self.configs = configs
        self.zk_migration_enabled = zk_migration_enabled
        self.topics: dict[Uuid, TopicControlInfo] = {}
        self.topics_by_name: dict[str, Uuid] = {}
        # The one per-broker index: which partitions have a replica in each of a broker's dirs. The
        # partitions a broker leads or is in the ISR of are found through it (ISR and leader are
        # among the replicas): two more indexes cost a 2,000,000-partition restart half its replay,
        # for queries a fencing or a controlled shutdown makes once over one broker's replicas.
        self._replicas = ReplicaIndex(self._placement)
        self._leaderless: dict[TopicIdPartition, None] = {}
        self._reassigning: dict[TopicIdPartition, None] = {}
        # Kept by replay so the partition caps and the GlobalPartitionCount gauge never walk every topic.
        self._partition_count = 0

    # ---- replay ------------------------------------------------------------------------------

    def replay_topic(self, record: Any) -> None:
        if record.Name in self.topics_by_name or record.TopicId in self.topics:
            raise ValueError(f"TopicRecord: topic {record.Name} ({record.TopicId}) already exists")
        self.topics[record.TopicId] = TopicControlInfo(record.Name, record.TopicId)
        self.topics_by_name[record.Name] = record.TopicId

    def replay_partition(self, record: Any, offset: int = -1) -> None:
        topic = self.topics.get(record.TopicId)
        if topic is None:
            raise ValueError(f"PartitionRecord for unknown topic {record.TopicId}")
        new = PartitionRegistration.from_record(record)
        # Keyed by the topic's own id object: the indexes then share one per topic, not one per record.
        tp = (topic.id, record.PartitionId)
        old = topic.partitions.get(record.PartitionId)
        topic.partitions[record.PartitionId] = new
        if old is None:
            self._index_new(tp, new)
        else:
            self._reindex_change(tp, old, new)

    def replay_partition_change(self, record: Any, offset: int = -1) -> None:
        topic_id = record.TopicId
        partition_id = record.PartitionId
        topic = self.topics.get(topic_id)
        old = topic.partitions.get(partition_id) if topic is not None else None
        if topic is None or old is None:
            raise ValueError(f"PartitionChangeRecord for unknown partition {topic_id}:{partition_id}")
        new = old.merge(record)
        topic.partitions[partition_id] = new
        self._reindex_change((topic.id, partition_id), old, new)

    def replay_remove_topic(self, record: Any) -> str:
        """Drops the topic; returns its name so its configs can go too."""
        topic = self.topics.pop(record.TopicId, None)
        if topic is None:
            raise ValueError(f"RemoveTopicRecord for unknown topic {record.TopicId}")
        del self.topics_by_name[topic.name]
        self._unindex([((record.TopicId, pid), partition) for pid, partition in topic.partitions.items()])
        return topic.name

    def _unindex(self, removed: list[tuple[TopicIdPartition, PartitionRegistration]]) -> None:
        """Take the partitions of a deleted topic out of every index, after the topic itself."""
        self._partition_count -= len(removed)
        self._replicas.remove_all([(tp, p.replicas, p.directories) for tp, p in removed])
        for tp, p in removed:
            if p.adding_replicas or p.removing_replicas:
                del self._reassigning[tp]
            if p.leader == NO_LEADER:
                del self._leaderless[tp]

    def _index_new(self, tp: TopicIdPartition, new: PartitionRegistration) -> None:
        """Index a partition replay meets for the first time (every partition of a snapshot)."""
        self._partition_count += 1
        self._replicas.add(tp, new.replicas, new.directories)
        if new.adding_replicas or new.removing_replicas:
            self._reassigning[tp] = None
        if new.leader == NO_LEADER:
            self._leaderless[tp] = None

    def _reindex_change(
        self, tp: TopicIdPartition, old: PartitionRegistration, new: PartitionRegistration
    ) -> None:
        """Reindex after a PartitionChangeRecord, the case replay meets most: what a change leaves
        alone (replicas and directories by identity, most often) is not looked at."""
        # One unpack each instead of a property read per use: 100,000 of these when a dir fails.
        old_replicas, old_dirs, _, old_removing, old_adding, old_leader, _, _, _, _, _ = old
        replicas, directories, _, new_removing, new_adding, new_leader, _, _, _, _, _ = new
        if (old_replicas is not replicas and old_replicas != replicas) or (
            old_dirs is not directories and old_dirs != directories
        ):
            # Added first, so that the old entries of a replica that stays are the stale ones.
            self._replicas.add(tp, replicas, directories)
            self._replicas.remove(tp, old_replicas, old_dirs)
        if old_adding or old_removing or new_adding or new_removing:
            was = bool(old_adding or old_removing)
            now = bool(new_adding or new_removing)
            if was != now:
                if now:
                    self._reassigning[tp] = None
                else:
                    del self._reassigning[tp]
        if old_leader != new_leader:
            if old_leader == NO_LEADER:
                del self._leaderless[tp]
            elif new_leader == NO_LEADER:
                self._leaderless[tp] = None

    # ---- queries -----------------------------------------------------------------------------

    def partition(
        self, tp: TopicIdPartition, view: OperationView | None = None
    ) -> PartitionRegistration | None:
        if view is not None:
            p = view.partition(tp)
            if p is not None:
                return p
        topic = self.topics.get(tp[0])
        return None if topic is None else topic.partitions.get(tp[1])

    def partitions_on(self, broker_id: int, directory: Uuid) -> list[TopicIdPartition]:
        return self._replicas.partitions_on(broker_id, directory)

    def replica_directories(self, broker_id: int) -> dict[Uuid, int]:
        """How many of the broker's replicas are assigned to each directory."""
        return self._replicas.counts(broker_id)

    def _placement(self, tp: TopicIdPartition) -> tuple[tuple[int, ...], tuple[Uuid, ...]] | None:
        """The partition's replicas and their directories (what the replica index checks against)."""
        topic = self.topics.get(tp[0])
        partition = topic.partitions.get(tp[1]) if topic is not None else None
        return None if partition is None else (partition.replicas, partition.directories)

    def partitions_with_isr_member(self, broker_id: int) -> list[TopicIdPartition]:
        """The partitions whose ISR holds the broker, dir by dir in the order their replicas were placed."""
        topics = self.topics
        return [
            tp
            for tp in self._replicas.of_broker(broker_id)
            if broker_id in topics[tp[0]].partitions[tp[1]].isr
        ]

    def leaderless_partitions(self) -> list[TopicIdPartition]:
        return list(self._leaderless)

    def offline_partition_count(self) -> int:
        return len(self._leaderless)

    def partition_count(self) -> int:
        return self._partition_count

    def reassigning_partitions(self) -> list[TopicIdPartition]:
        """Partitions with a reassignment under way, in the order they started."""
        return list(self._reassigning)

    def reassigning_partition_count(self) -> int:
        return len(self._reassigning)

    def preferred_replica_imbalance_count(self) -> int:
        """Partitions not led by their first replica, leaderless ones included (Kafka's
        PreferredReplicaImbalanceCount). A scan: it is asked once per metrics scrape."""
        return sum(
            1 for t in self.topics.values() for p in t.partitions.values() if p.leader != p.replicas[0]
        )

    def has_leaderships(self, broker_id: int, view: OperationView | None = None) -> bool:
        """Whether the broker leads a committed partition the operation in `view` has not moved away."""
        topics = self.topics
        changed = view is not None and view.has_changes()
        for tp in self._replicas.of_broker(broker_id):
            if topics[tp[0]].partitions[tp[1]].leader != broker_id:
                continue
            if not changed:
                return True
            assert view is not None
            p = view.partition(tp)
            if p is None or p.leader == broker_id:
                return True
        return False

    def unplaced_directories(self, registration: BrokerRegistration) -> list[Uuid]:
        """Directories holding replicas of this broker whose place the controller does not know
        yet (KIP-858: a multi-dir broker stays fenced while there are any)."""
        if not registration.multi_dir:
            return []
        return [
            d for d in self._replicas.directories(registration.id) if not registration.directory_placed(d)
        ]

    # ---- generators --------------------------------------------------------------------------

    def registration(self, broker_id: int, view: OperationView | None = None) -> BrokerRegistration | None:
        if view is not None:
            r = view.registrations.get(broker_id)
            if r is not None:
                return r
        return self.cluster.registrations.get(broker_id)

    def acceptor(
        self, view: OperationView, broker_to_remove: int = NO_LEADER, broker_to_add: int = NO_LEADER
    ) -> LeaderAcceptor:
        """Kafka's LeaderAcceptor plus KIP-858: the broker must be active (or the one being
        unfenced) and its replica's directory online."""
        registrations = self.cluster.registrations
        overrides = view.registrations
        # Answers depend only on (broker, dir) while this acceptor lives; callers take a new one
        # after they change a registration in the view.
        # Keyed by the directory object's identity (Uuid hashing is slow); the same few Uuid
        # objects are shared by every partition's directories, and the entry keeps it alive.
        memo: dict[tuple[int, int], tuple[Uuid, bool]] = {}

        def acceptable(broker_id: int, directory: Uuid) -> bool:
            key = (broker_id, id(directory))
            entry = memo.get(key)
            if entry is None or entry[0] is not directory:
                entry = memo[key] = (directory, _acceptable(broker_id, directory))
            return entry[1]

        def _acceptable(broker_id: int, directory: Uuid) -> bool:
            if broker_id == broker_to_remove:
                return False
            r = overrides.get(broker_id) or registrations.get(broker_id)
            if r is None:
                return False
            if broker_id != broker_to_add and (r.fenced or r.in_controlled_shutdown):
                return False
            return r.directory_online(directory)

        return acceptable

    def default_dir_provider(self, view: OperationView) -> Any:
        if view.default_dir is None:
            mv = self.features.metadata_version
            view.default_dir = lambda broker_id: default_dir(self.registration(broker_id, view), mv)
        return view.default_dir

    def unclean_allowed(self, topic_id: Uuid, view: OperationView) -> bool:
        allowed = view.unclean.get(topic_id)
        if allowed is None:
            topic = self.topics.get(topic_id)
            allowed = topic is not None and self.configs.unclean_leader_election_enabled(topic.name)
            view.unclean[topic_id] = allowed
        return allowed

    def builder(
        self,
        tp: TopicIdPartition,
        partition: PartitionRegistration,
        accept: LeaderAcceptor,
        view: OperationView,
    ) -> PartitionChangeBuilder:
        b = PartitionChangeBuilder(
            partition,
            tp[0],
            tp[1],
            accept,
            self.features.metadata_version,
            default_dir=self.default_dir_provider(view),
            zk_migration_enabled=self.zk_migration_enabled,
        )
        if self.unclean_allowed(tp[0], view):
            b.set_election(Election.UNCLEAN)
        return b

    def apply(
        self,
        tp: TopicIdPartition,
        partition: PartitionRegistration,
        record: ApiMessageAndVersion,
        records: list[ApiMessageAndVersion],
        view: OperationView,
    ) -> None:
        """Add a partition change to the operation's records and to its view."""
        records.append(record)
        view.record_change(tp, partition, record.message)

    def generate_leader_and_isr_updates(
        self,
        broker_to_remove: int,
        broker_to_add: int,
        partitions: Iterable[TopicIdPartition],
        records: list[ApiMessageAndVersion],
        view: OperationView,
    ) -> None:
        """Take `broker_to_remove` out of each partition's ISR and leadership, or let
        `broker_to_add` lead although it is still fenced; elect where the leader has to change."""
        accept = self.acceptor(view, broker_to_remove, broker_to_add)
        mv = self.features.metadata_version
        default_dir = self.default_dir_provider(view)
        # Each partition is changed at most once here, so only changes made before this call
        # need looking up; and partitions come grouped by topic. Both save Uuid hashing, which
        # dominates when a failed dir touches 100,000 partitions.
        earlier = view.has_changes()
        zk_migration = self.zk_migration_enabled
        append = records.append
        changes: list[tuple[TopicIdPartition, PartitionRegistration, Any]] = []
        add_change = changes.append
        # The ISR without broker_to_remove, per ISR: the same few ISRs recur across partitions.
        shrunk: dict[tuple[int, ...], tuple[int, ...] | None] = {}
        last_topic_id: Uuid | None = None
        topic: TopicControlInfo | None = None
        election = Election.ONLINE
        for tp in partitions:
            topic_id, partition_id = tp
            if topic_id is not last_topic_id:
                last_topic_id = topic_id
                topic = self.topics.get(topic_id)
                election = Election.UNCLEAN if self.unclean_allowed(topic_id, view) else Election.ONLINE
            partition = view.partition(tp) if earlier else None
            if partition is None:
                if topic is None:
                    continue
                partition = topic.partitions.get(partition_id)
                if partition is None:
                    continue
            isr = partition.isr
            target_isr = shrunk.get(isr, _UNSEEN)
            if target_isr is _UNSEEN:
                target_isr = shrunk[isr] = (
                    tuple([b for b in isr if b != broker_to_remove])
                    if broker_to_remove != NO_LEADER and broker_to_remove in isr
                    else None
                )
            # PartitionChangeBuilder.build's rules, without a builder object per partition.
            record = build_change(
                partition, topic_id, partition_id, accept, mv, default_dir, zk_migration, election, target_isr
            )
            if record is not None:
                append(record)
                add_change((tp, partition, record.message))
        view.record_changes(changes)

    def _registration_change(
        self, registration: BrokerRegistration, **fields: int | list[Uuid]
    ) -> ApiMessageAndVersion:
        version = 2 if "LogDirs" in fields else 1 if "InControlledShutdown" in fields else 0
        record = BrokerRegistrationChangeRecord(
            BrokerId=registration.id, BrokerEpoch=registration.epoch, **fields
        )
        return ApiMessageAndVersion(record, version)

    def handle_broker_fenced(
        self, broker_id: int, records: list[ApiMessageAndVersion], view: OperationView
    ) -> None:
        """Out of every ISR and leadership, then fenced."""
        registration = self.registration(broker_id, view)
        if registration is None:
            raise ValueError(f"BUG: fencing unregistered broker {broker_id}")
        self.generate_leader_and_isr_updates(
            broker_id, NO_LEADER, self.partitions_with_isr_member(broker_id), records, view
        )
        if registration.fenced:
            return
        if self.features.metadata_version >= MV_3_3_IV2:
            records.append(self._registration_change(registration, Fenced=1))
        else:
            records.append(ApiMessageAndVersion(FenceBrokerRecord(Id=broker_id, Epoch=registration.epoch), 0))
        view.registrations[broker_id] = registration.with_changes(fenced=True)

    def handle_broker_unfenced(
        self, broker_id: int, records: list[ApiMessageAndVersion], view: OperationView
    ) -> None:
        """Unfenced, then leaders for the leaderless partitions it is a replica of."""
        registration = self.registration(broker_id, view)
        if registration is None:
            raise ValueError(f"BUG: unfencing unregistered broker {broker_id}")
        if self.features.metadata_version >= MV_3_3_IV2:
            records.append(self._registration_change(registration, Fenced=-1))
        else:
            records.append(
                ApiMessageAndVersion(UnfenceBrokerRecord(Id=broker_id, Epoch=registration.epoch), 0)
            )
        view.registrations[broker_id] = registration.with_changes(fenced=False)
        leaderless = self._leaderless
        candidates = {tp: None for tp in self._replicas.of_broker(broker_id) if tp in leaderless}
        # Partitions this operation has already left leaderless count too.
        for tp, p in view.changed():
            if p.leader == NO_LEADER and broker_id in p.replicas:
                candidates[tp] = None
        self.generate_leader_and_isr_updates(NO_LEADER, broker_id, candidates, records, view)

    def handle_broker_in_controlled_shutdown(
        self, broker_id: int, records: list[ApiMessageAndVersion], view: OperationView
    ) -> None:
        registration = self.registration(broker_id, view)
        if registration is None:
            raise ValueError(f"BUG: controlled shutdown of unregistered broker {broker_id}")
        if self.features.metadata_version >= MV_3_3_IV3 and not registration.in_controlled_shutdown:
            records.append(self._registration_change(registration, InControlledShutdown=1))
            view.registrations[broker_id] = registration.with_changes(in_controlled_shutdown=True)
        self.generate_leader_and_isr_updates(
            broker_id, NO_LEADER, self.partitions_with_isr_member(broker_id), records, view
        )

    def handle_directories_offline(
        self,
        registration: BrokerRegistration,
        offline: list[Uuid],
        records: list[ApiMessageAndVersion],
        view: OperationView,
    ) -> list[Uuid]:
        """The broker's replicas in `offline` leave ISRs and leadership; its online dirs shrink.

        Returns the dirs that stay online. When none would, no BrokerRegistrationChangeRecord is
        written (an empty LogDirs reads as "unchanged"); the caller fences the broker instead.
        """
        for d in offline:
            self.generate_leader_and_isr_updates(
                registration.id, NO_LEADER, self.partitions_on(registration.id, d), records, view
            )
        gone = set(offline)
        remaining = [d for d in registration.directories if d not in gone]
        if remaining:
            records.append(self._registration_change(registration, LogDirs=remaining))
            view.registrations[registration.id] = registration.with_changes(directories=tuple(remaining))
        return remaining

    def handle_replicas_now_offline(
        self,
        before: BrokerRegistration,
        after: BrokerRegistration,
        records: list[ApiMessageAndVersion],
        view: OperationView,
    ) -> None:
        """A registration change that turns some of the broker's replicas offline (it registers
        again with fewer dirs): those replicas leave ISRs and leadership, as for a failed dir."""
        for d in self._replicas.directories(before.id):
            if before.directory_online(d) and not after.directory_online(d):
                self.generate_leader_and_isr_updates(
                    before.id, NO_LEADER, self.partitions_on(before.id, d), records, view
                )

    def snapshot(self) -> _ReplicationSnapshot:
        # Partitions are immutable and shared; every dict replay changes in place is copied, the
        # indexes keeping their insertion order so records generated after an abort come out as
        # they would have without the transaction.
        return (
            {tid: TopicControlInfo(t.name, t.id, dict(t.partitions)) for tid, t in self.topics.items()},
            dict(self.topics_by_name),
            self._replicas.copy(),
            dict(self._leaderless),
            dict(self._reassigning),
            self._partition_count,
        )

    def restore(self, snapshot: _ReplicationSnapshot) -> None:
        (
            self.topics,
            self.topics_by_name,
            self._replicas,
            self._leaderless,
            self._reassigning,
            self._partition_count,
        ) = snapshot

    def state(self) -> tuple[object, ...]:
        topics = {tid: (t.name, dict(t.partitions)) for tid, t in self.topics.items()}
        index = self._replicas
        replicas = {
            b: {d: set(index.partitions_on(b, d)) for d in index.directories(b)} for b in index.brokers()
        }
        # What the ISR and leader queries answer, broker by broker, for comparing states.
        isr = {b: set(tps) for b in index.brokers() if (tps := self.partitions_with_isr_member(b))}
        leaders: dict[int, set[TopicIdPartition]] = {}
        for b in index.brokers():
            for tp in index.of_broker(b):
                leader = self.topics[tp[0]].partitions[tp[1]].leader
                if leader != NO_LEADER:
                    leaders.setdefault(leader, set()).add(tp)
        return (
            topics,
            dict(self.topics_by_name),
            replicas,
            isr,
            leaders,
            set(self._leaderless),
            set(self._reassigning),
        )
