"""An image as records: what a snapshot holds (Kafka's MetadataImage.write).

Order follows Kafka: features (metadata.version first, since it decides how later records are
read), cluster, topics, configs, client quotas, producer ids, ACLs, SCRAM, delegation tokens.
Each record is written at the version the image's metadata.version calls for; what that version
cannot express (directories below 3.7-IV2, controllers below 3.7-IV0) is left out, as Kafka's
ImageWriterOptions does by default. MetadataImage.write calls one function here per area, in that
order, so this module needs the areas but never the image that holds them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kraftpy.image.features import METADATA_VERSION, MV_CONTROLLER_REGISTRATION, MV_MIGRATION
from protocol import metadata_records as mr
from protocol.framing import ApiMessageAndVersion, default_version

if TYPE_CHECKING:
    from kraftpy.image.cluster import ClusterImage
    from kraftpy.image.configs import ConfigurationsImage
    from kraftpy.image.features import FeaturesImage
    from kraftpy.image.opaque import RecordStoreImage
    from kraftpy.image.producer_ids import ProducerIdsImage
    from kraftpy.image.topics import TopicsImage
    from kraftpy.metadata.registration import BrokerRegistration, ControllerRegistration


class ImageWriter:
    """Collects one image's records, each at the version its metadata.version calls for."""

    def __init__(self, metadata_version: int) -> None:
        self.mv = metadata_version
        self.records: list[ApiMessageAndVersion] = []

    def version(self, cls: type) -> int:
        return default_version(cls, self.mv)

    def add(self, cls: type, **fields: Any) -> None:
        self.records.append(ApiMessageAndVersion(cls(**fields), self.version(cls)))

    def add_record(self, rec: Any) -> None:
        self.records.append(ApiMessageAndVersion(rec, self.version(type(rec))))


def _broker_fields(b: BrokerRegistration, version: int) -> dict[str, Any]:
    cls = mr.RegisterBrokerRecord
    fields: dict[str, Any] = {
        "BrokerId": b.id,
        "IncarnationId": b.incarnation_id,
        "BrokerEpoch": b.epoch,
        "EndPoints": [
            cls.BrokerEndpoint(Name=e.name, Host=e.host, Port=e.port, SecurityProtocol=e.security_protocol)
            for e in b.listeners
        ],
        "Features": [
            cls.BrokerFeature(Name=n, MinSupportedVersion=r.min_version, MaxSupportedVersion=r.max_version)
            for n, r in b.supported_features
        ],
        "Rack": b.rack,
        "Fenced": b.fenced,
    }
    if version >= 1:
        fields["InControlledShutdown"] = b.in_controlled_shutdown
    if version >= 2:
        fields["IsMigratingZkBroker"] = b.is_migrating_zk_broker
    if version >= 3:
        fields["LogDirs"] = list(b.directories)
    return fields


def _controller_fields(c: ControllerRegistration) -> dict[str, Any]:
    cls = mr.RegisterControllerRecord
    return {
        "ControllerId": c.id,
        "IncarnationId": c.incarnation_id,
        "ZkMigrationReady": c.zk_migration_ready,
        "EndPoints": [
            cls.ControllerEndpoint(
                Name=e.name, Host=e.host, Port=e.port, SecurityProtocol=e.security_protocol
            )
            for e in c.listeners
        ],
        "Features": [
            cls.ControllerFeature(
                Name=n, MinSupportedVersion=r.min_version, MaxSupportedVersion=r.max_version
            )
            for n, r in c.supported_features
        ],
    }


def write_features(w: ImageWriter, features: FeaturesImage) -> None:
    w.add(mr.FeatureLevelRecord, Name=METADATA_VERSION, FeatureLevel=w.mv)
    for name, level in features.finalized_versions.items():
        w.add(mr.FeatureLevelRecord, Name=name, FeatureLevel=level)
    if w.mv >= MV_MIGRATION:
        w.add(mr.ZkMigrationStateRecord, ZkMigrationState=int(features.zk_migration_state))


def write_cluster(w: ImageWriter, cluster: ClusterImage) -> None:
    broker_version = w.version(mr.RegisterBrokerRecord)
    for b in cluster.brokers.values():
        w.add(mr.RegisterBrokerRecord, **_broker_fields(b, broker_version))
    if w.mv >= MV_CONTROLLER_REGISTRATION:
        for c in cluster.controllers.values():
            w.add(mr.RegisterControllerRecord, **_controller_fields(c))


def write_topics(w: ImageWriter, topics: TopicsImage) -> None:
    partition_version = w.version(mr.PartitionRecord)
    for name in sorted(topics.topics_by_name):
        topic = topics.topics_by_name[name]
        w.add(mr.TopicRecord, Name=topic.name, TopicId=topic.id)
        for pid in sorted(topic.partitions):
            fields = topic.partitions[pid].to_record_fields(partition_version)
            w.add(mr.PartitionRecord, PartitionId=pid, TopicId=topic.id, **fields)


def write_configs(w: ImageWriter, configs: ConfigurationsImage) -> None:
    for (rtype, rname), values in configs.resources.items():
        for key, value in values.items():
            w.add(mr.ConfigRecord, ResourceType=rtype, ResourceName=rname, Name=key, Value=value)


def write_producer_ids(w: ImageWriter, producer_ids: ProducerIdsImage) -> None:
    if producer_ids.next_producer_id >= 0:
        w.add(
            mr.ProducerIdsRecord,
            BrokerId=-1,
            BrokerEpoch=-1,
            NextProducerId=producer_ids.next_producer_id,
        )


def write_record_store(w: ImageWriter, store: RecordStoreImage) -> None:
    for rec in store.records.values():
        w.add_record(rec)
