"""Produce (apiKey 0, v3-11): a producer's record batches, one whole batch v2 per partition.

v3 is the first version that carries TransactionalId and requires record batch v2; older versions
are not served. Partition errors travel per partition; the handler never fails the whole request,
so the transport's top-level error response (no partitions) only appears for a refused body.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from protocol.errors import Errors
from protocol.rpc._bytes_field import Bytes, BytesWireMixin
from protocol.rpc.current_leader import LeaderIdAndEpoch
from protocol.rpc.message import RpcMessage, versions
from protocol.rpc.spec import ApiSpec
from protocol.rpc.types import Int16, Int32, Int64

ACKS_NONE = 0
ACKS_LEADER = 1
ACKS_ALL = -1


class ProduceRequest(RpcMessage):
    class PartitionProduceData(BytesWireMixin):
        Index: Int32 = 0
        Records: Annotated[Bytes | None, versions("0+", nullable="0+")] = None

    class TopicProduceData(RpcMessage):
        Name: str = ""
        PartitionData: list[ProduceRequest.PartitionProduceData] = Field(default_factory=list)

    TransactionalId: Annotated[str | None, versions("3+", nullable="3+")] = None
    Acks: Int16 = ACKS_LEADER
    TimeoutMs: Int32 = 30000
    TopicData: list[TopicProduceData] = Field(default_factory=list)


class ProduceResponse(RpcMessage):
    class BatchIndexAndErrorMessage(RpcMessage):
        BatchIndex: Int32 = 0
        BatchIndexErrorMessage: Annotated[str | None, versions("8+", nullable="8+")] = None

    class PartitionProduceResponse(RpcMessage):
        Index: Int32 = 0
        ErrorCode: Int16 = 0
        BaseOffset: Int64 = -1
        LogAppendTimeMs: Annotated[Int64, versions("2+")] = -1
        LogStartOffset: Annotated[Int64, versions("5+")] = -1
        RecordErrors: Annotated[list[ProduceResponse.BatchIndexAndErrorMessage], versions("8+")] = Field(
            default_factory=list
        )
        ErrorMessage: Annotated[str | None, versions("8+", nullable="8+", ignorable=True)] = None
        CurrentLeader: Annotated[
            LeaderIdAndEpoch | None, versions("10+", nullable="10+", tagged="10+", tag=0, ignorable=True)
        ] = None

    class TopicProduceResponse(RpcMessage):
        Name: str = ""
        PartitionResponses: list[ProduceResponse.PartitionProduceResponse] = Field(default_factory=list)

    class NodeEndpoint(RpcMessage):
        NodeId: Int32 = 0
        Host: str = ""
        Port: Int32 = 0
        Rack: Annotated[str | None, versions("10+", nullable="10+")] = None

    Responses: list[TopicProduceResponse] = Field(default_factory=list)
    ThrottleTimeMs: Annotated[Int32, versions("1+", ignorable=True)] = 0
    NodeEndpoints: Annotated[list[NodeEndpoint], versions("10+", tagged="10+", tag=0, ignorable=True)] = (
        Field(default_factory=list)
    )


for _model in (
    ProduceRequest.TopicProduceData,
    ProduceRequest,
    ProduceResponse.PartitionProduceResponse,
    ProduceResponse.TopicProduceResponse,
    ProduceResponse,
):
    _model.model_rebuild()


def _error_response(spec: ApiSpec, code: Errors) -> RpcMessage:
    return ProduceResponse()


SPEC = ApiSpec(
    name="Produce",
    api_key=0,
    min_version=3,
    max_version=11,
    request_model=ProduceRequest,
    response_model=ProduceResponse,
    error_response_factory=_error_response,
    flexible_versions="9+",
)
