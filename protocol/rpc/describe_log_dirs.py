"""DescribeLogDirs (apiKey 35, v1-4): each configured log dir of a broker, its state, space and partitions.

One field is kraftpy's own: each result's `DirectoryId` (the dir's directory.id from meta.properties,
KIP-858's future work), a tagged field from the first flexible version (2) so a reader that does
not know it is not disturbed (docs/kip-deviations.md).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from protocol.rpc.message import RpcMessage, versions
from protocol.rpc.spec import ApiSpec
from protocol.rpc.types import Int16, Int32, Int64, Uuid
from protocol.uuid import Uuid as _Uuid

DIRECTORY_ID_TAG = 10000


class DescribeLogDirsRequest(RpcMessage):
    class DescribableLogDirTopic(RpcMessage):
        Topic: str = ""
        Partitions: list[Int32] = Field(default_factory=list)

    # Null asks for every topic.
    Topics: Annotated[list[DescribableLogDirTopic] | None, versions("0+", nullable="0+")] = None


class DescribeLogDirsResponse(RpcMessage):
    class DescribeLogDirsPartition(RpcMessage):
        PartitionIndex: Int32 = 0
        PartitionSize: Int64 = 0
        OffsetLag: Int64 = 0
        IsFutureKey: bool = False

    class DescribeLogDirsTopic(RpcMessage):
        Name: str = ""
        Partitions: list[DescribeLogDirsResponse.DescribeLogDirsPartition] = Field(default_factory=list)

    class DescribeLogDirsResult(RpcMessage):
        ErrorCode: Int16 = 0
        LogDir: str = ""
        Topics: list[DescribeLogDirsResponse.DescribeLogDirsTopic] = Field(default_factory=list)
        TotalBytes: Annotated[Int64, versions("4+", ignorable=True)] = -1
        UsableBytes: Annotated[Int64, versions("4+", ignorable=True)] = -1
        DirectoryId: Annotated[Uuid, versions("2+", ignorable=True, tagged="2+", tag=DIRECTORY_ID_TAG)] = (
            _Uuid.ZERO
        )

    ThrottleTimeMs: Int32 = 0
    ErrorCode: Annotated[Int16, versions("3+", ignorable=True)] = 0
    Results: list[DescribeLogDirsResult] = Field(default_factory=list)


for _model in (
    DescribeLogDirsRequest,
    DescribeLogDirsResponse.DescribeLogDirsTopic,
    DescribeLogDirsResponse.DescribeLogDirsResult,
    DescribeLogDirsResponse,
):
    _model.model_rebuild()

SPEC = ApiSpec(
    name="DescribeLogDirs",
    api_key=35,
    min_version=1,
    max_version=4,
    request_model=DescribeLogDirsRequest,
    response_model=DescribeLogDirsResponse,
    flexible_versions="2+",
)
