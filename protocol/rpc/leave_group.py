"""LeaveGroup (apiKey 13, v0-5): members leave a classic consumer group, starting a rebalance.

Up to v2 one member leaves by its member id; from v3 a request names a batch of members (by member
id or group instance id) and the answer has an error per member.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from protocol.rpc.message import RpcMessage, versions
from protocol.rpc.spec import ApiSpec
from protocol.rpc.types import Int16, Int32


class LeaveGroupRequest(RpcMessage):
    class MemberIdentity(RpcMessage):
        MemberId: Annotated[str, versions("3+")] = ""
        GroupInstanceId: Annotated[str | None, versions("3+", nullable="3+")] = None
        Reason: Annotated[str | None, versions("5+", nullable="5+", ignorable=True)] = None

    GroupId: str = ""
    MemberId: Annotated[str, versions("0-2")] = ""
    Members: Annotated[list[MemberIdentity], versions("3+")] = Field(default_factory=list)


class LeaveGroupResponse(RpcMessage):
    class MemberResponse(RpcMessage):
        MemberId: Annotated[str, versions("3+")] = ""
        GroupInstanceId: Annotated[str | None, versions("3+", nullable="3+")] = ""
        ErrorCode: Annotated[Int16, versions("3+")] = 0

    ThrottleTimeMs: Annotated[Int32, versions("1+", ignorable=True)] = 0
    ErrorCode: Int16 = 0
    Members: Annotated[list[MemberResponse], versions("3+")] = Field(default_factory=list)


SPEC = ApiSpec(
    name="LeaveGroup",
    api_key=13,
    min_version=0,
    max_version=5,
    request_model=LeaveGroupRequest,
    response_model=LeaveGroupResponse,
    flexible_versions="4+",
)
