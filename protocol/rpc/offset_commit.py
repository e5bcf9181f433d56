"""OffsetCommit (apiKey 8, v2-9): a consumer group commits its consumed offsets, per partition.

v2 is the oldest version served (v1's per-partition commit timestamp is not), and v10's topic ids
are not served either. Errors travel per partition; the response has no top-level error.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from protocol.errors import Errors
from protocol.rpc.message import RpcMessage, versions
from protocol.rpc.spec import ApiSpec
from protocol.rpc.types import Int16, Int32, Int64


class OffsetCommitRequest(RpcMessage):
    class OffsetCommitRequestPartition(RpcMessage):
        PartitionIndex: Int32 = 0
        CommittedOffset: Int64 = 0
        CommittedLeaderEpoch: Annotated[Int32, versions("6+", ignorable=True)] = -1
        CommittedMetadata: Annotated[str | None, versions("0+", nullable="0+")] = ""

    class OffsetCommitRequestTopic(RpcMessage):
        Name: Annotated[str, versions("0-9", ignorable=True)] = ""
        Partitions: list[OffsetCommitRequest.OffsetCommitRequestPartition] = Field(default_factory=list)

    GroupId: str = ""
    GenerationIdOrMemberEpoch: Annotated[Int32, versions("1+", ignorable=True)] = -1
    MemberId: Annotated[str, versions("1+", ignorable=True)] = ""
    GroupInstanceId: Annotated[str | None, versions("7+", nullable="7+")] = None
    RetentionTimeMs: Annotated[Int64, versions("2-4", ignorable=True)] = -1
    Topics: list[OffsetCommitRequestTopic] = Field(default_factory=list)


class OffsetCommitResponse(RpcMessage):
    class OffsetCommitResponsePartition(RpcMessage):
        PartitionIndex: Int32 = 0
        ErrorCode: Int16 = 0

    class OffsetCommitResponseTopic(RpcMessage):
        Name: Annotated[str, versions("0-9", ignorable=True)] = ""
        Partitions: list[OffsetCommitResponse.OffsetCommitResponsePartition] = Field(default_factory=list)

    ThrottleTimeMs: Annotated[Int32, versions("3+", ignorable=True)] = 0
    Topics: list[OffsetCommitResponseTopic] = Field(default_factory=list)


for _model in (
    OffsetCommitRequest.OffsetCommitRequestTopic,
    OffsetCommitRequest,
    OffsetCommitResponse.OffsetCommitResponseTopic,
    OffsetCommitResponse,
):
    _model.model_rebuild()


def _error_response(spec: ApiSpec, code: Errors) -> RpcMessage:
    # No top-level ErrorCode in this response; without the request there are no partitions to name.
    return OffsetCommitResponse()


SPEC = ApiSpec(
    name="OffsetCommit",
    api_key=8,
    min_version=2,
    max_version=9,
    request_model=OffsetCommitRequest,
    response_model=OffsetCommitResponse,
    error_response_factory=_error_response,
    flexible_versions="8+",
)
