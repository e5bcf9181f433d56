"""StopReplica (apiKey 5, v0-4, flexible from v2): stop serving a replica, and with DeletePartition
remove its log.

v1 adds BrokerEpoch and groups partitions by topic, v3 gives each partition its own LeaderEpoch and
DeletePartition (TopicStates), v4 isKRaftController (KIP-866).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from protocol.rpc.message import RpcMessage, versions
from protocol.rpc.spec import ApiSpec
from protocol.rpc.types import Int16, Int32, Int64


class StopReplicaRequest(RpcMessage):
    class StopReplicaPartitionV0(RpcMessage):
        TopicName: str = ""
        PartitionIndex: Int32 = 0

    class StopReplicaTopicV1(RpcMessage):
        Name: str = ""
        PartitionIndexes: list[Int32] = Field(default_factory=list)

    class StopReplicaPartitionState(RpcMessage):
        PartitionIndex: Int32 = 0
        LeaderEpoch: Int32 = -1
        DeletePartition: bool = False

    class StopReplicaTopicState(RpcMessage):
        TopicName: str = ""
        PartitionStates: list[StopReplicaRequest.StopReplicaPartitionState] = Field(default_factory=list)

    ControllerId: Int32 = 0
    isKRaftController: Annotated[bool, versions("4+")] = False
    ControllerEpoch: Int32 = 0
    BrokerEpoch: Annotated[Int64, versions("1+", ignorable=True)] = -1
    DeletePartitions: Annotated[bool, versions("0-2")] = False
    UngroupedPartitions: Annotated[list[StopReplicaPartitionV0], versions("0")] = Field(default_factory=list)
    Topics: Annotated[list[StopReplicaTopicV1], versions("1-2")] = Field(default_factory=list)
    TopicStates: Annotated[list[StopReplicaTopicState], versions("3+")] = Field(default_factory=list)


class StopReplicaResponse(RpcMessage):
    class StopReplicaPartitionError(RpcMessage):
        TopicName: str = ""
        PartitionIndex: Int32 = 0
        ErrorCode: Int16 = 0

    ErrorCode: Int16 = 0
    PartitionErrors: list[StopReplicaPartitionError] = Field(default_factory=list)


for _model in (StopReplicaRequest.StopReplicaTopicState, StopReplicaRequest, StopReplicaResponse):
    _model.model_rebuild()

SPEC = ApiSpec(
    name="StopReplica",
    api_key=5,
    min_version=0,
    max_version=4,
    request_model=StopReplicaRequest,
    response_model=StopReplicaResponse,
)
