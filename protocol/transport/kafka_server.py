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
- a handler's KafkaError becomes the API's error response; any other failure UNKNOWN_SERVER_ERROR.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
import time
from dataclasses import dataclass, field

import structlog
from aiohttp import web

from protocol.errors import Errors, KafkaError
from protocol.rpc.api_versions import SPEC as API_VERSIONS_SPEC
from protocol.rpc.api_versions import ApiVersionsRequest, ApiVersionsResponse
from protocol.rpc.message import RpcMessage
from protocol.transport.context import REQUEST_CONTEXT, RequestContext
from protocol.transport.offload import run_large
from protocol.transport.server import (
    DECODE_OFF_LOOP_BYTES,
    DEFAULT_MAX_BODY,
    HANDLERS,
    METRICS,
    SPECS,
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
class KafkaListener:
    """Kafka's protocol on one listener of a process whose RPC app is `app`; handlers learn the
    listener a request came in on from protocol.transport.context."""

    app: web.Application
    name: str
    apis: tuple[str, ...]
    max_request_bytes: int = DEFAULT_MAX_BODY
    _server: asyncio.Server | None = None
    _conns: set[asyncio.Task[None]] = field(default_factory=set)
    _table: tuple[frozenset[str], dict[int, tuple[str, WireApi]]] | None = None

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
        self._server = await asyncio.start_server(self._connection, host or None, port, reuse_address=True)
        return int(self._server.sockets[0].getsockname()[1])

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        for task in list(self._conns):
            task.cancel()
        await asyncio.gather(*self._conns, return_exceptions=True)

    # ---- one connection -------------------------------------------------------------------------

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._conns.add(task)
        peer = writer.get_extra_info("peername")
        try:
            while True:
                try:
                    head = await reader.readexactly(4)
                except asyncio.IncompleteReadError:
                    return  # the client hung up between requests
                (size,) = _SIZE.unpack(head)
                if size < 0 or size > self.max_request_bytes:
                    log.warning(
                        "request refused: closing the connection",
                        listener=self.name,
                        peer=peer,
                        reason=f"frame of {size} bytes, socket.request.max.bytes={self.max_request_bytes}",
                    )
                    return
                try:
                    frame = await reader.readexactly(size)
                except asyncio.IncompleteReadError:
                    return  # truncated frame: the client went away mid-request
                answer = await self._answer(frame, peer)
                if answer is None:
                    return
                writer.write(answer)
                await writer.drain()
        except (ConnectionError, OSError):
            return
        finally:
            self._conns.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _answer(self, frame: bytes, peer: object) -> bytes | None:
        """The whole response frame, or None to close the connection."""
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
            host = peer[0] if isinstance(peer, tuple) else str(peer)
            REQUEST_CONTEXT.set(RequestContext(self.name, header.client_id or "", f"/{host}"))
            resp, outcome = await self._handle(name, api, req, version)
            if _many_structs(resp):
                return await run_large(self._frame, api, resp, version, correlation)
            return self._frame(api, resp, version, correlation)
        finally:
            metrics.requests.labels(label).inc()
            metrics.errors.labels(label, outcome.name).inc()
            metrics.latency.labels(label).observe((time.perf_counter() - start) * 1000)

    async def _handle(
        self, name: str, api: WireApi, req: RpcMessage, version: int
    ) -> tuple[RpcMessage, Errors]:
        if name == "ApiVersions":
            assert isinstance(req, ApiVersionsRequest)
            return ApiVersionsResponse(ApiKeys=self.api_versions()), Errors.NONE
        handler = self.app[HANDLERS][name]
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
