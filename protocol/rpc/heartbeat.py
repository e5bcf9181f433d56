"""Heartbeat (apiKey 12, v0-4): a classic group member tells its coordinator it is alive.

The answer's error says whether the member should rejoin (REBALANCE_IN_PROGRESS) or has been
dropped from the group (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION).
"""

from __future__ import annotations

from typing import Annotated

from protocol.rpc.message import RpcMessage, versions
from protocol.rpc.spec import ApiSpec
from protocol.rpc.types import Int16, Int32


class HeartbeatRequest(RpcMessage):
    GroupId: str = ""
    GenerationId: Int32 = 0
    MemberId: str = ""
    GroupInstanceId: Annotated[str | None, versions("3+", nullable="3+")] = None


class HeartbeatResponse(RpcMessage):
    ThrottleTimeMs: Annotated[Int32, versions("1+", ignorable=True)] = 0
    ErrorCode: Int16 = 0


SPEC = ApiSpec(
    name="Heartbeat",
    api_key=12,
    min_version=0,
    max_version=4,
    request_model=HeartbeatRequest,
    response_model=HeartbeatResponse,
    flexible_versions="4+",
)
