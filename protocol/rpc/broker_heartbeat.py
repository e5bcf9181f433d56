"""BrokerHeartbeat (apiKey 63, v0-1): liveness, fencing wishes, and (v1+) the broker's offline log dirs."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from protocol.rpc.message import RpcMessage, versions
from protocol.rpc.spec import ApiSpec
from protocol.rpc.types import MAX_LOG_DIRS, Int16, Int32, Int64, NodeId, Uuid


class BrokerHeartbeatRequest(RpcMessage):
    BrokerId: NodeId = 0
    BrokerEpoch: Int64 = -1
    CurrentMetadataOffset: Int64 = 0
    WantFence: bool = False
    WantShutDown: bool = False
    # Tagged (tag 0) and not ignorable: a v0 request cannot report failed directories.
    # A broker has a handful of log dirs; a list longer than any broker could have is refused at the
    # edge instead of being hashed and logged by the controller.
    OfflineLogDirs: Annotated[
        list[Uuid], versions("1+", tagged="1+", tag=0), Field(max_length=MAX_LOG_DIRS)
    ] = Field(default_factory=list)


class BrokerHeartbeatResponse(RpcMessage):
    ThrottleTimeMs: Int32 = 0
    ErrorCode: Int16 = 0
    IsCaughtUp: bool = False
    IsFenced: bool = True
    ShouldShutDown: bool = False


SPEC = ApiSpec(
    name="BrokerHeartbeat",
    api_key=63,
    min_version=0,
    max_version=1,
    request_model=BrokerHeartbeatRequest,
    response_model=BrokerHeartbeatResponse,
)
