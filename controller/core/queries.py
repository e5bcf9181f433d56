"""Read-only answers: DescribeCluster and Metadata, from the controller's own state.

A replica is offline (OfflineReplicas) when its broker is missing or fenced, or its directory is
not online on that broker: the one rule brokers answer by too (kraftpy.metadata.replicas).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from controller.core.context import ControllerManagers
from controller.core.replication_control import TopicControlInfo
from kraftpy.metadata import NO_LEADER, BrokerRegistration, PartitionRegistration, offline_replicas
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


# Answers touching more partitions than this are built off the event loop: a Metadata naming
# 100,000 topics is a second of model building, long enough to miss heartbeats.
LARGE_METADATA_ANSWER = 1000

_Registrations = Mapping[int, BrokerRegistration]


def _topic(
    registrations: _Registrations,
    name: str,
    topic_id: Uuid,
    partitions: Sequence[tuple[int, PartitionRegistration]],
) -> M.MetadataResponseTopic:
    return M.MetadataResponseTopic(
        ErrorCode=0,
        Name=name,
        TopicId=topic_id,
        Partitions=[
            M.MetadataResponsePartition(
                ErrorCode=int(Errors.LEADER_NOT_AVAILABLE) if p.leader == NO_LEADER else 0,
                PartitionIndex=pid,
                LeaderId=p.leader,
                LeaderEpoch=p.leader_epoch,
                ReplicaNodes=list(p.replicas),
                IsrNodes=list(p.isr),
                OfflineReplicas=offline_replicas(registrations, p),
                ReplicaDirectories=list(p.directories),
            )
            for pid, p in partitions
        ],
    )


@dataclass(frozen=True, slots=True)
class _Found:
    name: str
    topic_id: Uuid
    partitions: tuple[tuple[int, PartitionRegistration], ...]


@dataclass(frozen=True, slots=True)
class _Missing:
    code: Errors
    name: str | None
    topic_id: Uuid = Uuid.ZERO


@dataclass(frozen=True, slots=True)
class MetadataAnswer:
    """A Metadata answer's inputs, copied from the controller's state while no write can interleave.

    Registrations and partitions are immutable values, so the copy is references only; `build` makes
    the response models from it, anywhere and at any later time.
    """

    brokers: tuple[M.MetadataResponseBroker, ...]
    registrations: _Registrations
    topics: tuple[_Found | _Missing, ...]
    cluster_id: str
    controller_id: int
    partition_count: int

    @property
    def large(self) -> bool:
        return len(self.topics) + self.partition_count > LARGE_METADATA_ANSWER

    def build(self) -> MetadataResponse:
        topics = [
            _topic(self.registrations, t.name, t.topic_id, t.partitions)
            if isinstance(t, _Found)
            else M.MetadataResponseTopic(ErrorCode=int(t.code), Name=t.name, TopicId=t.topic_id)
            for t in self.topics
        ]
        return M(
            Brokers=list(self.brokers),
            ClusterId=self.cluster_id,
            ControllerId=self.controller_id,
            Topics=topics,
        )


def _found(info: TopicControlInfo) -> _Found:
    return _Found(info.name, info.id, tuple(sorted(info.partitions.items())))


def metadata_answer(
    m: ControllerManagers, req: MetadataRequest, version: int, listener_name: str | None = None
) -> MetadataAnswer:
    replication = m.replication
    brokers = []
    for b in sorted(m.cluster.registrations):
        r = m.cluster.registrations[b]
        ep = r.endpoint(listener_name)
        if r.fenced or ep is None:
            continue
        brokers.append(M.MetadataResponseBroker(NodeId=b, Host=ep.host, Port=ep.port, Rack=r.rack))
    topics: list[_Found | _Missing] = []
    if req.Topics is None or (version == 0 and not req.Topics):
        for name in sorted(replication.topics_by_name):
            topics.append(_found(replication.topics[replication.topics_by_name[name]]))
    else:
        for wanted in req.Topics:
            if version >= 10 and wanted.TopicId != Uuid.ZERO:
                info = replication.topics.get(wanted.TopicId)
                if info is None:
                    topics.append(_Missing(Errors.UNKNOWN_TOPIC_ID, None, wanted.TopicId))
                    continue
            else:
                topic_id = replication.topics_by_name.get(wanted.Name or "")
                info = replication.topics.get(topic_id) if topic_id is not None else None
                if info is None:
                    topics.append(_Missing(Errors.UNKNOWN_TOPIC_OR_PARTITION, wanted.Name))
                    continue
            topics.append(_found(info))
    return MetadataAnswer(
        brokers=tuple(brokers),
        registrations=dict(m.cluster.registrations),
        topics=tuple(topics),
        cluster_id=m.config.cluster_id,
        controller_id=m.config.node_id,
        partition_count=sum(len(t.partitions) for t in topics if isinstance(t, _Found)),
    )


def metadata(
    m: ControllerManagers, req: MetadataRequest, version: int, listener_name: str | None = None
) -> MetadataResponse:
    return metadata_answer(m, req, version, listener_name).build()
