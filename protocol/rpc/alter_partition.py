"""AlterPartition (apiKey 56, v0-3): a partition leader asks the controller to change the ISR.

Topics are named by TopicName up to v1 and by TopicId from v2; v3 sends each new ISR member with
its broker epoch (NewIsrWithEpochs) instead of NewIsr.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from protocol.rpc.message import RpcMessage, versions
from protocol.rpc.spec import ApiSpec
from protocol.rpc.types import Int8, Int16, Int32, Int64, NodeId, Uuid
from protocol.uuid import Uuid as _Uuid


class AlterPartitionRequest(RpcMessage):
    class BrokerState(RpcMessage):
        BrokerId: NodeId = 0
        BrokerEpoch: Int64 = -1

    class PartitionData(RpcMessage):
        PartitionIndex: Int32 = 0
        LeaderEpoch: Int32 = 0
        NewIsr: Annotated[list[NodeId], versions("0-2")] = Field(default_factory=list)
        NewIsrWithEpochs: Annotated[list[AlterPartitionRequest.BrokerState], versions("3+")] = Field(
            default_factory=list
        )
        LeaderRecoveryState: Annotated[Int8, versions("1+")] = 0
        PartitionEpoch: Int32 = 0

    class TopicData(RpcMessage):
        TopicName: Annotated[str, versions("0-1", ignorable=True)] = ""
        TopicId: Annotated[Uuid, versions("2+", ignorable=True)] = _Uuid.ZERO
        Partitions: list[AlterPartitionRequest.PartitionData] = Field(default_factory=list)

    BrokerId: NodeId = 0
    BrokerEpoch: Int64 = -1
    Topics: list[TopicData] = Field(default_factory=list)


class AlterPartitionResponse(RpcMessage):
    class PartitionData(RpcMessage):
        PartitionIndex: Int32 = 0
        ErrorCode: Int16 = 0
        LeaderId: Int32 = 0
        LeaderEpoch: Int32 = 0
        Isr: list[Int32] = Field(default_factory=list)
        LeaderRecoveryState: Annotated[Int8, versions("1+")] = 0
        PartitionEpoch: Int32 = 0

    class TopicData(RpcMessage):
        TopicName: Annotated[str, versions("0-1", ignorable=True)] = ""
        TopicId: Annotated[Uuid, versions("2+", ignorable=True)] = _Uuid.ZERO
        Partitions: list[AlterPartitionResponse.PartitionData] = Field(default_factory=list)

    ThrottleTimeMs: Int32 = 0
    ErrorCode: Int16 = 0
    Topics: list[TopicData] = Field(default_factory=list)


for _model in (
    AlterPartitionRequest.PartitionData,
    AlterPartitionRequest.TopicData,
    AlterPartitionRequest,
    AlterPartitionResponse.TopicData,
    AlterPartitionResponse,
):
    _model.model_rebuild()

SPEC = ApiSpec(
    name="AlterPartition",
    api_key=56,
    min_version=0,
    max_version=3,
    request_model=AlterPartitionRequest,
    response_model=AlterPartitionResponse,
)
