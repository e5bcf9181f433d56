"""The metadata a migration moves between ZooKeeper and the metadata log, as one comparable value.

`ZkMetadata` is what ZooKeeper holds of topics, partition states, topic configs and the producer id
block. Everything the migration does with ZooKeeper goes through it:

- the initial copy reads it from ZooKeeper and turns it into records (`migration_records`);
- dual write builds it from the image before and after a commit and writes the difference
  (`zk_writes`);
- the reconciliation after a failover reads it from ZooKeeper and writes the difference from
  the image with the same function.

So a change is mirrored one way, whatever brought it about (Kafka's KRaftMigrationZkWriter has a
delta path and a snapshot path that must agree; here they are one).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from controller.zk.model import LeaderAndIsr, TopicAssignment, TopicPartition
from kraftpy.image import MetadataImage
from kraftpy.metadata import ConfigResourceType, ZkMigrationState
from protocol import metadata_records as mr
from protocol import znodes
from protocol.framing import ApiMessageAndVersion

MIGRATION_TRANSACTION_NAME = "ZK Migration"

# ZkMigrationClient.writeProducerId: a block of Kafka's standard size, owned by no broker.
PRODUCER_ID_BLOCK_SIZE = 1000


@dataclass(frozen=True)
class ZkMetadata:
    topics: Mapping[str, TopicAssignment] = field(default_factory=dict)
    states: Mapping[TopicPartition, LeaderAndIsr] = field(default_factory=dict)
    topic_configs: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    next_producer_id: int | None = None
    """The first producer id not yet handed out: the block's end + 1 in ZooKeeper."""

    @classmethod
    def of_image(cls, image: MetadataImage, controller_epoch: int) -> ZkMetadata:
        """What ZooKeeper should hold for `image`, partition states stamped with the ZooKeeper
        controller epoch the KRaft controller claimed."""
        topics: dict[str, TopicAssignment] = {}
        states: dict[TopicPartition, LeaderAndIsr] = {}
        configs: dict[str, Mapping[str, str]] = {}
        for topic in image.topics.topics_by_name.values():
            topics[topic.name] = TopicAssignment(
                topic.id, {p: tuple(reg.replicas) for p, reg in topic.partitions.items()}
            )
            for p, reg in topic.partitions.items():
                states[(topic.name, p)] = LeaderAndIsr(
                    reg.leader,
                    reg.leader_epoch,
                    tuple(reg.isr),
                    controller_epoch,
                    reg.partition_epoch,
                    int(reg.leader_recovery_state),
                )
            configs[topic.name] = dict(image.configs.configs(int(ConfigResourceType.TOPIC), topic.name))
        next_id = None if image.producer_ids.is_empty() else image.producer_ids.next_producer_id
        return cls(topics, states, configs, next_id)


# ---- ZooKeeper → KRaft -----------------------------------------------------------------------------


def migration_records(zk: ZkMetadata) -> Iterator[ApiMessageAndVersion]:
    """The records of the initial copy, without the transaction markers: a TopicRecord and
    PartitionRecords per topic, then its configs, then the producer id block.

    PartitionEpoch is the state znode's version, and the PartitionRecords carry no Directories
    (version 0), so replay gives every replica the MIGRATING directory (KIP-858)."""
    for name in sorted(zk.topics):
        assignment = zk.topics[name]
        yield ApiMessageAndVersion(mr.TopicRecord(Name=name, TopicId=assignment.topic_id), 0)
        for p in sorted(assignment.partitions):
            replicas = list(assignment.partitions[p])
            st = zk.states.get((name, p))
            if st is None:
                # Kafka's migration skips a partition without state; its replicas would have no
                # leader and no ISR, which a PartitionRecord cannot express as a valid partition.
                continue
            yield ApiMessageAndVersion(
                mr.PartitionRecord(
                    PartitionId=p,
                    TopicId=assignment.topic_id,
                    Replicas=replicas,
                    Isr=list(st.isr),
                    RemovingReplicas=[],
                    AddingReplicas=[],
                    Leader=st.leader,
                    LeaderRecoveryState=st.leader_recovery_state,
                    LeaderEpoch=st.leader_epoch,
                    PartitionEpoch=st.zk_version,
                ),
                0,
            )
        for key, value in sorted(zk.topic_configs.get(name, {}).items()):
            yield ApiMessageAndVersion(
                mr.ConfigRecord(
                    ResourceType=int(ConfigResourceType.TOPIC), ResourceName=name, Name=key, Value=value
                ),
                0,
            )
    if zk.next_producer_id is not None:
        yield ApiMessageAndVersion(
            mr.ProducerIdsRecord(BrokerId=-1, BrokerEpoch=-1, NextProducerId=zk.next_producer_id), 0
        )


