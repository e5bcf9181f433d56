"""Topics and their partitions, by id and by name (Kafka's TopicsImage / TopicsDelta)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar, NamedTuple

from kraftpy.metadata import MetadataReplayError, PartitionRegistration
from protocol.uuid import Uuid


class TopicIdPartition(NamedTuple):
    """A partition named both ways: the id travels in records, the name names the log directory."""

    topic_id: Uuid
    topic_name: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic_name}-{self.partition}"


@dataclass(frozen=True)
class TopicImage:
    name: str
    id: Uuid
    partitions: Mapping[int, PartitionRegistration] = field(default_factory=lambda: MappingProxyType({}))

    def partition_ids(self) -> list[int]:
        return sorted(self.partitions)


@dataclass(frozen=True)
class TopicsImage:
    topics_by_id: Mapping[Uuid, TopicImage]
    topics_by_name: Mapping[str, TopicImage]

    EMPTY: ClassVar[TopicsImage]

    def is_empty(self) -> bool:
        return not self.topics_by_id

    def get_topic(self, topic: Uuid | str) -> TopicImage | None:
        if isinstance(topic, Uuid):
            return self.topics_by_id.get(topic)
        return self.topics_by_name.get(topic)

    def get_partition(self, topic: Uuid | str, partition: int) -> PartitionRegistration | None:
        t = self.get_topic(topic)
        return None if t is None else t.partitions.get(partition)

    def partitions(self) -> Iterator[tuple[TopicIdPartition, PartitionRegistration]]:
        """Every partition, topics by name then partitions by id."""
        for name in sorted(self.topics_by_name):
            t = self.topics_by_name[name]
            for p in sorted(t.partitions):
                yield TopicIdPartition(t.id, t.name, p), t.partitions[p]

    def partitions_on_broker(
        self, broker_id: int
    ) -> Iterator[tuple[TopicIdPartition, PartitionRegistration]]:
        for tp, reg in self.partitions():
            if broker_id in reg.replicas:
                yield tp, reg

    def replicas_by_directory(self, broker_id: int) -> dict[Uuid, list[TopicIdPartition]]:
        """`broker_id`'s replicas grouped by the directory they are assigned to."""
        out: dict[Uuid, list[TopicIdPartition]] = {}
        for tp, reg in self.partitions_on_broker(broker_id):
            out.setdefault(reg.directory(broker_id), []).append(tp)
        return out

    def leaderless_partitions(self) -> list[TopicIdPartition]:
        return [tp for tp, reg in self.partitions() if not reg.has_leader()]


TopicsImage.EMPTY = TopicsImage(MappingProxyType({}), MappingProxyType({}))


@dataclass(frozen=True)
class PartitionInfo:
    topic_name: str
    partition: PartitionRegistration


@dataclass
class LocalReplicaChanges:
    """What one broker must do after a delta (Kafka's LocalReplicaChanges).

    `directory_ids` holds, for partitions that are new to this broker or whose directory for
    it changed, the directory the metadata now assigns.
    """

    deletes: set[TopicIdPartition] = field(default_factory=set)
    elected_leaders: dict[TopicIdPartition, PartitionRegistration] = field(default_factory=dict)
    leaders: dict[TopicIdPartition, PartitionRegistration] = field(default_factory=dict)
    followers: dict[TopicIdPartition, PartitionRegistration] = field(default_factory=dict)
    directory_ids: dict[TopicIdPartition, Uuid] = field(default_factory=dict)

    def is_empty(self) -> bool:
        return not (self.deletes or self.leaders or self.followers or self.directory_ids)


