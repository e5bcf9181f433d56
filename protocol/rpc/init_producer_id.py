"""InitProducerId (apiKey 22, v0-5): an idempotent producer asks a broker for its producer id and epoch."""

from __future__ import annotations

from typing import Annotated

from protocol.rpc.message import RpcMessage, versions
from protocol.rpc.spec import ApiSpec
from protocol.rpc.types import Int16, Int32, Int64


class InitProducerIdRequest(RpcMessage):
    TransactionalId: Annotated[str | None, versions("0+", nullable="0+")] = None
    TransactionTimeoutMs: Int32 = 60000
    ProducerId: Annotated[Int64, versions("3+")] = -1
    ProducerEpoch: Annotated[Int16, versions("3+")] = -1


class InitProducerIdResponse(RpcMessage):
    ThrottleTimeMs: Int32 = 0
    ErrorCode: Int16 = 0
    ProducerId: Int64 = -1
    ProducerEpoch: Int16 = 0


SPEC = ApiSpec(
    name="InitProducerId",
    api_key=22,
    min_version=0,
    max_version=5,
    request_model=InitProducerIdRequest,
    response_model=InitProducerIdResponse,
    flexible_versions="2+",
)
