"""Vote (apiKey 52) flattened to the `__cluster_metadata` partition, as Fetch is (see fetch.py).

A candidate asks a voter for its vote in CandidateEpoch; the voter grants it at most once per epoch
and only to a candidate whose log (LastOffsetEpoch, LastOffset) is at least as up to date as its own.
Field names are those of Kafka's VoteRequest/VoteResponse v0.
"""

from __future__ import annotations

from typing import Annotated

from protocol.rpc.message import RpcMessage, versions
from protocol.rpc.spec import ApiSpec
from protocol.rpc.types import Int16, Int32, Int64


class VoteRequest(RpcMessage):
    ClusterId: Annotated[str | None, versions("0+", nullable="0+")] = None
    CandidateEpoch: Int32 = -1
    CandidateId: Int32 = -1
    LastOffsetEpoch: Int32 = -1
    LastOffset: Int64 = -1


class VoteResponse(RpcMessage):
    ErrorCode: Int16 = 0
    LeaderId: Int32 = -1
    LeaderEpoch: Int32 = -1
    VoteGranted: bool = False


SPEC = ApiSpec(
    name="Vote",
    api_key=52,
    min_version=0,
    max_version=0,
    request_model=VoteRequest,
    response_model=VoteResponse,
)
