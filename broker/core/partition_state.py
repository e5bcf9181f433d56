"""PartitionState: what one partition should be on this broker, the replica manager's only input.

After Kafka's LeaderAndIsrPartitionState. The KRaft metadata image publishes these today
(`local_partition_states`, `changed_partition_states`); a ZooKeeper-mode LeaderAndIsr request would
carry the same values, so nothing here depends on how they were learnt.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kraftpy.image import LocalReplicaChanges, MetadataImage, PartitionRegistration, TopicIdPartition
from protocol.uuid import Uuid


@dataclass(frozen=True, slots=True)
class PartitionState:
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
        return TopicIdPartition(self.topic_id, self.topic_name, self.partition)

    @property
    def key(self) -> tuple[Uuid, int]:
        return (self.topic_id, self.partition)

    @classmethod
    def of(cls, tp: TopicIdPartition, reg: PartitionRegistration, broker_id: int) -> PartitionState:
        return cls(
            topic_id=tp.topic_id,
            topic_name=tp.topic_name,
            partition=tp.partition,
            replicas=tuple(reg.replicas),
            isr=tuple(reg.isr),
            leader=reg.leader,
            leader_epoch=reg.leader_epoch,
            partition_epoch=reg.partition_epoch,
            directory=reg.directory(broker_id),
        )


def local_partition_states(image: MetadataImage, broker_id: int) -> list[PartitionState]:
    """Every partition `image` places on `broker_id`."""
    return [PartitionState.of(tp, reg, broker_id) for tp, reg in image.topics.partitions_on_broker(broker_id)]


def partition_states(
    image: MetadataImage, broker_id: int, tps: Iterable[TopicIdPartition]
) -> tuple[list[PartitionState], list[TopicIdPartition]]:
    """`tps` as `image` has them: the states of those on `broker_id`, and those no longer there."""
    states, gone = [], []
    for tp in tps:
        reg = image.topics.get_partition(tp.topic_id, tp.partition)
        if reg is None or broker_id not in reg.replicas:
            gone.append(tp)
        else:
            states.append(PartitionState.of(tp, reg, broker_id))
    return states, gone


def changed_partition_states(
    changes: LocalReplicaChanges, image: MetadataImage, broker_id: int
) -> tuple[list[PartitionState], list[TopicIdPartition]]:
    """The partitions a delta changed for `broker_id` (as `image`, the delta applied, has them) and
    those it took away."""
    changed = {*changes.leaders, *changes.followers, *changes.directory_ids}
    states, gone = partition_states(image, broker_id, changed)
    return states, sorted({*changes.deletes, *gone})
