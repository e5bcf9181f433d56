"""Metadata (apiKey 3, v0-12), trimmed to what kraftpy serves: brokers, controller, and topics with
their partitions' leader, epochs, replicas, ISR and offline replicas.

One field is kraftpy's own: each partition's `ReplicaDirectories` (index-aligned with
ReplicaNodes, the directory each replica is assigned to). It is a tagged field from the first
flexible version (9), so it never disturbs a reader that does not know it (docs/kip-deviations.md).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from protocol.errors import Errors
from protocol.rpc.message import RpcMessage, versions
from protocol.rpc.spec import ApiSpec
from protocol.rpc.types import Int16, Int32, Uuid
from protocol.uuid import Uuid as _Uuid

AUTHORIZED_OPERATIONS_OMITTED = -(2**31)
REPLICA_DIRECTORIES_TAG = 10000


class MetadataRequest(RpcMessage):
    class MetadataRequestTopic(RpcMessage):
        TopicId: Annotated[Uuid, versions("10+")] = _Uuid.ZERO
        Name: Annotated[str | None, versions("0+", nullable="10+")] = ""

    # Null asks for every topic (v1+); an empty list for none.
    Topics: Annotated[list[MetadataRequestTopic] | None, versions("0+", nullable="1+")] = None
    AllowAutoTopicCreation: Annotated[bool, versions("4+")] = True
    IncludeClusterAuthorizedOperations: Annotated[bool, versions("8-10")] = False
    IncludeTopicAuthorizedOperations: Annotated[bool, versions("8+")] = False


class MetadataResponse(RpcMessage):
    class MetadataResponseBroker(RpcMessage):
        NodeId: Int32 = 0
        Host: str = ""
        Port: Int32 = 0
        Rack: Annotated[str | None, versions("1+", nullable="1+", ignorable=True)] = None

    class MetadataResponsePartition(RpcMessage):
        ErrorCode: Int16 = 0
        PartitionIndex: Int32 = 0
        LeaderId: Int32 = 0
        LeaderEpoch: Annotated[Int32, versions("7+", ignorable=True)] = -1
        ReplicaNodes: list[Int32] = Field(default_factory=list)
        IsrNodes: list[Int32] = Field(default_factory=list)
        OfflineReplicas: Annotated[list[Int32], versions("5+", ignorable=True)] = Field(default_factory=list)
        ReplicaDirectories: Annotated[
            list[Uuid], versions("9+", ignorable=True, tagged="9+", tag=REPLICA_DIRECTORIES_TAG)
        ] = Field(default_factory=list)

    class MetadataResponseTopic(RpcMessage):
        ErrorCode: Int16 = 0
        Name: Annotated[str | None, versions("0+", nullable="12+")] = ""
        TopicId: Annotated[Uuid, versions("10+", ignorable=True)] = _Uuid.ZERO
        IsInternal: Annotated[bool, versions("1+", ignorable=True)] = False
        Partitions: list[MetadataResponse.MetadataResponsePartition] = Field(default_factory=list)
        TopicAuthorizedOperations: Annotated[Int32, versions("8+")] = AUTHORIZED_OPERATIONS_OMITTED

    ThrottleTimeMs: Annotated[Int32, versions("3+")] = 0
    Brokers: list[MetadataResponseBroker] = Field(default_factory=list)
    ClusterId: Annotated[str | None, versions("2+", nullable="2+", ignorable=True)] = None
    ControllerId: Annotated[Int32, versions("1+", ignorable=True)] = -1
    Topics: list[MetadataResponseTopic] = Field(default_factory=list)
    ClusterAuthorizedOperations: Annotated[Int32, versions("8-10")] = AUTHORIZED_OPERATIONS_OMITTED


MetadataResponse.MetadataResponseTopic.model_rebuild()
MetadataResponse.model_rebuild()


def _error_response(spec: ApiSpec, code: Errors) -> RpcMessage:
    return MetadataResponse()


SPEC = ApiSpec(
    name="Metadata",
    api_key=3,
    min_version=0,
    max_version=12,
    request_model=MetadataRequest,
    response_model=MetadataResponse,
    error_response_factory=_error_response,
    flexible_versions="9+",
)
