"""A plain, JSON-ready description of an image: what the tools print and scripts read.

Keys are camelCase like Kafka's JSON tools; brokers, topics and partitions are sorted; directory
ids are their 22-character text, the reserved ones by name (MIGRATING, UNASSIGNED, LOST).
"""

from __future__ import annotations

from typing import Any

from kraftpy.image.image import MetadataImage
from kraftpy.metadata import BrokerRegistration, Endpoint, offline_replicas
from protocol.uuid import describe_directory


def _listeners(endpoints: tuple[Endpoint, ...]) -> list[dict[str, Any]]:
    return [
        {"name": e.name, "host": e.host, "port": e.port, "securityProtocol": e.security_protocol}
        for e in endpoints
    ]


def _broker(b: BrokerRegistration) -> dict[str, Any]:
    return {
        "brokerId": b.id,
        "brokerEpoch": b.epoch,
        "incarnationId": str(b.incarnation_id),
        "state": b.state,
        "fenced": b.fenced,
        "inControlledShutdown": b.in_controlled_shutdown,
        "isMigratingZkBroker": b.is_migrating_zk_broker,
        "rack": b.rack,
        "logDirs": [str(d) for d in b.directories],
        "listeners": _listeners(b.listeners),
    }


def image_to_dict(image: MetadataImage) -> dict[str, Any]:
    features: dict[str, int] = {}
    if image.features.metadata_version is not None:
        features["metadata.version"] = image.features.metadata_version
    features.update(image.features.finalized_versions)
    topics = []
    for name in sorted(image.topics.topics_by_name):
        t = image.topics.topics_by_name[name]
        partitions = []
        for pid in sorted(t.partitions):
            p = t.partitions[pid]
            partitions.append(
                {
                    "partition": pid,
                    "leader": p.leader,
                    "leaderEpoch": p.leader_epoch,
                    "partitionEpoch": p.partition_epoch,
                    "leaderRecoveryState": p.leader_recovery_state.name,
                    "replicas": list(p.replicas),
                    "isr": list(p.isr),
                    "offlineReplicas": offline_replicas(image.cluster, p),
                    "directories": [describe_directory(d) for d in p.directories],
                    "addingReplicas": list(p.adding_replicas),
                    "removingReplicas": list(p.removing_replicas),
                    "eligibleLeaderReplicas": list(p.elr),
                    "lastKnownElr": list(p.last_known_elr),
                }
            )
        topics.append({"name": t.name, "topicId": str(t.id), "partitions": partitions})
    return {
        "offset": image.provenance.offset,
        "epoch": image.provenance.epoch,
        "lastContainedLogTimestamp": image.provenance.last_contained_log_time_ms,
        "features": features,
        "zkMigrationState": image.features.zk_migration_state.name,
        "brokers": [_broker(b) for b in image.cluster.brokers.values()],
        "controllers": [
            {
                "controllerId": c.id,
                "incarnationId": str(c.incarnation_id),
                "zkMigrationReady": c.zk_migration_ready,
                "listeners": _listeners(c.listeners),
            }
            for c in image.cluster.controllers.values()
        ],
        "topics": topics,
        "producerIds": {"nextProducerId": image.producer_ids.next_producer_id},
        "configs": [
            {"resourceType": rtype, "resourceName": rname, "configs": dict(values)}
            for (rtype, rname), values in image.configs.resources.items()
        ],
        "acls": len(image.acls),
        "clientQuotas": len(image.client_quotas),
        "scramCredentials": len(image.scram),
        "delegationTokens": len(image.delegation_tokens),
    }
