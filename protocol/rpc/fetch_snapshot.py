"""FetchSnapshot (apiKey 59) flattened to the `__cluster_metadata` partition: a snapshot in chunks.

A follower told to load SnapshotId by Fetch reads the snapshot file from Position on, at most
MaxBytes per call; UnalignedRecords is the raw file slice (it may cut a batch), Size the file size.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from protocol.rpc._bytes_field import Bytes, BytesWireMixin
from protocol.rpc.current_leader import LeaderIdAndEpoch
from protocol.rpc.fetch import SnapshotIdData
from protocol.rpc.message import RpcMessage, versions
from protocol.rpc.spec import ApiSpec
from protocol.rpc.types import Int16, Int32, Int64


class FetchSnapshotRequest(RpcMessage):
    ClusterId: Annotated[str | None, versions("0+", nullable="0+", tagged="0+", tag=0)] = None
    ReplicaId: Int32 = -1
    MaxBytes: Int32 = 0x7FFFFFFF
    CurrentLeaderEpoch: Int32 = -1
    SnapshotId: SnapshotIdData = Field(default_factory=SnapshotIdData)
    Position: Int64 = 0


class FetchSnapshotResponse(BytesWireMixin):
    ThrottleTimeMs: Int32 = 0
    ErrorCode: Int16 = 0
    SnapshotId: SnapshotIdData = Field(default_factory=SnapshotIdData)
    CurrentLeader: Annotated[LeaderIdAndEpoch | None, versions("0+", nullable="0+", tagged="0+", tag=0)] = (
        None
    )
    Size: Int64 = 0
    Position: Int64 = 0
    UnalignedRecords: Bytes = b""


SPEC = ApiSpec(
    name="FetchSnapshot",
    api_key=59,
    min_version=0,
    max_version=0,
    request_model=FetchSnapshotRequest,
    response_model=FetchSnapshotResponse,
)
