"""DeleteTopics (apiKey 20, v0-6): by name (TopicNames, v0-5) or by name or id (Topics, v6+)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from protocol.errors import Errors
from protocol.rpc.message import RpcMessage, versions
from protocol.rpc.spec import ApiSpec
from protocol.rpc.types import Int16, Int32, Uuid
from protocol.uuid import Uuid as _Uuid


class DeleteTopicsRequest(RpcMessage):
    class DeleteTopicState(RpcMessage):
        Name: Annotated[str | None, versions("6+", nullable="6+")] = None
        TopicId: Annotated[Uuid, versions("6+")] = _Uuid.ZERO

    Topics: Annotated[list[DeleteTopicState], versions("6+")] = Field(default_factory=list)
    TopicNames: Annotated[list[str], versions("0-5", ignorable=True)] = Field(default_factory=list)
    TimeoutMs: Int32 = 60000


class DeleteTopicsResponse(RpcMessage):
    class DeletableTopicResult(RpcMessage):
        Name: Annotated[str | None, versions("0+", nullable="6+")] = ""
        TopicId: Annotated[Uuid, versions("6+", ignorable=True)] = _Uuid.ZERO
        ErrorCode: Int16 = 0
        ErrorMessage: Annotated[str | None, versions("5+", nullable="5+", ignorable=True)] = None

    ThrottleTimeMs: Annotated[Int32, versions("1+")] = 0
    Responses: list[DeletableTopicResult] = Field(default_factory=list)


def _error_response(spec: ApiSpec, code: Errors) -> RpcMessage:
    return DeleteTopicsResponse()


SPEC = ApiSpec(
    name="DeleteTopics",
    api_key=20,
    min_version=0,
    max_version=6,
    request_model=DeleteTopicsRequest,
    response_model=DeleteTopicsResponse,
    error_response_factory=_error_response,
    flexible_versions="4+",
)
