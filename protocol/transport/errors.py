"""Errors a transport client reports: all are KafkaError, so callers can catch one type."""

from __future__ import annotations

from protocol.errors import Errors, KafkaError


class RpcError(KafkaError):
    """The server refused the request itself (bad body, unknown api, unsupported version): HTTP 4xx."""

    def __init__(self, code: Errors, message: str | None, http_status: int) -> None:
        super().__init__(code, message)
        self.http_status = http_status


class RpcConnectionError(KafkaError):
    """No answer after every retry: NETWORK_EXCEPTION (connection failed) or REQUEST_TIMED_OUT."""
