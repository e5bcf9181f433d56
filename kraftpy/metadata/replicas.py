"""The one rule for whether a replica can serve, shared by the controller, the brokers and the tools.

A replica on broker B is offline when B is not registered or fenced, or when B's registration does
not count the replica's directory as online (BrokerRegistration.directory_online: KIP-858 kept
stricter than shipped Kafka, see docs/kip-deviations.md). Leading also needs B not to be in
controlled shutdown.
"""

from __future__ import annotations

from typing import Protocol

from kraftpy.metadata.partition import PartitionRegistration
from kraftpy.metadata.registration import BrokerRegistration


class Brokers(Protocol):
    """Registrations by broker id: the controller's ClusterControlManager.registrations, an
    image's ClusterImage or its brokers mapping."""

    def get(self, broker_id: int, /) -> BrokerRegistration | None: ...


def is_replica_online(brokers: Brokers, partition: PartitionRegistration, broker_id: int) -> bool:
    broker = brokers.get(broker_id)
    if broker is None or broker.fenced:
        return False
    return broker.directory_online(partition.directory(broker_id))


def offline_replicas(brokers: Brokers, partition: PartitionRegistration) -> list[int]:
    """The partition's replicas that cannot serve (Metadata's OfflineReplicas)."""
    out = []
    # One pass over replicas and directories: every Metadata answer walks every partition.
    for b, d in zip(partition.replicas, partition.directories, strict=True):
        broker = brokers.get(b)
        if broker is None or broker.fenced or not broker.directory_online(d):
            out.append(b)
    return out


def is_acceptable_leader(brokers: Brokers, partition: PartitionRegistration, broker_id: int) -> bool:
    """The controller's LeaderAcceptor: active broker (unfenced, not shutting down) with the dir online."""
    broker = brokers.get(broker_id)
    if broker is None or not broker.is_active():
        return False
    return broker.directory_online(partition.directory(broker_id))
