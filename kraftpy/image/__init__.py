"""The metadata image: what the records in __cluster_metadata say the cluster is.

`MetadataImage` is immutable (start from `MetadataImage.EMPTY`); `MetadataDelta(image)` takes
records through `replay` and gives the next image from `apply`. Controller, brokers, the tools and
the Spark job all build their view of the cluster this way and only this way. No I/O here.
"""

from kraftpy.image.cluster import BrokerRegistration, ClusterImage, ControllerRegistration, Endpoint
from kraftpy.image.configs import ConfigResource, ConfigResourceType, ConfigurationsImage
from kraftpy.image.delta import MetadataDelta, OpenTransaction
from kraftpy.image.errors import (
    InvalidReplicaDirectoriesError,
    MetadataReplayError,
    UnknownMetadataRecordError,
)
from kraftpy.image.features import METADATA_VERSION, FeaturesImage, ZkMigrationState
from kraftpy.image.image import MetadataImage, MetadataProvenance
from kraftpy.image.partition import NO_LEADER, NO_LEADER_CHANGE, LeaderRecoveryState, PartitionRegistration
from kraftpy.image.producer_ids import ProducerIdsImage
from kraftpy.image.replicas import is_acceptable_leader, is_replica_online, offline_replicas
from kraftpy.image.topics import LocalReplicaChanges, TopicIdPartition, TopicImage, TopicsImage

__all__ = [
    "METADATA_VERSION",
    "NO_LEADER",
    "NO_LEADER_CHANGE",
    "BrokerRegistration",
    "ClusterImage",
    "ConfigResource",
    "ConfigResourceType",
    "ConfigurationsImage",
    "ControllerRegistration",
    "Endpoint",
    "FeaturesImage",
    "InvalidReplicaDirectoriesError",
    "LeaderRecoveryState",
    "LocalReplicaChanges",
    "MetadataDelta",
    "MetadataImage",
    "MetadataProvenance",
    "MetadataReplayError",
    "OpenTransaction",
    "PartitionRegistration",
    "ProducerIdsImage",
    "TopicIdPartition",
    "TopicImage",
    "TopicsImage",
    "UnknownMetadataRecordError",
    "ZkMigrationState",
    "is_acceptable_leader",
    "is_replica_online",
    "offline_replicas",
]
