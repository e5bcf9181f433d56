"""FindCoordinator (apiKey 10, v0-4): which broker coordinates a consumer group or a transactional id.

Up to v3 a request names one key and the answer one coordinator; from v4 a request names a batch of
keys (all of one KeyType) and the answer holds one Coordinator, with its own error, per key.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from protocol.rpc.message import RpcMessage, versions
from protocol.rpc.spec import ApiSpec
from protocol.rpc.types import Int8, Int16, Int32

KEY_TYPE_GROUP = 0
KEY_TYPE_TRANSACTION = 1
KEY_TYPE_SHARE = 2


class FindCoordinatorRequest(RpcMessage):
    Key: Annotated[str, versions("0-3")] = ""
    KeyType: Annotated[Int8, versions("1+")] = KEY_TYPE_GROUP
    CoordinatorKeys: Annotated[list[str], versions("4+")] = Field(default_factory=list)


class FindCoordinatorResponse(RpcMessage):
    class Coordinator(RpcMessage):
        Key: Annotated[str, versions("4+")] = ""
        NodeId: Annotated[Int32, versions("4+")] = 0
        Host: Annotated[str, versions("4+")] = ""
        Port: Annotated[Int32, versions("4+")] = 0
        ErrorCode: Annotated[Int16, versions("4+")] = 0
        ErrorMessage: Annotated[str | None, versions("4+", nullable="4+", ignorable=True)] = ""

    ThrottleTimeMs: Annotated[Int32, versions("1+", ignorable=True)] = 0
    ErrorCode: Annotated[Int16, versions("0-3")] = 0
    ErrorMessage: Annotated[str | None, versions("1-3", nullable="1-3", ignorable=True)] = ""
    NodeId: Annotated[Int32, versions("0-3")] = 0
    Host: Annotated[str, versions("0-3")] = ""
    Port: Annotated[Int32, versions("0-3")] = 0
    Coordinators: Annotated[list[Coordinator], versions("4+")] = Field(default_factory=list)


SPEC = ApiSpec(
    name="FindCoordinator",
    api_key=10,
    min_version=0,
    max_version=4,
    request_model=FindCoordinatorRequest,
    response_model=FindCoordinatorResponse,
    flexible_versions="3+",
)
