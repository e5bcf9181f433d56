"""AssignReplicasToDirs (apiKey 73, v0): a broker tells the controller which directory holds each replica."""

from __future__ import annotations

from pydantic import Field

from protocol.rpc.message import RpcMessage
from protocol.rpc.spec import ApiSpec
from protocol.rpc.types import Int16, Int32, Int64, NodeId, Uuid
from protocol.uuid import Uuid as _Uuid

# Keeps a request under 64 KB with 10 directories (Kafka's AssignReplicasToDirsRequest).
MAX_ASSIGNMENTS_PER_REQUEST = 2250


class AssignReplicasToDirsRequest(RpcMessage):
    class PartitionData(RpcMessage):
        PartitionIndex: Int32 = 0

    class TopicData(RpcMessage):
        TopicId: Uuid = _Uuid.ZERO
        Partitions: list[AssignReplicasToDirsRequest.PartitionData] = Field(default_factory=list)

    class DirectoryData(RpcMessage):
        Id: Uuid = _Uuid.ZERO
        Topics: list[AssignReplicasToDirsRequest.TopicData] = Field(default_factory=list)

    BrokerId: NodeId = 0
    BrokerEpoch: Int64 = -1
    Directories: list[DirectoryData] = Field(default_factory=list)


class AssignReplicasToDirsResponse(RpcMessage):
    class PartitionData(RpcMessage):
        PartitionIndex: Int32 = 0
        ErrorCode: Int16 = 0

    class TopicData(RpcMessage):
        TopicId: Uuid = _Uuid.ZERO
        Partitions: list[AssignReplicasToDirsResponse.PartitionData] = Field(default_factory=list)

    class DirectoryData(RpcMessage):
        Id: Uuid = _Uuid.ZERO
        Topics: list[AssignReplicasToDirsResponse.TopicData] = Field(default_factory=list)

    ThrottleTimeMs: Int32 = 0
    ErrorCode: Int16 = 0
    Directories: list[DirectoryData] = Field(default_factory=list)


for _model in (
    AssignReplicasToDirsRequest.TopicData,
    AssignReplicasToDirsRequest.DirectoryData,
    AssignReplicasToDirsResponse.TopicData,
    AssignReplicasToDirsResponse.DirectoryData,
):
    _model.model_rebuild()

SPEC = ApiSpec(
    name="AssignReplicasToDirs",
    api_key=73,
    min_version=0,
    max_version=0,
    request_model=AssignReplicasToDirsRequest,
    response_model=AssignReplicasToDirsResponse,
)
