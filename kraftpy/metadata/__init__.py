"""The metadata model both sides of the cluster share (Kafka's org.apache.kafka.metadata).

Registrations of brokers and controllers, partitions, the values records carry, and the one rule
for when a replica is online. The controller's managers and the image hold these same classes,
so a Metadata answer means the same thing whoever gives it. Values only: no I/O, no replay state.
"""

from kraftpy.metadata.enums import ConfigResourceType, ZkMigrationState
from kraftpy.metadata.errors import InvalidReplicaDirectoriesError, MetadataReplayError
from kraftpy.metadata.partition import (
    NO_LEADER,
    NO_LEADER_CHANGE,
    NO_RECOVERY_STATE_CHANGE,
    LeaderRecoveryState,
    PartitionRegistration,
)
from kraftpy.metadata.registration import BrokerRegistration, ControllerRegistration, Endpoint, VersionRange
from kraftpy.metadata.replicas import is_acceptable_leader, is_replica_online, offline_replicas

__all__ = [
    "NO_LEADER",
    "NO_LEADER_CHANGE",
    "NO_RECOVERY_STATE_CHANGE",
    "BrokerRegistration",
    "ConfigResourceType",
    "ControllerRegistration",
    "Endpoint",
    "InvalidReplicaDirectoriesError",
    "LeaderRecoveryState",
    "MetadataReplayError",
    "PartitionRegistration",
    "VersionRange",
    "ZkMigrationState",
    "is_acceptable_leader",
    "is_replica_online",
    "offline_replicas",
]
