"""A Kafka-protocol listener: size-prefixed frames over TCP, answered by the handlers of an RPC app.

The listener owns no handlers: it reads the app's spec and handler tables at each request, so an
API served over HTTP is served here too, through the same code, with the same request metrics.

Kafka's connection rules:
- one request at a time per connection: the next frame is read only once the previous answer is
  written (Kafka mutes the channel), so answers come in request order and a client may pipeline;
  connections are served concurrently, so a slow client stalls only itself;
- a frame over socket.request.max.bytes, an unknown API key, a version outside what ApiVersions
  advertised or a body that cannot be read: the connection is closed, nothing is handed to a handler;
- ApiVersions at a version the listener does not know is answered at v0 with UNSUPPORTED_VERSION
  and the API list, so the client can retry at a version both know;
- a handler's KafkaError becomes the API's error response; any other failure UNKNOWN_SERVER_ERROR;
- max.connections / max.connections.per.ip are counted at accept, before any TLS handshake, so a
  flood of half-open TLS connections is refused like any other;
- a connection silent for connections.max.idle.ms is closed, and so is one whose request frame
  does not arrive in full within the request deadline once its size was read (a client trickling
  bytes would otherwise hold the connection and its buffer forever).

Security protocols: SSL and SASL_SSL wrap the connection in TLS (ssl_context); the principal of an
SSL connection comes from the client's certificate (`principal_of`), that of a SASL one from its
SCRAM or PLAIN exchange (protocol.transport.sasl), which must complete before any other request is served.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import struct
import time
from asyncio import sslproto
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import structlog
from aiohttp import web

from protocol.errors import Errors, KafkaError
from protocol.rpc.api_versions import SPEC as API_VERSIONS_SPEC
from protocol.rpc.api_versions import ApiVersionsRequest, ApiVersionsResponse
from protocol.rpc.message import RpcMessage
from protocol.rpc.sasl_authenticate import SPEC as SASL_AUTHENTICATE_SPEC
from protocol.rpc.sasl_authenticate import SaslAuthenticateRequest
from protocol.rpc.sasl_handshake import SPEC as SASL_HANDSHAKE_SPEC
from protocol.rpc.sasl_handshake import SaslHandshakeRequest
from protocol.transport.connection_quotas import ConnectionQuotas
from protocol.transport.context import ANONYMOUS_PRINCIPAL, REQUEST_CONTEXT, RequestContext
from protocol.transport.offload import run_large
from protocol.transport.peer_name import distinguished_name
from protocol.transport.sasl import (
    PlainCheck,
    SaslReply,
    SaslServerAuthenticator,
    ScramLookup,
)
from protocol.transport.server import (
    DECODE_OFF_LOOP_BYTES,
    DEFAULT_MAX_BODY,
    HANDLERS,
    METRICS,
    SPECS,
    served_handler,
)
from protocol.wire.codec import (
    API_VERSIONS_KEY,
    FrameError,
    WireApi,
    peek_header,
    read_request_header,
    response_header,
    wire_api,
)

log = structlog.get_logger("protocol.kafka_listener")

_SIZE = struct.Struct(">i")

# Kafka 4 still lists Produce from v0 in ApiVersions (KAFKA-18659: older librdkafka refuses a
# broker whose Produce starts above v0) and refuses v0-2 when they arrive.
ADVERTISED_MIN = {"Produce": 0}


SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")

SASL_MAX_RECEIVE_BYTES = 524288
"""Kafka's sasl.server.max.receive.size: the largest frame read before authentication completed,
so that an unauthenticated client cannot make the listener buffer socket.request.max.bytes."""

DEFAULT_REQUEST_TIMEOUT_S = 30.0
"""How long a request frame (once its size is read) and a TLS handshake may take to arrive."""

FAILED_AUTH_DELAY_S = 0.1
"""Kafka's connection.failed.authentication.delay.ms: a failed authentication is answered this much
later, which slows a client guessing passwords over fresh connections."""


def ssl_principal(cert: Mapping[str, Any] | None) -> str:
    """Kafka's default principal of an SSL connection: `User:` and the client certificate's subject
    DN, or User:ANONYMOUS when the client sent none (ssl.client.auth=none or requested)."""
    if not cert or not cert.get("subject"):
        return ANONYMOUS_PRINCIPAL
    return f"User:{distinguished_name(cert)}"


BYTES_HEAVY = frozenset({"Produce"})
"""APIs whose large requests are large by their record bytes, which cost nothing to read."""

LARGE_ANSWER = 1000
"""An answer with a list longer than this at its top or one level down is written off the loop."""


def _many_structs(resp: RpcMessage) -> bool:
    for name in type(resp).model_fields:
        value = getattr(resp, name)
        if isinstance(value, list):
            if len(value) > LARGE_ANSWER:
                return True
            total = 0
            for item in value:
                if isinstance(item, RpcMessage):
                    for sub in type(item).model_fields:
                        inner = getattr(item, sub)
                        if isinstance(inner, list):
                            total += len(inner)
                if total > LARGE_ANSWER:
                    return True
    return False


@dataclass
class _Connection:
    """What the listener knows of one connection between its requests."""

    peer: object
    host: str
    principal: str = ANONYMOUS_PRINCIPAL
    sasl: SaslServerAuthenticator | None = None
    closing: bool = False
    """Close once the answer being written is out (a failed authentication)."""
    connected: bool = False
    """The stream (after the TLS handshake, if any) was handed to a connection task."""
    quotas: ConnectionQuotas | None = None
    """Where this connection is counted, until release()."""

    def release(self) -> None:
        """Uncount the connection; once, however many ways it ends."""
        quotas, self.quotas = self.quotas, None
        if quotas is not None:
            quotas.release(self.host)


class _Accept(asyncio.Protocol):
    """A connection's protocol for the instant of its accept: the listener then puts the real ones in
    its place (KafkaListener._accepted)."""

    def __init__(self, listener: KafkaListener) -> None:
        self._listener = listener

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses, hence the cast
        self._listener._accepted(cast(asyncio.Transport, transport))


@dataclass
class KafkaListener:
    """Kafka's protocol on one listener of a process whose RPC app is `app`; handlers learn the
    listener a request came in on, and who sent it, from protocol.transport.context."""

    app: web.Application
    name: str
    apis: tuple[str, ...]
    max_request_bytes: int = DEFAULT_MAX_BODY
    security_protocol: str = "PLAINTEXT"
    ssl_context: ssl.SSLContext | None = None
    """Server-side TLS for SSL and SASL_SSL; its verify mode is ssl.client.auth."""
    sasl_mechanisms: tuple[str, ...] = ()
    """sasl.enabled.mechanisms, for SASL_PLAINTEXT and SASL_SSL (SCRAM-SHA-256, SCRAM-SHA-512, PLAIN)."""
    scram_lookup: ScramLookup | None = None
    plain_check: PlainCheck | None = None
    principal_of: Callable[[Mapping[str, Any] | None], str] = ssl_principal
    """The principal of an SSL connection from getpeercert() (None or {} without a client cert)."""
    connection_quotas: ConnectionQuotas | None = None
    idle_timeout_s: float | None = None
    """connections.max.idle.ms: a connection that sends nothing for this long is closed."""
    request_timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S
    failed_auth_delay_s: float = FAILED_AUTH_DELAY_S
    _server: asyncio.Server | None = None
    _conns: set[asyncio.Task[None]] = field(default_factory=set)
    _handshaking: set[asyncio.Transport] = field(default_factory=set)
    _table: tuple[frozenset[str], dict[int, tuple[str, WireApi]]] | None = None

    def __post_init__(self) -> None:
        if self.security_protocol not in SECURITY_PROTOCOLS:
            raise ValueError(
                f"listener {self.name}: security protocol {self.security_protocol!r} is not one of "
                f"{', '.join(SECURITY_PROTOCOLS)}"
            )
        if self.uses_tls and self.ssl_context is None:
            raise ValueError(f"listener {self.name}: {self.security_protocol} needs an SSL context")
        if not self.uses_tls and self.ssl_context is not None:
            raise ValueError(f"listener {self.name}: {self.security_protocol} takes no SSL context")
        if self.uses_sasl:
            try:
                # The authenticator checks the mechanisms and what each needs, as every connection's will.
                auth = SaslServerAuthenticator(self.sasl_mechanisms, self.scram_lookup, self.plain_check)
                self.sasl_mechanisms = auth.mechanisms
            except ValueError as e:
                raise ValueError(f"listener {self.name}: {e}") from None

    @property
    def uses_tls(self) -> bool:
        return self.security_protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        return self.security_protocol in ("SASL_PLAINTEXT", "SASL_SSL")

    # ---- what is served -------------------------------------------------------------------------

    def _served(self) -> dict[int, tuple[str, WireApi]]:
        """By api key; rebuilt only when the app's handler table changed (handlers may be added late)."""
        names = frozenset(n for n in self.apis if n in self.app[HANDLERS])
        if self._table is None or self._table[0] != names:
            self._table = (names, self._build_table(names))
        return self._table[1]

    def _build_table(self, names: frozenset[str]) -> dict[int, tuple[str, WireApi]]:
        specs = self.app[SPECS]
        out: dict[int, tuple[str, WireApi]] = {
            API_VERSIONS_KEY: ("ApiVersions", wire_api(API_VERSIONS_SPEC, 0, API_VERSIONS_SPEC.max_version))
        }
        if self.uses_sasl:
            # served by the listener itself, not by the app
            hs, auth = SASL_HANDSHAKE_SPEC, SASL_AUTHENTICATE_SPEC
            out[hs.api_key] = (hs.name, wire_api(hs, hs.min_version, hs.max_version))
            out[auth.api_key] = (auth.name, wire_api(auth, auth.min_version, auth.max_version))
        for name in self.apis:
            spec = specs.get(name)
            if spec is None or name not in names:
                continue
            out[spec.api_key] = (name, wire_api(spec, spec.min_version, spec.max_version))
        return out

    def api_versions(self) -> list[ApiVersionsResponse.ApiVersion]:
        return [
            ApiVersionsResponse.ApiVersion(
                ApiKey=key,
                MinVersion=min(ADVERTISED_MIN.get(name, api.spec.min_version), api.spec.min_version),
                MaxVersion=api.spec.max_version,
            )
            for key, (name, api) in sorted(self._served().items())
        ]

    # ---- lifecycle ------------------------------------------------------------------------------

    async def start(self, host: str, port: int) -> int:
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(lambda: _Accept(self), host or None, port, reuse_address=True)
        return int(self._server.sockets[0].getsockname()[1])

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        for transport in list(self._handshaking):
            transport.abort()
        for task in list(self._conns):
            task.cancel()
        await asyncio.gather(*self._conns, return_exceptions=True)

    # ---- accepting a connection -------------------------------------------------------------------

    def _accepted(self, transport: asyncio.Transport) -> None:
        """A connection just accepted, nothing read from it yet: count it, then put TLS (when the
        listener has it) and the stream under it, all before the loop reads a byte. A start_tls
        awaited from the connection's task would leave a window in which uvloop hands the
        ClientHello to the stream instead of the TLS layer."""
        peer = transport.get_extra_info("peername")
        conn = _Connection(peer, peer[0] if isinstance(peer, tuple) else str(peer))
        quotas = self.connection_quotas
        if quotas is not None:
            refused = quotas.try_acquire(conn.host)
            if refused is not None:
                log.warning("connection refused", listener=self.name, peer=peer, reason=refused)
                transport.close()
                return
            conn.quotas = quotas
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(loop=loop)

        def connected(
            reader: asyncio.StreamReader, writer: asyncio.StreamWriter
        ) -> Coroutine[Any, Any, None]:
            conn.connected = True
            return self._connection(reader, writer, conn)

        stream = asyncio.StreamReaderProtocol(reader, connected, loop=loop)
        if self.ssl_context is None:
            transport.set_protocol(stream)
            stream.connection_made(transport)
            return
        waiter: asyncio.Future[None] = loop.create_future()
        tls = sslproto.SSLProtocol(
            loop,
            stream,
            self.ssl_context,
            waiter,
            server_side=True,
            ssl_handshake_timeout=self.request_timeout_s,
        )
        self._handshaking.add(transport)
        waiter.add_done_callback(lambda w: self._handshake_ended(w, transport, conn))
        transport.set_protocol(tls)
        tls.connection_made(transport)

    def _handshake_ended(
        self, waiter: asyncio.Future[None], transport: asyncio.Transport, conn: _Connection
    ) -> None:
        """The TLS layer's waiter: with an error when the handshake failed, and also woken without one
        when the peer left before it was over (the TLS layer reports that nowhere else)."""
        self._handshaking.discard(transport)
        if conn.connected:
            return
        error: BaseException | str = "connection closed"
        if not waiter.cancelled() and waiter.exception() is not None:
            error = waiter.exception() or error
        # Kafka logs a failed handshake as a failed authentication, at INFO; a peer that connected
        # and left (a port probe) is not worth that.
        level = (
            log.info if isinstance(error, ssl.SSLError | TimeoutError | ConnectionAbortedError) else log.debug
        )
        level(
            "failed authentication (SSL handshake failed)",
            listener=self.name,
            peer=conn.peer,
            error=str(error) or repr(error),
        )
        conn.release()
        transport.abort()

    # ---- one connection -------------------------------------------------------------------------

    async def _connection(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, conn: _Connection
    ) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._conns.add(task)
        try:
            if self.security_protocol == "SSL":
                try:
                    conn.principal = self.principal_of(writer.get_extra_info("peercert"))
                except Exception as e:
                    # Kafka fails the authentication when no principal can be made (no mapping rule
                    # matches the certificate's name)
                    log.info("failed authentication", listener=self.name, peer=conn.peer, reason=str(e))
                    return
            if self.uses_sasl:
                conn.sasl = SaslServerAuthenticator(self.sasl_mechanisms, self.scram_lookup, self.plain_check)
            await self._serve(reader, writer, conn)
        except (ConnectionError, OSError):
            return
        except asyncio.CancelledError:
            # stop() cancels and then awaits every connection; ending normally spares asyncio's
            # stream callback, which on 3.11 raises when it inspects a cancelled task
            return
        finally:
            conn.release()
            self._conns.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _serve(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, conn: _Connection
    ) -> None:
        peer = conn.peer
        while True:
            try:
                async with asyncio.timeout(self.idle_timeout_s):
                    head = await reader.readexactly(4)
            except asyncio.IncompleteReadError:
                return  # the client hung up between requests
            except TimeoutError:
                log.info(
                    "idle connection closed",
                    listener=self.name,
                    peer=peer,
                    reason=f"nothing received in {self.idle_timeout_s} s (connections.max.idle.ms)",
                )
                return
            (size,) = _SIZE.unpack(head)
            limit = self.max_request_bytes
            if conn.sasl is not None and not conn.sasl.complete:
                limit = min(limit, SASL_MAX_RECEIVE_BYTES)
            if size < 0 or size > limit:
                reason = f"frame of {size} bytes, socket.request.max.bytes={self.max_request_bytes}"
                if limit != self.max_request_bytes:
                    reason = (
                        f"frame of {size} bytes before authentication, sasl.server.max.receive.size={limit}"
                    )
                log.warning(
                    "request refused: closing the connection", listener=self.name, peer=peer, reason=reason
                )
                return
            try:
                async with asyncio.timeout(self.request_timeout_s):
                    frame = await reader.readexactly(size)
            except asyncio.IncompleteReadError:
                return  # truncated frame: the client went away mid-request
            except TimeoutError:
                log.warning(
                    "request refused: closing the connection",
                    listener=self.name,
                    peer=peer,
                    reason=f"a frame of {size} bytes did not arrive within {self.request_timeout_s} s",
                )
                return
            answer = await self._answer(frame, conn)
            if answer is None:
                return
            writer.write(answer)
            await writer.drain()
            if conn.closing:
                return

    async def _answer(self, frame: bytes, conn: _Connection) -> bytes | None:
        """The whole response frame, or None to close the connection."""
        peer = conn.peer
        metrics = self.app[METRICS]
        start = time.perf_counter()
        try:
            key, version, correlation = peek_header(frame)
        except FrameError as e:
            log.warning(
                "request refused: closing the connection", listener=self.name, peer=peer, reason=str(e)
            )
            return None
        served = self._served()
        entry = served.get(key)
        label = entry[0] if entry else "unknown"
        outcome = Errors.NONE
        try:
            if conn.sasl is not None and (refusal := conn.sasl.admit(key)) is not None:
                outcome = refusal.error or Errors.ILLEGAL_SASL_STATE
                log.warning(
                    "request refused: closing the connection",
                    listener=self.name,
                    peer=peer,
                    reason=refusal.reason,
                )
                if refusal.error is None or entry is None or not entry[1].spec.supports(version):
                    return None
                conn.closing = True
                api = entry[1]
                return self._frame(api, api.spec.error_response(refusal.error), version, correlation)
            if entry is None:
                outcome = Errors.INVALID_REQUEST
                log.warning(
                    "request refused: closing the connection",
                    listener=self.name,
                    peer=peer,
                    reason=f"api key {key} is not served on this listener",
                )
                return None
            name, api = entry
            if not api.spec.supports(version):
                if key == API_VERSIONS_KEY:
                    outcome = Errors.UNSUPPORTED_VERSION
                    resp = ApiVersionsResponse(ErrorCode=int(outcome), ApiKeys=self.api_versions())
                    return self._frame(api, resp, 0, correlation)
                outcome = Errors.UNSUPPORTED_VERSION
                log.warning(
                    "request refused: closing the connection",
                    listener=self.name,
                    peer=peer,
                    reason=f"{name} v{version} is not served (v{api.spec.min_version}-{api.spec.max_version})",
                )
                return None
            try:
                header, pos = read_request_header(frame, api.flexible(version))
                if len(frame) > DECODE_OFF_LOOP_BYTES and name not in BYTES_HEAVY:
                    # a request of many structs (a Metadata naming 100,000 topics) is read off the loop
                    req = await run_large(api.decode_request, frame, pos, version)
                else:
                    req = api.decode_request(frame, pos, version)
            except (FrameError, KafkaError) as e:
                outcome = Errors.INVALID_REQUEST
                log.warning(
                    "request refused: closing the connection",
                    listener=self.name,
                    peer=peer,
                    api=name,
                    api_version=version,
                    reason=str(e),
                )
                return None
            REQUEST_CONTEXT.set(
                RequestContext(
                    self.name,
                    header.client_id or "",
                    f"/{conn.host}",
                    principal=conn.principal,
                    security_protocol=self.security_protocol,
                )
            )
            if conn.sasl is not None and name in (SASL_HANDSHAKE_SPEC.name, SASL_AUTHENTICATE_SPEC.name):
                reply = await self._sasl(conn, conn.sasl, req, version)
                outcome = Errors(getattr(reply.response, "ErrorCode", 0) or 0)
                return self._frame(api, reply.response, version, correlation)
            resp, outcome = await self._handle(name, api, req, version)
            if conn.sasl is not None and name == "ApiVersions":
                conn.sasl.api_versions_answered()
            if _many_structs(resp):
                return await run_large(self._frame, api, resp, version, correlation)
            return self._frame(api, resp, version, correlation)
        finally:
            metrics.of(label).record(outcome, (time.perf_counter() - start) * 1000)

    async def _sasl(
        self, conn: _Connection, sasl: SaslServerAuthenticator, req: RpcMessage, version: int
    ) -> SaslReply:
        """A SaslHandshake or SaslAuthenticate through the connection's authenticator."""
        if isinstance(req, SaslHandshakeRequest):
            reply = sasl.handshake(req, version)
        else:
            assert isinstance(req, SaslAuthenticateRequest)
            reply = sasl.authenticate(req)
        if reply.close:
            conn.closing = True
            log.info("failed authentication", listener=self.name, peer=conn.peer, reason=reply.reason)
            await asyncio.sleep(self.failed_auth_delay_s)
        elif sasl.principal is not None:
            conn.principal = sasl.principal
            log.debug("authenticated", listener=self.name, peer=conn.peer, principal=conn.principal)
        return reply

    async def _handle(
        self, name: str, api: WireApi, req: RpcMessage, version: int
    ) -> tuple[RpcMessage, Errors]:
        if name == "ApiVersions":
            assert isinstance(req, ApiVersionsRequest)
            return ApiVersionsResponse(ApiKeys=self.api_versions()), Errors.NONE
        handler = served_handler(self.app, name)
        assert handler is not None  # the served table lists only APIs with a handler
        try:
            resp = await handler(req, version)
            return resp, Errors(getattr(resp, "ErrorCode", 0) or 0)
        except KafkaError as e:
            return api.spec.error_response(e.code), e.code
        except Exception:
            log.exception("kafka request handler failed", api=name, api_version=version)
            code = Errors.UNKNOWN_SERVER_ERROR
            return api.spec.error_response(code), code

    def _frame(self, api: WireApi, resp: RpcMessage, version: int, correlation: int) -> bytes | None:
        """The response frame; None (close the connection, as Kafka does on a failed send) when
        not even the API's error answer can be written at this version."""
        for attempt in (resp, api.spec.error_response(Errors.UNKNOWN_SERVER_ERROR)):
            out = bytearray(4)
            out += response_header(correlation, api.response_header_flexible(version))
            try:
                api.encode_response(attempt, version, out)
            except KafkaError:
                log.exception("kafka response not encodable", api=api.spec.name, api_version=version)
                continue
            _SIZE.pack_into(out, 0, len(out) - 4)
            return bytes(out)
        return None
