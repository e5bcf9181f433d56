"""PartitionState: what one partition should be on this broker, the replica manager's only input.

After Kafka's LeaderAndIsrPartitionState. The KRaft metadata image publishes these today
(`local_partition_states`, `changed_partition_states`); a ZooKeeper-mode LeaderAndIsr request would
carry the same values, so nothing here depends on how they were learnt.
"""

from __future__ import annotations

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


def changed_partition_states(
    changes: LocalReplicaChanges, image: MetadataImage, broker_id: int
) -> tuple[list[PartitionState], list[TopicIdPartition]]:
    """The partitions a delta changed for `broker_id` (as `image`, the delta applied, has them) and
    those it took away."""
    states = []
    for tp in {*changes.leaders, *changes.followers, *changes.directory_ids}:
        reg = image.topics.get_partition(tp.topic_id, tp.partition)
        if reg is not None and broker_id in reg.replicas:
            states.append(PartitionState.of(tp, reg, broker_id))
    return states, sorted(changes.deletes)
