"""UpdateMetadata (apiKey 6, v0-8, flexible from v6): the ZooKeeper-mode controller's news for every
broker's metadata cache: live brokers with their endpoints, and partition states with
OfflineReplicas (v4+, KIP-112).

v5 groups partitions by topic and adds BrokerEpoch, v7 topic ids, v8 isKRaftController and the tagged
Type (KIP-866: 1 incremental, 2 full). isKRaftController and Type are not ignorable: a non-default
value at an older version is refused rather than lost, as in Kafka.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from protocol.rpc.message import RpcMessage, versions
from protocol.rpc.spec import ApiSpec
from protocol.rpc.types import Int8, Int16, Int32, Int64, Uuid
from protocol.uuid import Uuid as _Uuid


class UpdateMetadataPartitionState(RpcMessage):
    TopicName: Annotated[str, versions("0-4", ignorable=True)] = ""
    PartitionIndex: Int32 = 0
    ControllerEpoch: Int32 = 0
    Leader: Int32 = 0
    LeaderEpoch: Int32 = 0
    Isr: list[Int32] = Field(default_factory=list)
    ZkVersion: Int32 = 0
    Replicas: list[Int32] = Field(default_factory=list)
    OfflineReplicas: Annotated[list[Int32], versions("4+", ignorable=True)] = Field(default_factory=list)


class UpdateMetadataRequest(RpcMessage):
    class UpdateMetadataTopicState(RpcMessage):
        TopicName: str = ""
        TopicId: Annotated[Uuid, versions("7+", ignorable=True)] = _Uuid.ZERO
        PartitionStates: list[UpdateMetadataPartitionState] = Field(default_factory=list)

    class UpdateMetadataEndpoint(RpcMessage):
        Port: Int32 = 0
        Host: str = ""
        Listener: Annotated[str, versions("3+", ignorable=True)] = ""
        SecurityProtocol: Int16 = 0

    class UpdateMetadataBroker(RpcMessage):
        Id: Int32 = 0
        V0Host: Annotated[str, versions("0", ignorable=True)] = ""
        V0Port: Annotated[Int32, versions("0", ignorable=True)] = 0
        Endpoints: Annotated[
            list[UpdateMetadataRequest.UpdateMetadataEndpoint], versions("1+", ignorable=True)
        ] = Field(default_factory=list)
        Rack: Annotated[str | None, versions("2+", nullable="0+", ignorable=True)] = None

    ControllerId: Int32 = 0
    isKRaftController: Annotated[bool, versions("8+")] = False
    Type: Annotated[Int8, versions("8+", tagged="8+", tag=0)] = 0
    ControllerEpoch: Int32 = 0
    BrokerEpoch: Annotated[Int64, versions("5+", ignorable=True)] = -1
    UngroupedPartitionStates: Annotated[list[UpdateMetadataPartitionState], versions("0-4")] = Field(
        default_factory=list
    )
    TopicStates: Annotated[list[UpdateMetadataTopicState], versions("5+")] = Field(default_factory=list)
    LiveBrokers: list[UpdateMetadataBroker] = Field(default_factory=list)


class UpdateMetadataResponse(RpcMessage):
    ErrorCode: Int16 = 0


for _model in (
    UpdateMetadataRequest.UpdateMetadataTopicState,
    UpdateMetadataRequest.UpdateMetadataBroker,
    UpdateMetadataRequest,
):
    _model.model_rebuild()

SPEC = ApiSpec(
    name="UpdateMetadata",
    api_key=6,
    min_version=0,
    max_version=8,
    request_model=UpdateMetadataRequest,
    response_model=UpdateMetadataResponse,
)
