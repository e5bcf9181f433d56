"""DescribeQuorum (apiKey 55) flattened to the `__cluster_metadata` partition, as Fetch is.

What `kafka-metadata-quorum.sh describe` shows: the leader, its epoch and high watermark, and per
voter and observer how far its log reaches and when it last fetched and was last caught up. Only the
leader knows the replicas' progress; another controller answers NOT_LEADER_OR_FOLLOWER with the
leader it knows. Field names are those of Kafka's DescribeQuorumRequest/Response (v1 adds the two
timestamps; -1 means unknown).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from protocol.rpc.message import RpcMessage, versions
from protocol.rpc.spec import ApiSpec
from protocol.rpc.types import Int16, Int32, Int64


class DescribeQuorumRequest(RpcMessage):
    pass


class ReplicaState(RpcMessage):
    ReplicaId: Int32 = -1
    LogEndOffset: Int64 = -1
    LastFetchTimestamp: Annotated[Int64, versions("1+", ignorable=True)] = -1
    LastCaughtUpTimestamp: Annotated[Int64, versions("1+", ignorable=True)] = -1


class DescribeQuorumResponse(RpcMessage):
    ErrorCode: Int16 = 0
    LeaderId: Int32 = -1
    LeaderEpoch: Int32 = -1
    HighWatermark: Int64 = -1
    CurrentVoters: list[ReplicaState] = Field(default_factory=list)
    Observers: list[ReplicaState] = Field(default_factory=list)


SPEC = ApiSpec(
    name="DescribeQuorum",
    api_key=55,
    min_version=0,
    max_version=1,
    request_model=DescribeQuorumRequest,
    response_model=DescribeQuorumResponse,
)
