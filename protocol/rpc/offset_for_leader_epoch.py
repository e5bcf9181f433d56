"""OffsetForLeaderEpoch (apiKey 23, v2-4): where a leader epoch ends in the leader's log.

Consumers ask it after a leader change (KIP-320) to learn whether the log they read was truncated
under them: the answer is the largest epoch up to the one asked that the leader knows, and the
offset where it ends (the log end offset for the leader's current epoch). Kafka 4 serves v2 and up.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from protocol.rpc.message import RpcMessage, versions
from protocol.rpc.spec import ApiSpec
from protocol.rpc.types import Int16, Int32, Int64

CONSUMER_REPLICA_ID = -1
DEBUGGING_REPLICA_ID = -2


class OffsetForLeaderEpochRequest(RpcMessage):
    class OffsetForLeaderPartition(RpcMessage):
        Partition: Int32 = 0
        CurrentLeaderEpoch: Annotated[Int32, versions("2+", ignorable=True)] = -1
        LeaderEpoch: Int32 = 0

    class OffsetForLeaderTopic(RpcMessage):
        Topic: str = ""
        Partitions: list[OffsetForLeaderEpochRequest.OffsetForLeaderPartition] = Field(default_factory=list)

    ReplicaId: Annotated[Int32, versions("3+", ignorable=True)] = DEBUGGING_REPLICA_ID
    Topics: list[OffsetForLeaderTopic] = Field(default_factory=list)


class OffsetForLeaderEpochResponse(RpcMessage):
    class EpochEndOffset(RpcMessage):
        ErrorCode: Int16 = 0
        Partition: Int32 = 0
        LeaderEpoch: Annotated[Int32, versions("1+", ignorable=True)] = -1
        EndOffset: Int64 = -1

    class OffsetForLeaderTopicResult(RpcMessage):
        Topic: str = ""
        Partitions: list[OffsetForLeaderEpochResponse.EpochEndOffset] = Field(default_factory=list)

    ThrottleTimeMs: Annotated[Int32, versions("2+", ignorable=True)] = 0
    Topics: list[OffsetForLeaderTopicResult] = Field(default_factory=list)


for _model in (
    OffsetForLeaderEpochRequest.OffsetForLeaderTopic,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse.OffsetForLeaderTopicResult,
    OffsetForLeaderEpochResponse,
):
    _model.model_rebuild()


def _error_response(spec: ApiSpec, code: object) -> RpcMessage:
    return OffsetForLeaderEpochResponse()


SPEC = ApiSpec(
    name="OffsetForLeaderEpoch",
    api_key=23,
    min_version=2,
    max_version=4,
    request_model=OffsetForLeaderEpochRequest,
    response_model=OffsetForLeaderEpochResponse,
    error_response_factory=_error_response,  # type: ignore[arg-type]
    flexible_versions="4+",
)
