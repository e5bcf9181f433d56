"""CreatePartitions (apiKey 37, v0-3): grow a topic to `Count` partitions.

New partitions are placed like a new topic's (or by `Assignments`, one replica list per new
partition), with the topic's replication factor. A client sends it to any broker, which forwards it
to the active controller, as CreateTopics.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from protocol.rpc.message import RpcMessage, versions
from protocol.rpc.spec import ApiSpec
from protocol.rpc.types import Int16, Int32


class CreatePartitionsRequest(RpcMessage):
    class CreatePartitionsAssignment(RpcMessage):
        BrokerIds: list[Int32] = Field(default_factory=list)

    class CreatePartitionsTopic(RpcMessage):
        Name: str = ""
        Count: Int32 = 0
        Assignments: Annotated[
            list[CreatePartitionsRequest.CreatePartitionsAssignment] | None, versions("0+", nullable="0+")
        ] = None

    Topics: list[CreatePartitionsTopic] = Field(default_factory=list)
    TimeoutMs: Int32 = 60000
    ValidateOnly: bool = False


class CreatePartitionsResponse(RpcMessage):
    class CreatePartitionsTopicResult(RpcMessage):
        Name: str = ""
        ErrorCode: Int16 = 0
        ErrorMessage: Annotated[str | None, versions("0+", nullable="0+")] = None

    ThrottleTimeMs: Int32 = 0
    Results: list[CreatePartitionsTopicResult] = Field(default_factory=list)


for _model in (
    CreatePartitionsRequest.CreatePartitionsTopic,
    CreatePartitionsRequest,
    CreatePartitionsResponse,
):
    _model.model_rebuild()


def _error_response(spec: ApiSpec, code: object) -> RpcMessage:
    return CreatePartitionsResponse()


SPEC = ApiSpec(
    name="CreatePartitions",
    api_key=37,
    min_version=0,
    max_version=3,
    request_model=CreatePartitionsRequest,
    response_model=CreatePartitionsResponse,
    error_response_factory=_error_response,  # type: ignore[arg-type]
    flexible_versions="2+",
)
