"""ListOffsets (apiKey 2, v1-9): the offset for a timestamp, or the earliest (-2) / latest (-1) offset."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from protocol.errors import Errors
from protocol.rpc.message import RpcMessage, versions
from protocol.rpc.spec import ApiSpec
from protocol.rpc.types import Int8, Int16, Int32, Int64

LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3
CONSUMER_REPLICA_ID = -1


class ListOffsetsRequest(RpcMessage):
    class ListOffsetsPartition(RpcMessage):
        PartitionIndex: Int32 = 0
        CurrentLeaderEpoch: Annotated[Int32, versions("4+")] = -1
        Timestamp: Int64 = LATEST_TIMESTAMP

    class ListOffsetsTopic(RpcMessage):
        Name: str = ""
        Partitions: list[ListOffsetsRequest.ListOffsetsPartition] = Field(default_factory=list)

    ReplicaId: Int32 = CONSUMER_REPLICA_ID
    IsolationLevel: Annotated[Int8, versions("2+")] = 0
    Topics: list[ListOffsetsTopic] = Field(default_factory=list)


class ListOffsetsResponse(RpcMessage):
    class ListOffsetsPartitionResponse(RpcMessage):
        PartitionIndex: Int32 = 0
        ErrorCode: Int16 = 0
        Timestamp: Int64 = -1
        Offset: Int64 = -1
        LeaderEpoch: Annotated[Int32, versions("4+", ignorable=True)] = -1

    class ListOffsetsTopicResponse(RpcMessage):
        Name: str = ""
        Partitions: list[ListOffsetsResponse.ListOffsetsPartitionResponse] = Field(default_factory=list)

    ThrottleTimeMs: Annotated[Int32, versions("2+", ignorable=True)] = 0
    Topics: list[ListOffsetsTopicResponse] = Field(default_factory=list)


for _model in (
    ListOffsetsRequest.ListOffsetsTopic,
    ListOffsetsRequest,
    ListOffsetsResponse.ListOffsetsTopicResponse,
    ListOffsetsResponse,
):
    _model.model_rebuild()


def _error_response(spec: ApiSpec, code: Errors) -> RpcMessage:
    return ListOffsetsResponse()


SPEC = ApiSpec(
    name="ListOffsets",
    api_key=2,
    min_version=1,
    max_version=9,
    request_model=ListOffsetsRequest,
    response_model=ListOffsetsResponse,
    error_response_factory=_error_response,
    flexible_versions="6+",
)