def begin_migration() -> ApiMessageAndVersion:
    return ApiMessageAndVersion(mr.BeginTransactionRecord(Name=MIGRATION_TRANSACTION_NAME), 0)


def end_migration() -> list[ApiMessageAndVersion]:
    return [
        ApiMessageAndVersion(mr.ZkMigrationStateRecord(ZkMigrationState=int(ZkMigrationState.MIGRATION)), 0),
        ApiMessageAndVersion(mr.EndTransactionRecord(), 0),
    ]


# ---- KRaft → ZooKeeper -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Upsert:
    """Make `path` hold `data`: set it, or create it (and its missing parents, empty)."""

    path: str
    data: bytes


@dataclass(frozen=True, slots=True)
class DeleteTree:
    """Remove `path` and everything under it; nothing when it is gone already."""

    path: str


ZkChange = Upsert | DeleteTree


def _state_bytes(st: LeaderAndIsr) -> bytes:
    return znodes.PartitionStateZnode(
        leader=st.leader,
        leader_epoch=st.leader_epoch,
        controller_epoch=st.controller_epoch,
        isr=list(st.isr),
        leader_recovery_state=st.leader_recovery_state,
    ).to_bytes()


def _same_state(a: LeaderAndIsr, b: LeaderAndIsr) -> bool:
    # The controller epoch and the znode version say who wrote it and when, not what it says.
    return (a.leader, a.leader_epoch, a.isr, a.leader_recovery_state) == (
        b.leader,
        b.leader_epoch,
        b.isr,
        b.leader_recovery_state,
    )


def zk_writes(current: ZkMetadata, target: ZkMetadata) -> list[ZkChange]:
    """What to write so that ZooKeeper, holding `current`, holds `target`; deletions first, so a
    topic deleted and created again under the same name is replaced, not merged."""
    out: list[ZkChange] = []
    for name in sorted(set(current.topics) - set(target.topics)):
        out.append(DeleteTree(znodes.topic_path(name)))
        out.append(DeleteTree(znodes.topic_config_path(name)))
        out.append(DeleteTree(znodes.delete_topic_path(name)))
    for name in sorted(target.topics):
        want = target.topics[name]
        have = current.topics.get(name)
        if have is not None and have.topic_id != want.topic_id:
            # Same name, another topic: the old one's partition znodes must not survive.
            out.append(DeleteTree(znodes.topic_path(name)))
            have = None
        if have is None or have.partitions != want.partitions:
            topic = znodes.TopicZnode({p: list(r) for p, r in want.partitions.items()}, want.topic_id)
            out.append(Upsert(znodes.topic_path(name), topic.to_bytes()))
        for p in sorted(want.partitions):
            st = target.states.get((name, p))
            if st is None:
                continue
            old = current.states.get((name, p)) if have is not None else None
            if old is None or not _same_state(old, st):
                out.append(Upsert(znodes.partition_state_path(name, p), _state_bytes(st)))
        config = dict(target.topic_configs.get(name, {}))
        if have is None or dict(current.topic_configs.get(name, {})) != config:
            out.append(Upsert(znodes.topic_config_path(name), znodes.EntityConfigZnode(config).to_bytes()))
    wanted = target.next_producer_id
    if wanted is not None and (current.next_producer_id is None or current.next_producer_id < wanted):
        # Kafka writes the block starting at KRaft's next id, so a ZooKeeper controller taking
        # over after a rollback starts beyond every id KRaft handed out.
        block = znodes.ProducerIdBlockZnode(-1, wanted, wanted + PRODUCER_ID_BLOCK_SIZE - 1)
        out.append(Upsert(znodes.LATEST_PRODUCER_ID_BLOCK, block.to_bytes()))
    return out
