"""SaslHandshake (apiKey 17, v0-1): the client names the SASL mechanism it will authenticate with.

v1 announces that the tokens then travel in SaslAuthenticate requests; v0 meant raw size-prefixed
tokens after the handshake (clients before Kafka 1.0), which this listener does not serve.
"""

from __future__ import annotations

from pydantic import Field

from protocol.rpc.message import RpcMessage
from protocol.rpc.spec import ApiSpec
from protocol.rpc.types import Int16


class SaslHandshakeRequest(RpcMessage):
    Mechanism: str = ""


class SaslHandshakeResponse(RpcMessage):
    ErrorCode: Int16 = 0
    Mechanisms: list[str] = Field(default_factory=list)
    """The mechanisms enabled on the listener, sent whether or not the client's is one of them."""


SPEC = ApiSpec(
    name="SaslHandshake",
    api_key=17,
    min_version=0,
    max_version=1,
    request_model=SaslHandshakeRequest,
    response_model=SaslHandshakeResponse,
)
