"""Read-only answers: DescribeCluster and Metadata, from the controller's own state.

A replica is offline (OfflineReplicas) when its broker is missing or fenced, or its directory is
not online on that broker: the one rule brokers answer by too (kraftpy.metadata.replicas).
"""

from __future__ import annotations

from controller.core.context import ControllerManagers
from controller.core.replication_control import TopicControlInfo
from kraftpy.metadata import NO_LEADER, offline_replicas
from protocol.errors import Errors
from protocol.rpc.describe_cluster import (
    ENDPOINT_TYPE_CONTROLLER,
    DescribeClusterRequest,
    DescribeClusterResponse,
)
from protocol.rpc.metadata import MetadataRequest, MetadataResponse
from protocol.uuid import Uuid

M = MetadataResponse


def describe_cluster(
    m: ControllerManagers, req: DescribeClusterRequest, version: int, listener_name: str | None = None
) -> DescribeClusterResponse:
    brokers = []
    if version >= 1 and req.EndpointType == ENDPOINT_TYPE_CONTROLLER:
        for c in sorted(m.cluster.controllers.values(), key=lambda c: c.id):
            ep = next((e for e in c.listeners if listener_name is None or e.name == listener_name), None)
            if ep is not None:
                brokers.append(
                    DescribeClusterResponse.DescribeClusterBroker(BrokerId=c.id, Host=ep.host, Port=ep.port)
                )
    else:
        for b in sorted(m.cluster.registrations):
            r = m.cluster.registrations[b]
            ep = r.endpoint(listener_name)
            if r.fenced or ep is None:
                continue
            brokers.append(
                DescribeClusterResponse.DescribeClusterBroker(
                    BrokerId=b, Host=ep.host, Port=ep.port, Rack=r.rack
                )
            )
    return DescribeClusterResponse(
        ErrorCode=0,
        EndpointType=req.EndpointType if version >= 1 else 1,
        ClusterId=m.config.cluster_id,
        ControllerId=m.config.node_id,
        Brokers=brokers,
    )


def _topic(m: ControllerManagers, info: TopicControlInfo) -> M.MetadataResponseTopic:
    partitions = []
    for pid in sorted(info.partitions):
        p = info.partitions[pid]
        partitions.append(
            M.MetadataResponsePartition(
                ErrorCode=int(Errors.LEADER_NOT_AVAILABLE) if p.leader == NO_LEADER else 0,
                PartitionIndex=pid,
                LeaderId=p.leader,
                LeaderEpoch=p.leader_epoch,
                ReplicaNodes=list(p.replicas),
                IsrNodes=list(p.isr),
                OfflineReplicas=offline_replicas(m.cluster.registrations, p),
                ReplicaDirectories=list(p.directories),
            )
        )
    return M.MetadataResponseTopic(ErrorCode=0, Name=info.name, TopicId=info.id, Partitions=partitions)


def metadata(
    m: ControllerManagers, req: MetadataRequest, version: int, listener_name: str | None = None
) -> MetadataResponse:
    replication = m.replication
    brokers = []
    for b in sorted(m.cluster.registrations):
        r = m.cluster.registrations[b]
        ep = r.endpoint(listener_name)
        if r.fenced or ep is None:
            continue
        brokers.append(M.MetadataResponseBroker(NodeId=b, Host=ep.host, Port=ep.port, Rack=r.rack))
    topics: list[M.MetadataResponseTopic] = []
    if req.Topics is None or (version == 0 and not req.Topics):
        for name in sorted(replication.topics_by_name):
            topics.append(_topic(m, replication.topics[replication.topics_by_name[name]]))
    else:
        for wanted in req.Topics:
            info = None
            if version >= 10 and wanted.TopicId != Uuid.ZERO:
                info = replication.topics.get(wanted.TopicId)
                if info is None:
                    topics.append(
                        M.MetadataResponseTopic(
                            ErrorCode=int(Errors.UNKNOWN_TOPIC_ID), Name=None, TopicId=wanted.TopicId
                        )
                    )
                    continue
            else:
                topic_id = replication.topics_by_name.get(wanted.Name or "")
                info = replication.topics.get(topic_id) if topic_id is not None else None
                if info is None:
                    topics.append(
                        M.MetadataResponseTopic(
                            ErrorCode=int(Errors.UNKNOWN_TOPIC_OR_PARTITION), Name=wanted.Name
                        )
                    )
                    continue
            topics.append(_topic(m, info))
    return M(Brokers=brokers, ClusterId=m.config.cluster_id, ControllerId=m.config.node_id, Topics=topics)
