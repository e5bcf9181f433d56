"""SyncGroup (apiKey 14, v0-5): the second step of a classic group rebalance.

The leader sends the assignment it computed for every member; each member (the leader included)
gets its own assignment back once the coordinator has the leader's.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from protocol.rpc._bytes_field import Bytes, BytesWireMixin
from protocol.rpc.message import RpcMessage, versions
from protocol.rpc.spec import ApiSpec
from protocol.rpc.types import Int16, Int32


class SyncGroupRequest(RpcMessage):
    class SyncGroupRequestAssignment(BytesWireMixin):
        MemberId: str = ""
        Assignment: Bytes = b""

    GroupId: str = ""
    GenerationId: Int32 = 0
    MemberId: str = ""
    GroupInstanceId: Annotated[str | None, versions("3+", nullable="3+")] = None
    ProtocolType: Annotated[str | None, versions("5+", nullable="5+", ignorable=True)] = None
    ProtocolName: Annotated[str | None, versions("5+", nullable="5+", ignorable=True)] = None
    Assignments: list[SyncGroupRequestAssignment] = Field(default_factory=list)


class SyncGroupResponse(BytesWireMixin):
    ThrottleTimeMs: Annotated[Int32, versions("1+", ignorable=True)] = 0
    ErrorCode: Int16 = 0
    ProtocolType: Annotated[str | None, versions("5+", nullable="5+", ignorable=True)] = None
    ProtocolName: Annotated[str | None, versions("5+", nullable="5+", ignorable=True)] = None
    Assignment: Bytes = b""


SPEC = ApiSpec(
    name="SyncGroup",
    api_key=14,
    min_version=0,
    max_version=5,
    request_model=SyncGroupRequest,
    response_model=SyncGroupResponse,
    flexible_versions="4+",
)
