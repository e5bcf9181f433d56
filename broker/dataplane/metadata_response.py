"""The broker's answer to Metadata, from its MetadataImage (Kafka's KRaftMetadataCache), sans-IO.

Per partition: leader, leader epoch, replicas, ISR, the replicas that cannot serve (KIP-112's
OfflineReplicas: broker without this listener, or offline by the one rule the controller uses too,
kraftpy.metadata.replicas, or this broker's own replica when it knows its log holds a damaged batch)
and each replica's assigned directory id (kraftpy's tagged ReplicaDirectories). Brokers are the
unfenced ones with this listener.
Topics are never created on a Metadata request.
"""

from __future__ import annotations

from collections.abc import Collection

from kraftpy.image import MetadataImage, PartitionRegistration, TopicImage
from kraftpy.image.cluster import ClusterImage
from kraftpy.metadata import ConfigResourceType, is_replica_online
from protocol.errors import Errors
from protocol.rpc.metadata import MetadataRequest, MetadataResponse
from protocol.uuid import Uuid

M = MetadataResponse


def replica_offline(cluster: ClusterImage, reg: PartitionRegistration, broker_id: int, listener: str) -> bool:
    broker = cluster.brokers.get(broker_id)
    if broker is None or broker.listener(listener) is None:
        return True
    return not is_replica_online(cluster.brokers, reg, broker_id)


def offline_replicas(
    cluster: ClusterImage, reg: PartitionRegistration, listener: str, unreadable_local: int = -1
) -> list[int]:
    """`unreadable_local`: this broker's id when its own replica cannot be read (else -1). The
    metadata does not know that, so only this broker can say it."""
    return [b for b in reg.replicas if b == unreadable_local or replica_offline(cluster, reg, b, listener)]


def partition_metadata(
    cluster: ClusterImage, index: int, reg: PartitionRegistration, listener: str, unreadable_local: int = -1
) -> M.MetadataResponsePartition:
    leader = cluster.brokers.get(reg.leader) if reg.leader >= 0 else None
    usable_leader = leader is not None and not leader.fenced and leader.listener(listener) is not None
    return M.MetadataResponsePartition(
        ErrorCode=int(Errors.NONE if usable_leader else Errors.LEADER_NOT_AVAILABLE),
        PartitionIndex=index,
        LeaderId=reg.leader,
        LeaderEpoch=reg.leader_epoch,
        ReplicaNodes=list(reg.replicas),
        IsrNodes=list(reg.isr),
        OfflineReplicas=offline_replicas(cluster, reg, listener, unreadable_local),
        ReplicaDirectories=list(reg.directories),
    )


def topic_metadata(
    image: MetadataImage,
    topic: TopicImage,
    listener: str,
    local_broker_id: int = -1,
    unreadable: Collection[tuple[Uuid, int]] = (),
) -> M.MetadataResponseTopic:
    return M.MetadataResponseTopic(
        ErrorCode=0,
        Name=topic.name,
        TopicId=topic.id,
        IsInternal=topic.name.startswith("__"),
        Partitions=[
            partition_metadata(
                image.cluster,
                i,
                topic.partitions[i],
                listener,
                local_broker_id if unreadable and (topic.id, i) in unreadable else -1,
            )
            for i in topic.partition_ids()
        ],
    )


def brokers(cluster: ClusterImage, listener: str) -> list[M.MetadataResponseBroker]:
    out = []
    for broker_id in sorted(cluster.brokers):
        b = cluster.brokers[broker_id]
        ep = b.listener(listener)
        if b.fenced or ep is None:
            continue
        out.append(M.MetadataResponseBroker(NodeId=broker_id, Host=ep.host, Port=ep.port, Rack=b.rack))
    return out


def metadata_response(
    image: MetadataImage,
    req: MetadataRequest,
    version: int,
    *,
    listener: str,
    cluster_id: str | None,
    local_broker_id: int,
    unreadable: Collection[tuple[Uuid, int]] = (),
) -> MetadataResponse:
    """Answer `req`; ControllerId is this broker, as KRaft brokers name a live broker there (they
    forward controller requests themselves). `unreadable`: (topic id, partition) of the local
    replicas whose log holds a damaged batch, listed offline although the metadata has them online."""
    topics: list[M.MetadataResponseTopic] = []
    if req.Topics is None or (version == 0 and not req.Topics):
        for name in sorted(image.topics.topics_by_name):
            topics.append(
                topic_metadata(
                    image, image.topics.topics_by_name[name], listener, local_broker_id, unreadable
                )
            )
    else:
        for wanted in req.Topics:
            if version >= 10 and wanted.TopicId != Uuid.ZERO:
                t = image.topics.get_topic(wanted.TopicId)
                if t is None:
                    topics.append(
                        M.MetadataResponseTopic(
                            ErrorCode=int(Errors.UNKNOWN_TOPIC_ID), Name=None, TopicId=wanted.TopicId
                        )
                    )
                    continue
            else:
                t = image.topics.get_topic(wanted.Name or "")
                if t is None:
                    topics.append(
                        M.MetadataResponseTopic(
                            ErrorCode=int(Errors.UNKNOWN_TOPIC_OR_PARTITION), Name=wanted.Name
                        )
                    )
                    continue
            topics.append(topic_metadata(image, t, listener, local_broker_id, unreadable))
    return M(
        Brokers=brokers(image.cluster, listener),
        ClusterId=cluster_id,
        ControllerId=local_broker_id,
        Topics=topics,
    )


def min_insync_replicas(image: MetadataImage, topic: str, broker_default: int) -> int:
    """The topic's min.insync.replicas (a ConfigRecord on the topic), else the broker's."""
    value = image.configs.configs(ConfigResourceType.TOPIC, topic).get("min.insync.replicas")
    if value is None:
        return broker_default
    try:
        return max(int(value), 1)
    except ValueError:
        return broker_default
