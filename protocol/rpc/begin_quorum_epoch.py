"""BeginQuorumEpoch (apiKey 53) flattened to the `__cluster_metadata` partition, as Fetch is.

A newly elected leader tells every voter (LeaderId, LeaderEpoch) so they follow it at once.
Field names are those of Kafka's BeginQuorumEpochRequest/Response v0.
"""

from __future__ import annotations

from typing import Annotated

from protocol.rpc.message import RpcMessage, versions
from protocol.rpc.spec import ApiSpec
from protocol.rpc.types import Int16, Int32


class BeginQuorumEpochRequest(RpcMessage):
    ClusterId: Annotated[str | None, versions("0+", nullable="0+")] = None
    LeaderId: Int32 = -1
    LeaderEpoch: Int32 = -1


class BeginQuorumEpochResponse(RpcMessage):
    ErrorCode: Int16 = 0
    LeaderId: Int32 = -1
    LeaderEpoch: Int32 = -1


SPEC = ApiSpec(
    name="BeginQuorumEpoch",
    api_key=53,
    min_version=0,
    max_version=0,
    request_model=BeginQuorumEpochRequest,
    response_model=BeginQuorumEpochResponse,
)
