"""CreateTopics (apiKey 19, v0-7), trimmed to the fields the controller reads and answers.

NumPartitions / ReplicationFactor of -1 take the controller's num.partitions / default.replication.factor;
Assignments (with both at -1) place the replicas by hand.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from protocol.errors import Errors
from protocol.rpc.message import RpcMessage, versions
from protocol.rpc.spec import ApiSpec
from protocol.rpc.types import Int8, Int16, Int32, Uuid
from protocol.uuid import Uuid as _Uuid


class CreateTopicsRequest(RpcMessage):
    class CreatableReplicaAssignment(RpcMessage):
        PartitionIndex: Int32 = 0
        BrokerIds: list[Int32] = Field(default_factory=list)

    class CreatableTopicConfig(RpcMessage):
        Name: str = ""
        Value: Annotated[str | None, versions("0+", nullable="0+")] = None

    class CreatableTopic(RpcMessage):
        Name: str = ""
        NumPartitions: Int32 = -1
        ReplicationFactor: Int16 = -1
        Assignments: list[CreateTopicsRequest.CreatableReplicaAssignment] = Field(default_factory=list)
        Configs: list[CreateTopicsRequest.CreatableTopicConfig] = Field(default_factory=list)

    Topics: list[CreatableTopic] = Field(default_factory=list)
    TimeoutMs: Int32 = 60000
    ValidateOnly: Annotated[bool, versions("1+")] = False


class CreateTopicsResponse(RpcMessage):
    class CreatableTopicConfigs(RpcMessage):
        Name: str = ""
        Value: Annotated[str | None, versions("0+", nullable="0+")] = None
        ReadOnly: bool = False
        ConfigSource: Int8 = -1
        IsSensitive: bool = False

    class CreatableTopicResult(RpcMessage):
        Name: str = ""
        TopicId: Annotated[Uuid, versions("7+", ignorable=True)] = _Uuid.ZERO
        ErrorCode: Int16 = 0
        ErrorMessage: Annotated[str | None, versions("1+", nullable="0+", ignorable=True)] = None
        TopicConfigErrorCode: Annotated[Int16, versions("5+", tagged="5+", tag=0, ignorable=True)] = 0
        NumPartitions: Annotated[Int32, versions("5+", ignorable=True)] = -1
        ReplicationFactor: Annotated[Int16, versions("5+", ignorable=True)] = -1
        Configs: Annotated[
            list[CreateTopicsResponse.CreatableTopicConfigs] | None,
            versions("5+", nullable="5+", ignorable=True),
        ] = Field(default_factory=list)

    ThrottleTimeMs: Annotated[Int32, versions("2+")] = 0
    Topics: list[CreatableTopicResult] = Field(default_factory=list)


for _model in (
    CreateTopicsRequest.CreatableTopic,
    CreateTopicsRequest,
    CreateTopicsResponse.CreatableTopicResult,
    CreateTopicsResponse,
):
    _model.model_rebuild()


def _error_response(spec: ApiSpec, code: Errors) -> RpcMessage:
    # No top-level ErrorCode in this response; without the request there are no topics to name.
    return CreateTopicsResponse()


SPEC = ApiSpec(
    name="CreateTopics",
    api_key=19,
    min_version=0,
    max_version=7,
    request_model=CreateTopicsRequest,
    response_model=CreateTopicsResponse,
    error_response_factory=_error_response,
    flexible_versions="5+",
)
