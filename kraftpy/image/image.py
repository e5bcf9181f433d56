"""MetadataImage: the cluster's metadata at one offset, immutable (Kafka's MetadataImage)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from kraftpy.image.cluster import ClusterImage
from kraftpy.image.configs import ConfigurationsImage
from kraftpy.image.features import FeaturesImage, ZkMigrationState
from kraftpy.image.opaque import RecordStoreImage
from kraftpy.image.producer_ids import ProducerIdsImage
from kraftpy.image.topics import TopicIdPartition, TopicsImage
from kraftpy.image.writer import (
    ImageWriter,
    write_cluster,
    write_configs,
    write_features,
    write_producer_ids,
    write_record_store,
    write_topics,
)
from kraftpy.metadata.partition import PartitionRegistration
from kraftpy.metadata.replicas import offline_replicas
from protocol.uuid import Uuid

if TYPE_CHECKING:
    from protocol.framing import ApiMessageAndVersion


@dataclass(frozen=True, slots=True)
class MetadataProvenance:
    """Where an image stands in the log: the last offset and epoch it contains, and that record's time."""

    offset: int = -1
    epoch: int = -1
    last_contained_log_time_ms: int = -1

    EMPTY: ClassVar[MetadataProvenance]

    def snapshot_end_offset(self) -> int:
        """A snapshot of this image is named by the next offset (ids are exclusive)."""
        return self.offset + 1


MetadataProvenance.EMPTY = MetadataProvenance()


@dataclass(frozen=True)
class MetadataImage:
    provenance: MetadataProvenance = field(default=MetadataProvenance.EMPTY)
    features: FeaturesImage = field(default=FeaturesImage.EMPTY)
    cluster: ClusterImage = field(default=ClusterImage.EMPTY)
    topics: TopicsImage = field(default=TopicsImage.EMPTY)
    configs: ConfigurationsImage = field(default=ConfigurationsImage.EMPTY)
    client_quotas: RecordStoreImage = field(default=RecordStoreImage.EMPTY)
    producer_ids: ProducerIdsImage = field(default=ProducerIdsImage.EMPTY)
    acls: RecordStoreImage = field(default=RecordStoreImage.EMPTY)
    scram: RecordStoreImage = field(default=RecordStoreImage.EMPTY)
    delegation_tokens: RecordStoreImage = field(default=RecordStoreImage.EMPTY)

    EMPTY: ClassVar[MetadataImage]

    def is_empty(self) -> bool:
        return all(
            area.is_empty()
            for area in (
                self.features,
                self.cluster,
                self.topics,
                self.configs,
                self.client_quotas,
                self.producer_ids,
                self.acls,
                self.scram,
                self.delegation_tokens,
            )
        )

    @property
    def metadata_version(self) -> int | None:
        return self.features.metadata_version

    @property
    def migration_state(self) -> ZkMigrationState:
        return self.features.zk_migration_state

    @property
    def offset(self) -> int:
        return self.provenance.offset

    def partition(self, topic: Uuid | str, partition: int) -> PartitionRegistration | None:
        return self.topics.get_partition(topic, partition)

    def offline_replicas(self, topic: Uuid | str, partition: int) -> list[int]:
        reg = self.topics.get_partition(topic, partition)
        if reg is None:
            raise KeyError(f"no partition {topic}-{partition}")
        return offline_replicas(self.cluster, reg)

    def partitions_with_offline_replicas(self) -> dict[TopicIdPartition, list[int]]:
        out = {}
        for tp, reg in self.topics.partitions():
            off = offline_replicas(self.cluster, reg)
            if off:
                out[tp] = off
        return out

    def write(self, metadata_version: int | None = None) -> list[ApiMessageAndVersion]:
        """The image as records, metadata.version first: what a snapshot holds."""
        mv = metadata_version if metadata_version is not None else self.features.metadata_version
        if mv is None:
            if self.is_empty():
                return []
            raise ValueError("the image has no metadata.version, so no record versions can be chosen")
        w = ImageWriter(mv)
        write_features(w, self.features)
        write_cluster(w, self.cluster)
        write_topics(w, self.topics)
        write_configs(w, self.configs)
        write_record_store(w, self.client_quotas)
        write_producer_ids(w, self.producer_ids)
        for store in (self.acls, self.scram, self.delegation_tokens):
            write_record_store(w, store)
        return w.records


MetadataImage.EMPTY = MetadataImage()
