"""EndQuorumEpoch (apiKey 54) flattened to the `__cluster_metadata` partition, as Fetch is.

A leader that steps down gracefully names its PreferredSuccessors, most caught up first; each runs
for election after a wait that grows with its place in the list. Field names are Kafka's v0.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from protocol.rpc.message import RpcMessage, versions
from protocol.rpc.spec import ApiSpec
from protocol.rpc.types import Int16, Int32


class EndQuorumEpochRequest(RpcMessage):
    ClusterId: Annotated[str | None, versions("0+", nullable="0+")] = None
    LeaderId: Int32 = -1
    LeaderEpoch: Int32 = -1
    PreferredSuccessors: list[Int32] = Field(default_factory=list)


class EndQuorumEpochResponse(RpcMessage):
    ErrorCode: Int16 = 0
    LeaderId: Int32 = -1
    LeaderEpoch: Int32 = -1


SPEC = ApiSpec(
    name="EndQuorumEpoch",
    api_key=54,
    min_version=0,
    max_version=0,
    request_model=EndQuorumEpochRequest,
    response_model=EndQuorumEpochResponse,
)
