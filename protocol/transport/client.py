"""RpcClient: calls `POST /rpc/<ApiName>` on one process, reusing its connections.

Retries (bounded, exponential backoff with full jitter) happen only when no answer came back:
connection failures and timeouts. An answer carrying a Kafka error code is returned (in the response's
ErrorCode) or raised as RpcError (HTTP 4xx: the request itself was refused), never retried here.
A retried request may reach the server twice; the RPCs here are safe to repeat, as with Kafka's
own resends after a disconnect.
"""

from __future__ import annotations

import asyncio
import random
import ssl as _ssl
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
import structlog

import protocol.transport.codec as codec
from protocol.errors import Errors, KafkaError
from protocol.rpc import API_SPECS, ApiSpec, RpcMessage
from protocol.rpc.message import Encoding
from protocol.transport.errors import RpcConnectionError, RpcError

log = structlog.get_logger("protocol.transport.client")


@dataclass(frozen=True)
class RetryPolicy:
    """`attempts` tries in all; the n-th wait is uniform in [0, min(max_backoff, initial_backoff * 2**n)]."""

    attempts: int = 4
    initial_backoff: float = 0.05
    max_backoff: float = 2.0

    def delay(self, retry: int) -> float:
        return random.uniform(0, min(self.max_backoff, self.initial_backoff * (2**retry)))


NO_RETRIES = RetryPolicy(attempts=1)


class RpcClient:
    """One peer, one aiohttp ClientSession (so connections are kept alive and reused).

    With `ssl` (a client context) the peer is dialled over TLS: an `http://` URL becomes `https://`,
    so callers keep building URLs from listener addresses alike. `client_id` is sent with each
    request (Kafka's client.id) for the server's logs and request context."""

    def __init__(
        self,
        base_url: str,
        *,
        timeout: float = 5.0,
        retry: RetryPolicy = RetryPolicy(),
        encoding: Encoding = "msgpack",
        specs: Mapping[str, ApiSpec] | None = None,
        ssl: _ssl.SSLContext | None = None,
        client_id: str | None = None,
    ) -> None:
        base_url = base_url.rstrip("/")
        if ssl is not None and base_url.startswith("http://"):
            base_url = "https://" + base_url[len("http://") :]
        self.base_url = base_url
        self.ssl = ssl
        self.client_id = client_id
        self.timeout = timeout
        self.retry = retry
        self.encoding: Encoding = encoding
        self._specs = API_SPECS if specs is None else specs
        self._session: aiohttp.ClientSession | None = None
        self.sent_bytes: Counter[str] = Counter()
        """Request body bytes posted, per API (each attempt counts)."""

    def _session_or_new(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                # True: aiohttp's default verification, for an https:// URL given without a context.
                connector=aiohttp.TCPConnector(
                    limit=100, keepalive_timeout=30, ssl=self.ssl if self.ssl is not None else True
                ),
                raise_for_status=False,
            )
        return self._session

    async def call(
        self,
        api: str,
        request: RpcMessage,
        version: int | None = None,
        *,
        timeout: float | None = None,
        retry: RetryPolicy | None = None,
        encoding: Encoding | None = None,
    ) -> Any:
        """Send `request` at `version` (default: the highest this side knows) and return the response model."""
        spec = self._specs.get(api)
        if spec is None:
            raise KeyError(f"unknown API {api!r}")
        if not isinstance(request, spec.request_model):
            raise TypeError(f"{api} takes {spec.request_model.__name__}, not {type(request).__name__}")
        version = spec.max_version if version is None else version
        spec.check_version(version)
        enc: Encoding = encoding or self.encoding
        body = codec.encode(request.to_wire(version, enc), enc)
        headers = {"Content-Type": codec.CONTENT_TYPES[enc], codec.API_VERSION_HEADER: str(version)}
        if self.client_id:
            headers[codec.CLIENT_ID_HEADER] = self.client_id
        policy = retry or self.retry
        per_call = aiohttp.ClientTimeout(total=timeout if timeout is not None else self.timeout)
        url = f"{self.base_url}/rpc/{api}"

        last: BaseException | None = None
        for attempt in range(max(1, policy.attempts)):
            if attempt:
                await asyncio.sleep(policy.delay(attempt - 1))
            self.sent_bytes[api] += len(body)
            try:
                async with self._session_or_new().post(
                    url, data=body, headers=headers, timeout=per_call
                ) as resp:
                    payload = await resp.read()
                    return self._parse(spec, version, resp, payload)
            except aiohttp.ClientConnectorCertificateError as e:
                # The peer's certificate is not one this side trusts: asking again changes nothing.
                raise RpcConnectionError(
                    Errors.NETWORK_EXCEPTION,
                    f"{api} to {self.base_url}: TLS certificate refused: {e.certificate_error}",
                ) from None
            except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError, TimeoutError) as e:
                last = e
                log.debug("rpc attempt failed", api=api, url=url, attempt=attempt + 1, error=repr(e))
        code = Errors.REQUEST_TIMED_OUT if isinstance(last, TimeoutError) else Errors.NETWORK_EXCEPTION
        raise RpcConnectionError(
            code, f"{api} to {self.base_url} failed after {policy.attempts} attempts: {last!r}"
        )

    def _parse(self, spec: ApiSpec, version: int, resp: aiohttp.ClientResponse, payload: bytes) -> Any:
        enc = codec.encoding_for(resp.headers.get("Content-Type"))
        if enc is None:
            raise RpcError(
                Errors.UNKNOWN_SERVER_ERROR,
                f"{spec.name}: HTTP {resp.status} with unexpected Content-Type {resp.headers.get('Content-Type')!r}",
                resp.status,
            )
        try:
            data = codec.decode(payload, enc)
        except KafkaError as e:
            raise RpcError(
                Errors.UNKNOWN_SERVER_ERROR, f"{spec.name}: unreadable reply: {e.message}", resp.status
            ) from None
        if resp.status != 200:
            code = data.get("ErrorCode", -1) if isinstance(data, dict) else -1
            message = data.get("ErrorMessage") if isinstance(data, dict) else None
            try:
                err = Errors(code)
            except ValueError:
                err = Errors.UNKNOWN_SERVER_ERROR
            raise RpcError(err, message or f"HTTP {resp.status}", resp.status)
        try:
            return spec.response_model.from_wire(data, version)
        except KafkaError as e:
            raise RpcError(
                Errors.UNKNOWN_SERVER_ERROR, f"{spec.name}: malformed response: {e.message}", 200
            ) from None

    async def close(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()
        self._session = None

    async def __aenter__(self) -> RpcClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
