"""JoinGroup (apiKey 11, v0-9): a member joins a classic consumer group, or rejoins it in a rebalance.

The coordinator answers once the generation is formed: every member learns the generation id, the
chosen protocol and the leader; the leader also gets every member's metadata, to compute the assignment.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from protocol.rpc._bytes_field import Bytes, BytesWireMixin
from protocol.rpc.message import RpcMessage, versions
from protocol.rpc.spec import ApiSpec
from protocol.rpc.types import Int16, Int32


class JoinGroupRequest(RpcMessage):
    class JoinGroupRequestProtocol(BytesWireMixin):
        Name: str = ""
        Metadata: Bytes = b""

    GroupId: str = ""
    SessionTimeoutMs: Int32 = 0
    RebalanceTimeoutMs: Annotated[Int32, versions("1+", ignorable=True)] = -1
    MemberId: str = ""
    GroupInstanceId: Annotated[str | None, versions("5+", nullable="5+")] = None
    ProtocolType: str = ""
    Protocols: list[JoinGroupRequestProtocol] = Field(default_factory=list)
    Reason: Annotated[str | None, versions("8+", nullable="8+", ignorable=True)] = None


class JoinGroupResponse(RpcMessage):
    class JoinGroupResponseMember(BytesWireMixin):
        MemberId: str = ""
        GroupInstanceId: Annotated[str | None, versions("5+", nullable="5+", ignorable=True)] = None
        Metadata: Bytes = b""

    ThrottleTimeMs: Annotated[Int32, versions("2+", ignorable=True)] = 0
    ErrorCode: Int16 = 0
    GenerationId: Int32 = -1
    ProtocolType: Annotated[str | None, versions("7+", nullable="7+", ignorable=True)] = None
    ProtocolName: Annotated[str | None, versions("0+", nullable="7+")] = ""
    Leader: str = ""
    SkipAssignment: Annotated[bool, versions("9+")] = False
    MemberId: str = ""
    Members: list[JoinGroupResponseMember] = Field(default_factory=list)


SPEC = ApiSpec(
    name="JoinGroup",
    api_key=11,
    min_version=0,
    max_version=9,
    request_model=JoinGroupRequest,
    response_model=JoinGroupResponse,
    flexible_versions="6+",
)
