"""SaslAuthenticate (apiKey 36, v0-2): one SASL token each way, as the mechanism defines them
(for SCRAM: client-first/server-first, then client-final/server-final)."""

from __future__ import annotations

from typing import Annotated

from protocol.rpc._bytes_field import Bytes, BytesWireMixin
from protocol.rpc.message import versions
from protocol.rpc.spec import ApiSpec
from protocol.rpc.types import Int16, Int64


class SaslAuthenticateRequest(BytesWireMixin):
    AuthBytes: Bytes = b""


class SaslAuthenticateResponse(BytesWireMixin):
    ErrorCode: Int16 = 0
    ErrorMessage: Annotated[str | None, versions("0+", nullable="0+")] = None
    AuthBytes: Bytes = b""
    SessionLifetimeMs: Annotated[Int64, versions("1+", ignorable=True)] = 0
    """0: the client need not re-authenticate (connections.max.reauth.ms unset)."""


SPEC = ApiSpec(
    name="SaslAuthenticate",
    api_key=36,
    min_version=0,
    max_version=2,
    request_model=SaslAuthenticateRequest,
    response_model=SaslAuthenticateResponse,
    flexible_versions="2+",
)
