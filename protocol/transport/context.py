"""Who is asking: the connection a Kafka-protocol request came in on, for handlers that answer
differently per listener or remember the client (a group member's client id and host)."""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass

ANONYMOUS_PRINCIPAL = "User:ANONYMOUS"
"""Kafka's principal for a PLAINTEXT connection, or an SSL one whose client sent no certificate
(kraftpy.security.principal.ANONYMOUS is this one, parsed)."""


@dataclass(frozen=True)
class RequestContext:
    listener: str
    client_id: str
    client_host: str
    principal: str = ANONYMOUS_PRINCIPAL
    """Who authenticated on this connection (`User:name`), as kraftpy.security.principal builds it."""
    security_protocol: str = "PLAINTEXT"


REQUEST_CONTEXT: ContextVar[RequestContext | None] = ContextVar("kraftpy_request_context", default=None)


def current_request() -> RequestContext:
    """The request being handled; an anonymous one where no listener set it."""
    return REQUEST_CONTEXT.get() or RequestContext(listener="", client_id="", client_host="")