class TopicDelta:
    def __init__(self, image: TopicImage) -> None:
        self.image = image
        self.partition_changes: dict[int, PartitionRegistration] = {}

    @property
    def name(self) -> str:
        return self.image.name

    @property
    def id(self) -> Uuid:
        return self.image.id

    def partition(self, partition_id: int) -> PartitionRegistration | None:
        reg = self.partition_changes.get(partition_id)
        return reg if reg is not None else self.image.partitions.get(partition_id)

    def replay_partition(self, rec: Any) -> None:
        self.partition_changes[rec.PartitionId] = PartitionRegistration.from_record(rec)

    def replay_partition_change(self, rec: Any) -> None:
        current = self.partition(rec.PartitionId)
        if current is None:
            raise MetadataReplayError(
                f"PartitionChangeRecord for unknown partition {self.name}-{rec.PartitionId} (topic id {self.id})"
            )
        self.partition_changes[rec.PartitionId] = current.merge(rec)

    def apply(self) -> TopicImage:
        if not self.partition_changes:
            return self.image
        parts = dict(self.image.partitions)
        parts.update(self.partition_changes)
        if len(parts) != len(self.image.partitions):
            # New partitions: back in partition order. Changes to existing ones keep their places,
            # and re-sorting a topic's partitions at every change cost more than the changes.
            parts = dict(sorted(parts.items()))
        return TopicImage(self.name, self.id, MappingProxyType(parts))

    def local_changes(self, broker_id: int, changes: LocalReplicaChanges) -> None:
        for pid, entry in self.partition_changes.items():
            tp = TopicIdPartition(self.id, self.name, pid)
            prev = self.image.partitions.get(pid)
            if broker_id not in entry.replicas:
                if prev is not None and broker_id in prev.replicas:
                    changes.deletes.add(tp)
                continue
            if prev is None or prev.partition_epoch != entry.partition_epoch:
                if entry.leader == broker_id:
                    changes.leaders[tp] = entry
                    if prev is None or prev.leader_epoch != entry.leader_epoch:
                        changes.elected_leaders[tp] = entry
                else:
                    changes.followers[tp] = entry
            new_dir = entry.directory(broker_id)
            if prev is None or broker_id not in prev.replicas or prev.directory(broker_id) != new_dir:
                changes.directory_ids[tp] = new_dir


class TopicsDelta:
    def __init__(self, image: TopicsImage) -> None:
        self.image = image
        self.changed_topics: dict[Uuid, TopicDelta] = {}
        self.created_topic_ids: set[Uuid] = set()
        self.deleted_topic_ids: set[Uuid] = set()

    def _topic_delta(self, topic_id: Uuid, what: str) -> TopicDelta:
        delta = self.changed_topics.get(topic_id)
        if delta is not None:
            return delta
        topic = self.image.topics_by_id.get(topic_id)
        if topic is None or topic_id in self.deleted_topic_ids:
            raise MetadataReplayError(f"{what} for unknown topic id {topic_id}")
        delta = TopicDelta(topic)
        self.changed_topics[topic_id] = delta
        return delta

    def replay_topic(self, rec: Any) -> None:
        self.changed_topics[rec.TopicId] = TopicDelta(TopicImage(rec.Name, rec.TopicId))
        self.created_topic_ids.add(rec.TopicId)

    def replay_partition(self, rec: Any) -> None:
        self._topic_delta(rec.TopicId, "PartitionRecord").replay_partition(rec)

    def replay_partition_change(self, rec: Any) -> None:
        self._topic_delta(rec.TopicId, "PartitionChangeRecord").replay_partition_change(rec)

    def replay_remove_topic(self, rec: Any) -> str:
        """Forget the topic; returns its name so its configs can go too."""
        topic_id = rec.TopicId
        delta = self.changed_topics.pop(topic_id, None)
        if topic_id in self.created_topic_ids:
            self.created_topic_ids.discard(topic_id)
            assert delta is not None
            return delta.name
        topic = self.image.topics_by_id.get(topic_id)
        if topic is None or topic_id in self.deleted_topic_ids:
            raise MetadataReplayError(f"RemoveTopicRecord for unknown topic id {topic_id}")
        self.deleted_topic_ids.add(topic_id)
        return topic.name

    def topic(self, topic_id: Uuid) -> TopicImage | None:
        """The topic as this delta would leave it."""
        delta = self.changed_topics.get(topic_id)
        if delta is not None:
            return delta.apply()
        if topic_id in self.deleted_topic_ids:
            return None
        return self.image.topics_by_id.get(topic_id)

    def apply(self) -> TopicsImage:
        by_id = dict(self.image.topics_by_id)
        by_name = dict(self.image.topics_by_name)
        for topic_id in self.deleted_topic_ids:
            old = by_id.pop(topic_id, None)
            if old is not None and by_name.get(old.name) is old:
                del by_name[old.name]
        for topic_id, delta in self.changed_topics.items():
            new = delta.apply()
            old = by_id.get(topic_id)
            if old is not None and old.name != new.name and by_name.get(old.name) is old:
                del by_name[old.name]
            by_id[topic_id] = new
            by_name[new.name] = new
        return TopicsImage(MappingProxyType(by_id), MappingProxyType(dict(sorted(by_name.items()))))

    def local_changes(self, broker_id: int) -> LocalReplicaChanges:
        """Partitions this delta adds, changes or removes for `broker_id`."""
        changes = LocalReplicaChanges()
        for delta in self.changed_topics.values():
            delta.local_changes(broker_id, changes)
        for topic_id in self.deleted_topic_ids:
            topic = self.image.topics_by_id[topic_id]
            for pid, reg in topic.partitions.items():
                if broker_id in reg.replicas:
                    changes.deletes.add(TopicIdPartition(topic_id, topic.name, pid))
        return changes
