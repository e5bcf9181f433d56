"""Fetch (apiKey 1, v12-17) as a broker serves it: Kafka's multi-partition fetch, for followers and consumers.

The controller listener's Raft-shaped `Fetch` (protocol/rpc/fetch.py) owns the name "Fetch" in the
process-wide registry, so this module defines no `SPEC`: a broker builds its app with
`broker_api_specs()`, where "Fetch" is this spec, and its clients call brokers with the same
spec set (`RpcClient(url, specs=broker_api_specs())`). On the wire both are `POST /rpc/Fetch`
with api key 1, as both are in Kafka; which one answers depends on the listener, as in Kafka.

v12 is the first version with LastFetchedEpoch and DivergingEpoch (truncation on fetch, KIP-595's
scheme used by brokers since 2.7): followers fetch at v12+. Consumers may use v4 (Kafka 4's
baseline, the first with record batch v2 semantics) and up. Topics are named by Topic up to
v12 and by TopicId from v13. Fetch sessions are not kept: SessionId is always 0 (a full fetch).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated

from pydantic import Field

from protocol.errors import Errors
from protocol.rpc._bytes_field import Bytes, BytesWireMixin
from protocol.rpc.current_leader import LeaderIdAndEpoch
from protocol.rpc.message import RpcMessage, versions
from protocol.rpc.spec import ApiSpec
from protocol.rpc.types import Int8, Int16, Int32, Int64, Uuid
from protocol.uuid import Uuid as _Uuid

MAX_BYTES_DEFAULT = 0x7FFFFFFF
CONSUMER_REPLICA_ID = -1


class EpochEndOffset(RpcMessage):
    Epoch: Int32 = -1
    EndOffset: Int64 = -1


class SnapshotIdData(RpcMessage):
    EndOffset: Int64 = -1
    Epoch: Int32 = -1


class ReplicaStateData(RpcMessage):
    ReplicaId: Int32 = -1
    ReplicaEpoch: Int64 = -1


class FetchRequest(RpcMessage):
    class FetchPartition(RpcMessage):
        Partition: Int32 = 0
        CurrentLeaderEpoch: Annotated[Int32, versions("9+", ignorable=True)] = -1
        FetchOffset: Int64 = 0
        LastFetchedEpoch: Annotated[Int32, versions("12+", ignorable=False)] = -1
        LogStartOffset: Annotated[Int64, versions("5+", ignorable=True)] = -1
        PartitionMaxBytes: Int32 = 1024 * 1024
        ReplicaDirectoryId: Annotated[Uuid, versions("17+", tagged="17+", tag=0, ignorable=True)] = _Uuid.ZERO

    class FetchTopic(RpcMessage):
        Topic: Annotated[str, versions("0-12", ignorable=True)] = ""
        TopicId: Annotated[Uuid, versions("13+", ignorable=True)] = _Uuid.ZERO
        Partitions: list[FetchRequest.FetchPartition] = Field(default_factory=list)

    class ForgottenTopic(RpcMessage):
        Topic: Annotated[str, versions("0-12", ignorable=True)] = ""
        TopicId: Annotated[Uuid, versions("13+", ignorable=True)] = _Uuid.ZERO
        Partitions: list[Int32] = Field(default_factory=list)

    ClusterId: Annotated[str | None, versions("12+", nullable="12+", tagged="12+", tag=0)] = None
    ReplicaId: Annotated[Int32, versions("0-14")] = CONSUMER_REPLICA_ID
    ReplicaState: Annotated[ReplicaStateData | None, versions("15+", nullable="15+", tagged="15+", tag=1)] = (
        None
    )
    MaxWaitMs: Int32 = 500
    MinBytes: Int32 = 1
    MaxBytes: Int32 = MAX_BYTES_DEFAULT
    IsolationLevel: Int8 = 0
    SessionId: Annotated[Int32, versions("7+", ignorable=True)] = 0
    SessionEpoch: Annotated[Int32, versions("7+", ignorable=True)] = -1
    Topics: list[FetchTopic] = Field(default_factory=list)
    ForgottenTopicsData: Annotated[list[ForgottenTopic], versions("7+")] = Field(default_factory=list)
    RackId: Annotated[str, versions("11+", ignorable=True)] = ""

    def replica_id(self, version: int) -> int:
        """The fetching replica (-1 for a consumer), wherever this version carries it."""
        if version >= 15:
            return self.ReplicaState.ReplicaId if self.ReplicaState is not None else CONSUMER_REPLICA_ID
        return self.ReplicaId

    def replica_epoch(self, version: int) -> int:
        if version >= 15 and self.ReplicaState is not None:
            return self.ReplicaState.ReplicaEpoch
        return -1


class FetchResponse(RpcMessage):
    class AbortedTransaction(RpcMessage):
        ProducerId: Int64 = 0
        FirstOffset: Int64 = 0

    class PartitionData(BytesWireMixin):
        # Kafka's tagged structs default to {-1, -1}; here "absent" is None, so a reader tests `is None`.
        PartitionIndex: Int32 = 0
        ErrorCode: Int16 = 0
        HighWatermark: Int64 = -1
        LastStableOffset: Annotated[Int64, versions("4+", ignorable=True)] = -1
        LogStartOffset: Annotated[Int64, versions("5+", ignorable=True)] = -1
        DivergingEpoch: Annotated[
            EpochEndOffset | None, versions("12+", nullable="12+", tagged="12+", tag=0)
        ] = None
        CurrentLeader: Annotated[
            LeaderIdAndEpoch | None, versions("12+", nullable="12+", tagged="12+", tag=1)
        ] = None
        SnapshotId: Annotated[SnapshotIdData | None, versions("12+", nullable="12+", tagged="12+", tag=2)] = (
            None
        )
        AbortedTransactions: Annotated[
            list[FetchResponse.AbortedTransaction] | None, versions("4+", nullable="4+")
        ] = None
        PreferredReadReplica: Annotated[Int32, versions("11+")] = -1
        Records: Annotated[Bytes | None, versions("0+", nullable="0+")] = None

    class FetchableTopicResponse(RpcMessage):
        Topic: Annotated[str, versions("0-12", ignorable=True)] = ""
        TopicId: Annotated[Uuid, versions("13+", ignorable=True)] = _Uuid.ZERO
        Partitions: list[FetchResponse.PartitionData] = Field(default_factory=list)

    class NodeEndpoint(RpcMessage):
        NodeId: Int32 = 0
        Host: str = ""
        Port: Int32 = 0
        Rack: Annotated[str | None, versions("16+", nullable="16+")] = None

    ThrottleTimeMs: Int32 = 0
    ErrorCode: Annotated[Int16, versions("7+", ignorable=True)] = 0
    SessionId: Annotated[Int32, versions("7+")] = 0
    Responses: list[FetchableTopicResponse] = Field(default_factory=list)
    NodeEndpoints: Annotated[list[NodeEndpoint], versions("16+", tagged="16+", tag=0, ignorable=True)] = (
        Field(default_factory=list)
    )


for _model in (
    FetchRequest.FetchTopic,
    FetchRequest,
    FetchResponse.PartitionData,
    FetchResponse.FetchableTopicResponse,
    FetchResponse,
):
    _model.model_rebuild()


def _error_response(spec: ApiSpec, code: Errors) -> RpcMessage:
    return FetchResponse(ErrorCode=int(code))


FETCH_SPEC = ApiSpec(
    name="Fetch",
    api_key=1,
    min_version=4,
    max_version=17,
    request_model=FetchRequest,
    response_model=FetchResponse,
    error_response_factory=_error_response,
    flexible_versions="12+",
)


def broker_api_specs(base: Mapping[str, ApiSpec] | None = None) -> dict[str, ApiSpec]:
    """The APIs a broker listener speaks: the registry, with "Fetch" being this multi-partition fetch."""
    from protocol.rpc import API_SPECS

    specs = dict(API_SPECS if base is None else base)
    specs["Fetch"] = FETCH_SPEC
    return specs
