"""When a replica is usable, per KIP-858 as shipped Kafka codes it (reference 7.8).

A replica on broker B is offline when B is missing or fenced, or when B's registration does not
list the replica's directory as online (LOST, or an id B did not register while B registered
some). Leadership also needs B not to be in controlled shutdown.
"""

from __future__ import annotations

from kraftpy.image.cluster import ClusterImage
from kraftpy.image.partition import PartitionRegistration


def is_replica_online(cluster: ClusterImage, partition: PartitionRegistration, broker_id: int) -> bool:
    broker = cluster.brokers.get(broker_id)
    if broker is None or broker.fenced:
        return False
    return broker.has_online_dir(partition.directory(broker_id))


def offline_replicas(cluster: ClusterImage, partition: PartitionRegistration) -> list[int]:
    """The partition's replicas that cannot serve (KRaftMetadataCache.getOfflineReplicas)."""
    return [b for b in partition.replicas if not is_replica_online(cluster, partition, b)]


def is_acceptable_leader(cluster: ClusterImage, partition: PartitionRegistration, broker_id: int) -> bool:
    """The controller's LeaderAcceptor: active broker (unfenced, not shutting down) with the dir online."""
    broker = cluster.brokers.get(broker_id)
    if broker is None or not broker.is_active():
        return False
    return broker.has_online_dir(partition.directory(broker_id))
