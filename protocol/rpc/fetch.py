"""Fetch (apiKey 1) as the controller listener serves it: KRaft's pull of the `__cluster_metadata` log.

Raft-shaped and flattened to the one partition there is (reference 9): the follower or observer
says where its log ends (FetchOffset, LastFetchedEpoch) and which leader epoch it believes in; the
reply carries committed record batches exactly as they sit on disk, the high watermark, and instead
of records either DivergingEpoch (truncate, then fetch again) or SnapshotId (fetch that snapshot
with FetchSnapshot). Field names are those of Kafka's FetchRequest/FetchResponse v17.
"""

from __future__ import annotations

from typing import Annotated

from protocol.rpc._bytes_field import Bytes, BytesWireMixin
from protocol.rpc.current_leader import LeaderIdAndEpoch
from protocol.rpc.message import RpcMessage, versions
from protocol.rpc.spec import ApiSpec
from protocol.rpc.types import Int16, Int32, Int64

MAX_BYTES_DEFAULT = 0x7FFFFFFF


class EpochEndOffset(RpcMessage):
    Epoch: Int32 = -1
    EndOffset: Int64 = -1


class SnapshotIdData(RpcMessage):
    """Kafka's SnapshotId struct (EndOffset exclusive, Epoch of the last record in the snapshot)."""

    EndOffset: Int64 = -1
    Epoch: Int32 = -1


class FetchRequest(RpcMessage):
    ClusterId: Annotated[str | None, versions("0+", nullable="0+", tagged="0+", tag=0)] = None
    ReplicaId: Int32 = -1
    MaxWaitMs: Int32 = 0
    MaxBytes: Int32 = MAX_BYTES_DEFAULT
    CurrentLeaderEpoch: Int32 = -1
    FetchOffset: Int64 = 0
    LastFetchedEpoch: Int32 = -1


class FetchResponse(BytesWireMixin):
    # Kafka's tagged structs default to {-1, -1}; here "absent" is None, so a reader tests `is None`.
    ThrottleTimeMs: Int32 = 0
    ErrorCode: Int16 = 0
    HighWatermark: Int64 = -1
    LogStartOffset: Int64 = -1
    DivergingEpoch: Annotated[EpochEndOffset | None, versions("0+", nullable="0+", tagged="0+", tag=0)] = None
    CurrentLeader: Annotated[LeaderIdAndEpoch | None, versions("0+", nullable="0+", tagged="0+", tag=1)] = (
        None
    )
    SnapshotId: Annotated[SnapshotIdData | None, versions("0+", nullable="0+", tagged="0+", tag=2)] = None
    Records: Bytes = b""


SPEC = ApiSpec(
    name="Fetch",
    api_key=1,
    min_version=0,
    max_version=0,
    request_model=FetchRequest,
    response_model=FetchResponse,
)
