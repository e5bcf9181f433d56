"""OffsetFetch (apiKey 9, v1-9): the offsets a consumer group has committed, per partition.

Up to v7 a request names one group (and its topics, or null for all of them); from v8 it names a
batch of groups, each answered with its own error. v10's topic ids are not served.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from protocol.errors import Errors
from protocol.rpc.message import RpcMessage, versions
from protocol.rpc.spec import ApiSpec
from protocol.rpc.types import Int16, Int32, Int64


class OffsetFetchRequest(RpcMessage):
    class OffsetFetchRequestTopic(RpcMessage):
        Name: Annotated[str, versions("0-7")] = ""
        PartitionIndexes: Annotated[list[Int32], versions("0-7")] = Field(default_factory=list)

    class OffsetFetchRequestTopics(RpcMessage):
        Name: Annotated[str, versions("8-9", ignorable=True)] = ""
        PartitionIndexes: Annotated[list[Int32], versions("8+")] = Field(default_factory=list)

    class OffsetFetchRequestGroup(RpcMessage):
        GroupId: Annotated[str, versions("8+")] = ""
        MemberId: Annotated[str | None, versions("9+", nullable="9+", ignorable=True)] = None
        MemberEpoch: Annotated[Int32, versions("9+", ignorable=True)] = -1
        Topics: Annotated[
            list[OffsetFetchRequest.OffsetFetchRequestTopics] | None, versions("8+", nullable="8+")
        ] = Field(default_factory=list)

    GroupId: Annotated[str, versions("0-7")] = ""
    Topics: Annotated[list[OffsetFetchRequestTopic] | None, versions("0-7", nullable="2-7")] = Field(
        default_factory=list
    )
    Groups: Annotated[list[OffsetFetchRequestGroup], versions("8+")] = Field(default_factory=list)
    RequireStable: Annotated[bool, versions("7+")] = False


class OffsetFetchResponse(RpcMessage):
    class OffsetFetchResponsePartition(RpcMessage):
        PartitionIndex: Annotated[Int32, versions("0-7")] = 0
        CommittedOffset: Annotated[Int64, versions("0-7")] = 0
        CommittedLeaderEpoch: Annotated[Int32, versions("5-7", ignorable=True)] = -1
        Metadata: Annotated[str | None, versions("0-7", nullable="0-7")] = ""
        ErrorCode: Annotated[Int16, versions("0-7")] = 0

    class OffsetFetchResponseTopic(RpcMessage):
        Name: Annotated[str, versions("0-7")] = ""
        Partitions: Annotated[list[OffsetFetchResponse.OffsetFetchResponsePartition], versions("0-7")] = (
            Field(default_factory=list)
        )

    class OffsetFetchResponsePartitions(RpcMessage):
        PartitionIndex: Annotated[Int32, versions("8+")] = 0
        CommittedOffset: Annotated[Int64, versions("8+")] = 0
        CommittedLeaderEpoch: Annotated[Int32, versions("8+", ignorable=True)] = -1
        Metadata: Annotated[str | None, versions("8+", nullable="8+")] = ""
        ErrorCode: Annotated[Int16, versions("8+")] = 0

    class OffsetFetchResponseTopics(RpcMessage):
        Name: Annotated[str, versions("8-9", ignorable=True)] = ""
        Partitions: Annotated[list[OffsetFetchResponse.OffsetFetchResponsePartitions], versions("8+")] = (
            Field(default_factory=list)
        )

    class OffsetFetchResponseGroup(RpcMessage):
        GroupId: Annotated[str, versions("8+")] = ""
        Topics: Annotated[list[OffsetFetchResponse.OffsetFetchResponseTopics], versions("8+")] = Field(
            default_factory=list
        )
        ErrorCode: Annotated[Int16, versions("8+")] = 0

    ThrottleTimeMs: Annotated[Int32, versions("3+", ignorable=True)] = 0
    Topics: Annotated[list[OffsetFetchResponseTopic], versions("0-7")] = Field(default_factory=list)
    ErrorCode: Annotated[Int16, versions("2-7", ignorable=True)] = 0
    Groups: Annotated[list[OffsetFetchResponseGroup], versions("8+")] = Field(default_factory=list)


for _model in (
    OffsetFetchRequest.OffsetFetchRequestGroup,
    OffsetFetchRequest,
    OffsetFetchResponse.OffsetFetchResponseTopic,
    OffsetFetchResponse.OffsetFetchResponseTopics,
    OffsetFetchResponse.OffsetFetchResponseGroup,
    OffsetFetchResponse,
):
    _model.model_rebuild()


def _error_response(spec: ApiSpec, code: Errors) -> RpcMessage:
    # The top-level ErrorCode exists in v2-7 only (ignorable, so dropped elsewhere); from v8 errors
    # are per group, and without the request there are no groups to name.
    return OffsetFetchResponse(ErrorCode=int(code))


SPEC = ApiSpec(
    name="OffsetFetch",
    api_key=9,
    min_version=1,
    max_version=9,
    request_model=OffsetFetchRequest,
    response_model=OffsetFetchResponse,
    error_response_factory=_error_response,
    flexible_versions="6+",
)
