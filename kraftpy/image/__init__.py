"""The metadata image: what the records in __cluster_metadata say the cluster is.

`MetadataImage` is immutable (start from `MetadataImage.EMPTY`); `MetadataDelta(image)` takes
records through `replay` and gives the next image from `apply`. Controller, brokers, the tools and
the Spark job all build their view of the cluster this way and only this way. No I/O here.
The values it holds (registrations, partitions) are kraftpy.metadata's, re-exported here for the
image's readers.
"""

from kraftpy.image.cluster import ClusterImage
from kraftpy.image.configs import ConfigResource, ConfigurationsImage
from kraftpy.image.delta import MetadataDelta, OpenTransaction
from kraftpy.image.errors import (
    InvalidReplicaDirectoriesError,
    MetadataReplayError,
    UnknownMetadataRecordError,
)
from kraftpy.image.features import METADATA_VERSION, FeaturesImage
from kraftpy.image.image import MetadataImage, MetadataProvenance
from kraftpy.image.producer_ids import ProducerIdsImage
from kraftpy.image.topics import LocalReplicaChanges, TopicIdPartition, TopicImage, TopicsImage
from kraftpy.metadata import (
    NO_LEADER,
    NO_LEADER_CHANGE,
    BrokerRegistration,
    ConfigResourceType,
    ControllerRegistration,
    Endpoint,
    LeaderRecoveryState,
    PartitionRegistration,
    ZkMigrationState,
    is_acceptable_leader,
    is_replica_online,
    offline_replicas,
)

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
