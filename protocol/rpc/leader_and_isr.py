"""LeaderAndIsr (apiKey 4, v0-7, flexible from v4): the ZooKeeper-mode controller tells a broker
what to lead and follow.

v1 adds IsNew (KIP-112: a replica that was never created anywhere), v2 groups partitions by topic
(TopicStates) and adds BrokerEpoch, v3 the reassignment lists, v5 topic ids and Type, v6
LeaderRecoveryState, v7 isKRaftController (KIP-866). From v5 the answer names topics by id.

Only the fields Kafka marks ignorable are dropped silently at versions that lack them; writing a
non-default isKRaftController, Type or LeaderRecoveryState at an older version is refused, as
Kafka's generated code refuses it, so a broker never acts on a state it could not have been sent.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from protocol.rpc.message import RpcMessage, versions
from protocol.rpc.spec import ApiSpec
from protocol.rpc.types import Int8, Int16, Int32, Int64, Uuid
from protocol.uuid import Uuid as _Uuid


class LeaderAndIsrPartitionState(RpcMessage):
    TopicName: Annotated[str, versions("0-1", ignorable=True)] = ""
    PartitionIndex: Int32 = 0
    ControllerEpoch: Int32 = 0
    Leader: Int32 = 0
    LeaderEpoch: Int32 = 0
    Isr: list[Int32] = Field(default_factory=list)
    PartitionEpoch: Int32 = 0
    Replicas: list[Int32] = Field(default_factory=list)
    AddingReplicas: Annotated[list[Int32], versions("3+", ignorable=True)] = Field(default_factory=list)
    RemovingReplicas: Annotated[list[Int32], versions("3+", ignorable=True)] = Field(default_factory=list)
    IsNew: Annotated[bool, versions("1+", ignorable=True)] = False
    LeaderRecoveryState: Annotated[Int8, versions("6+")] = 0


class LeaderAndIsrRequest(RpcMessage):
    class LeaderAndIsrTopicState(RpcMessage):
        TopicName: str = ""
        TopicId: Annotated[Uuid, versions("5+", ignorable=True)] = _Uuid.ZERO
        PartitionStates: list[LeaderAndIsrPartitionState] = Field(default_factory=list)

    class LeaderAndIsrLiveLeader(RpcMessage):
        BrokerId: Int32 = 0
        HostName: str = ""
        Port: Int32 = 0

    ControllerId: Int32 = 0
    isKRaftController: Annotated[bool, versions("7+")] = False
    ControllerEpoch: Int32 = 0
    BrokerEpoch: Annotated[Int64, versions("2+", ignorable=True)] = -1
    Type: Annotated[Int8, versions("5+")] = 0
    UngroupedPartitionStates: Annotated[list[LeaderAndIsrPartitionState], versions("0-1")] = Field(
        default_factory=list
    )
    TopicStates: Annotated[list[LeaderAndIsrTopicState], versions("2+")] = Field(default_factory=list)
    LiveLeaders: list[LeaderAndIsrLiveLeader] = Field(default_factory=list)


class LeaderAndIsrResponse(RpcMessage):
    class LeaderAndIsrPartitionError(RpcMessage):
        TopicName: Annotated[str, versions("0-4", ignorable=True)] = ""
        PartitionIndex: Int32 = 0
        ErrorCode: Int16 = 0

    class LeaderAndIsrTopicError(RpcMessage):
        TopicId: Uuid = _Uuid.ZERO
        PartitionErrors: list[LeaderAndIsrResponse.LeaderAndIsrPartitionError] = Field(default_factory=list)

    ErrorCode: Int16 = 0
    PartitionErrors: Annotated[list[LeaderAndIsrPartitionError], versions("0-4")] = Field(
        default_factory=list
    )
    Topics: Annotated[list[LeaderAndIsrTopicError], versions("5+")] = Field(default_factory=list)


for _model in (
    LeaderAndIsrRequest.LeaderAndIsrTopicState,
    LeaderAndIsrRequest,
    LeaderAndIsrResponse.LeaderAndIsrTopicError,
    LeaderAndIsrResponse,
):
    _model.model_rebuild()

SPEC = ApiSpec(
    name="LeaderAndIsr",
    api_key=4,
    min_version=0,
    max_version=7,
    request_model=LeaderAndIsrRequest,
    response_model=LeaderAndIsrResponse,
)
