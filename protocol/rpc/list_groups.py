"""ListGroups (apiKey 16, v0-5): the consumer groups a coordinator holds, optionally filtered by
state (v4+) and type (v5+)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from protocol.rpc.message import RpcMessage, versions
from protocol.rpc.spec import ApiSpec
from protocol.rpc.types import Int16, Int32


class ListGroupsRequest(RpcMessage):
    StatesFilter: Annotated[list[str], versions("4+")] = Field(default_factory=list)
    TypesFilter: Annotated[list[str], versions("5+")] = Field(default_factory=list)


class ListGroupsResponse(RpcMessage):
    class ListedGroup(RpcMessage):
        GroupId: str = ""
        ProtocolType: str = ""
        GroupState: Annotated[str, versions("4+", ignorable=True)] = ""
        GroupType: Annotated[str, versions("5+", ignorable=True)] = ""

    ThrottleTimeMs: Annotated[Int32, versions("1+", ignorable=True)] = 0
    ErrorCode: Int16 = 0
    Groups: list[ListedGroup] = Field(default_factory=list)


SPEC = ApiSpec(
    name="ListGroups",
    api_key=16,
    min_version=0,
    max_version=5,
    request_model=ListGroupsRequest,
    response_model=ListGroupsResponse,
    flexible_versions="3+",
)
