"""PartitionState: what one partition should be on this broker, the replica manager's only input.

After Kafka's LeaderAndIsrPartitionState. The KRaft metadata image publishes these today
(`local_partition_states`, `changed_partition_states`); a ZooKeeper-mode LeaderAndIsr request would
carry the same values, so nothing here depends on how they were learnt.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from kraftpy.image import LocalReplicaChanges, MetadataImage, PartitionRegistration, TopicIdPartition
from protocol.uuid import Uuid

# Positional through tuple.__new__: NamedTuple's own __new__ is a Python call in between.
_new = tuple.__new__


class PartitionState(NamedTuple):
    """Immutable; a tuple because the first publish makes one per hosted partition (100,000 at a
    broker's start) and a tuple is the cheapest immutable value to build."""

    topic_id: Uuid
    topic_name: str
    partition: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int
    partition_epoch: int
    directory: Uuid
    """The log dir the metadata assigns to this broker's replica."""

    @property
    def tp(self) -> TopicIdPartition:
        return _new(TopicIdPartition, (self.topic_id, self.topic_name, self.partition))

    @property
    def key(self) -> tuple[Uuid, int]:
        return (self.topic_id, self.partition)

    @classmethod
    def of(cls, tp: TopicIdPartition, reg: PartitionRegistration, broker_id: int) -> PartitionState:
        return _state(tp[0], tp[1], tp[2], reg, broker_id)


def _state(
    topic_id: Uuid, topic_name: str, partition: int, reg: PartitionRegistration, broker_id: int
) -> PartitionState:
    replicas = tuple(reg.replicas)
    try:
        directory = reg.directories[replicas.index(broker_id)]
    except ValueError:
        directory = reg.directory(broker_id)  # raises, naming the replicas
    return _new(
        PartitionState,
        (
            topic_id,
            topic_name,
            partition,
            replicas,
            tuple(reg.isr),
            reg.leader,
            reg.leader_epoch,
            reg.partition_epoch,
            directory,
        ),
    )


def local_partition_states(image: MetadataImage, broker_id: int) -> list[PartitionState]:
    """Every partition `image` places on `broker_id` (topics by name, then partitions by id)."""
    out: list[PartitionState] = []
    by_name = image.topics.topics_by_name
    for name in sorted(by_name):
        topic = by_name[name]
        topic_id, parts = topic.id, topic.partitions
        for p in sorted(parts):
            reg = parts[p]
            if broker_id in reg.replicas:
                out.append(_state(topic_id, name, p, reg, broker_id))
    return out


def partition_states(
    image: MetadataImage, broker_id: int, tps: Iterable[TopicIdPartition]
) -> tuple[list[PartitionState], list[TopicIdPartition]]:
    """`tps` as `image` has them: the states of those on `broker_id`, and those no longer there."""
    states, gone = [], []
    by_id = image.topics.topics_by_id
    for tp in tps:
        topic_id, name, p = tp
        topic = by_id.get(topic_id)
        reg = topic.partitions.get(p) if topic is not None else None
        if reg is None or broker_id not in reg.replicas:
            gone.append(tp)
        else:
            states.append(_state(topic_id, name, p, reg, broker_id))
    return states, gone


def changed_partition_states(
    changes: LocalReplicaChanges, image: MetadataImage, broker_id: int
) -> tuple[list[PartitionState], list[TopicIdPartition]]:
    """The partitions a delta changed for `broker_id` (as `image`, the delta applied, has them) and
    those it took away."""
    changed = {*changes.leaders, *changes.followers, *changes.directory_ids}
    states, gone = partition_states(image, broker_id, changed)
    return states, sorted({*changes.deletes, *gone})
