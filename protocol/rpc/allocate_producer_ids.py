"""AllocateProducerIds (apiKey 67, v0): a broker asks for the next block of producer ids."""

from __future__ import annotations

from protocol.rpc.message import RpcMessage
from protocol.rpc.spec import ApiSpec
from protocol.rpc.types import Int16, Int32, Int64


class AllocateProducerIdsRequest(RpcMessage):
    BrokerId: Int32 = 0
    BrokerEpoch: Int64 = -1


class AllocateProducerIdsResponse(RpcMessage):
    ThrottleTimeMs: Int32 = 0
    ErrorCode: Int16 = 0
    ProducerIdStart: Int64 = 0
    ProducerIdLen: Int32 = 0


SPEC = ApiSpec(
    name="AllocateProducerIds",
    api_key=67,
    min_version=0,
    max_version=0,
    request_model=AllocateProducerIdsRequest,
    response_model=AllocateProducerIdsResponse,
)
