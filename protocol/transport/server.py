"""The aiohttp side of the RPC transport: `POST /rpc/<ApiName>`, `GET /healthz`, `GET /metrics`.

A process builds the app with its handlers, may add handlers or routes of its own before starting it,
and may install a health hook reporting readiness. Failures reach the caller as Kafka error codes:

- the request itself is bad (not msgpack/JSON, wrong field type, missing field, bad version header):
  HTTP 400, body `{"ErrorCode": 42, "ErrorMessage": ...}` in the request's encoding (JSON if unknown);
- an API this process does not serve: HTTP 404, same body shape;
- a version the API does not support: HTTP 400 with ErrorCode 35 (UNSUPPORTED_VERSION);
- the handler raises KafkaError: HTTP 200, the API's error response (ErrorCode set, other fields
  default), the message in the `Kafka-Error-Message` header;
- the handler raises anything else: as above with UNKNOWN_SERVER_ERROR (-1); the traceback goes to
  the server log only.

`start_server` accepts connections itself, as Kafka's Acceptor does: each is counted against the
listener's ConnectionQuotas before anything else (one over a bound is closed at once, before any TLS
handshake), then upgraded to TLS when the listener has an SSLContext, and only then handed to aiohttp.
Each request's handler sees who is asking in `protocol.transport.context.REQUEST_CONTEXT`: the
listener, the peer's host and the principal the caller's `principal_of` made of its certificate.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import json
import ssl
import time
from asyncio import sslproto
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, cast

import structlog
from aiohttp import hdrs, web
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Gauge,
    Histogram,
    ProcessCollector,
    disable_created_metrics,
    generate_latest,
)

import protocol.transport.codec as codec
from protocol.errors import Errors, KafkaError
from protocol.rpc import API_SPECS, ApiSpec, RpcMessage
from protocol.rpc.message import Encoding
from protocol.transport.connection_quotas import ConnectionQuotas
from protocol.transport.context import ANONYMOUS_PRINCIPAL, REQUEST_CONTEXT, RequestContext
from protocol.transport.offload import collector_paused, run_large
from protocol.transport.tally import CounterSeries, LabelledCounter, LabelledHistogram

Handler = Callable[[Any, int], Awaitable[RpcMessage]]
"""`async handler(request_model, api_version) -> response_model`."""

HealthHook = Callable[[], Mapping[str, Any] | Awaitable[Mapping[str, Any]]]
"""Returns details merged into /healthz; a "status" other than "ok" makes /healthz answer 503."""

PrincipalOf = Callable[[Mapping[str, Any] | None], str]
"""Maps a TLS peer's certificate (`getpeercert()`; None when it sent none) to a principal, `User:...`.
Raising refuses the connection (Kafka fails the authentication when no mapping rule matches)."""

HANDLERS = web.AppKey("kraftpy_rpc_handlers", dict)
SPECS = web.AppKey("kraftpy_rpc_specs", dict)
REGISTRY = web.AppKey("kraftpy_metrics_registry", CollectorRegistry)
HEALTH_HOOK = web.AppKey("kraftpy_health_hook", list)
METRICS = web.AppKey("kraftpy_rpc_metrics", object)
BODY_TIMEOUT = web.AppKey("kraftpy_body_timeout_s", float)
GUARD = web.AppKey("kraftpy_rpc_guard", list)

Guard = Callable[[str, "Handler"], "Handler"]
"""`guard(api, handler) -> handler`: the checks every request of `api` passes before its handler
(the process's authorizer); called per request, so it should cache what it builds."""
CONNECTIONS = web.AppKey("kraftpy_connections", dict)
"""{transport: RequestContext} of every connection start_server accepted and has not closed."""


@dataclasses.dataclass(slots=True, eq=False)
class _RpcState:
    """What serving an RPC reads, gathered once per app: the very objects its app keys hold (callers
    change those in place), read through attributes instead of the app's mapping on every request."""

    specs: dict[str, ApiSpec]
    handlers: dict[str, Handler]
    metrics: _RpcMetrics
    connections: dict[Any, RequestContext]
    guard: list[Guard | None]
    body_timeout_s: float


RPC_STATE = web.AppKey("kraftpy_rpc_state", _RpcState)

LOOP_LAG_INTERVAL_S = 0.02
"""How often the loop-lag probe wakes: a stall shows as a wake-up that much later than asked."""
LOOP_STALL_WARN_S = 0.1
"""A stall this long is logged: requests, heartbeats and fetches all waited that long."""

DEFAULT_BODY_TIMEOUT_S = 30.0
"""How long a client may take to send a request body once its headers arrived (Kafka's
request.timeout.ms default): a slow upload must not hold its memory forever."""

DECODE_OFF_LOOP_BYTES = 256 * 1024
"""Bodies larger than this are decoded and validated on a worker thread."""

MANY_STRUCTS = 10_000
"""Requests holding more structs than this are answered with the cyclic collector paused."""

DEFAULT_MAX_BODY = 104857600
"""Kafka's socket.request.max.bytes default: the largest request body a process accepts."""

log = structlog.get_logger("protocol.transport")

# A `_created` series per counter is prometheus_client's own addition: neither Kafka's JMX exporter
# nor its dashboards have them.
disable_created_metrics()


class _RpcMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        # Kafka's RequestMetrics MBeans as the JMX exporter names them (docs/metrics.md). Plain
        # numbers exported at scrape time: three prometheus_client updates per request cost more
        # than a heartbeat's own encoding.
        self.requests = LabelledCounter(
            "kafka_network_requestmetrics_requests",
            "RequestsPerSec: requests served, by API",
            ["request"],
            registry=registry,
        )
        self.errors = LabelledCounter(
            "kafka_network_requestmetrics_errors",
            "ErrorsPerSec: requests served, by API and the error code name of the answer (NONE included)",
            ["request", "error"],
            registry=registry,
        )
        self.latency = LabelledHistogram(
            "kafka_network_requestmetrics_totaltimems",
            "TotalTimeMs: from receiving a request body to sending its answer, in ms",
            ["request"],
            buckets=(0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000),
            registry=registry,
        )
        self.loop_lag = Histogram(
            "kraftpy_event_loop_lag_seconds",
            "How late the event loop ran a timer: the time it spent on something that did not yield",
            registry=registry,
            buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
        )
        self.loop_lag_max = Gauge(
            "kraftpy_event_loop_lag_max_seconds",
            "The longest event-loop stall since the process started",
            registry=registry,
        )
        self._by_api: dict[str, _ApiMetrics] = {}

    def of(self, api: str) -> _ApiMetrics:
        """The series of one API label, looked up once."""
        found = self._by_api.get(api)
        if found is None:
            found = self._by_api[api] = _ApiMetrics(self, api)
        return found


class _ApiMetrics:
    __slots__ = ("_errors", "_family", "_label", "latency", "requests")

    def __init__(self, family: _RpcMetrics, api: str) -> None:
        self._family = family.errors
        self._label = api
        self.requests = family.requests.labels(api)
        self.latency = family.latency.labels(api)
        self._errors: dict[Errors, CounterSeries] = {}

    def record(self, outcome: Errors, ms: float) -> None:
        """One request answered with `outcome` after `ms`."""
        self.requests.value += 1
        errors = self._errors.get(outcome)
        if errors is None:
            errors = self._errors[outcome] = self._family.labels(self._label, outcome.name)
        errors.value += 1
        self.latency.observe(ms)


def create_app(
    handlers: Mapping[str, Handler] | None = None,
    *,
    specs: Mapping[str, ApiSpec] | None = None,
    health: HealthHook | None = None,
    registry: CollectorRegistry | None = None,
    client_max_size: int = DEFAULT_MAX_BODY,
    body_timeout_s: float = DEFAULT_BODY_TIMEOUT_S,
) -> web.Application:
    """An aiohttp app serving `handlers` ({api name: handler}) with /healthz and /metrics.

    `registry` is this process's metrics registry (a fresh one by default, with process metrics);
    other parts of the process register their metrics in `app[REGISTRY]`.
    """
    app = web.Application(client_max_size=client_max_size)
    if registry is None:
        registry = CollectorRegistry()
        ProcessCollector(registry=registry)
    # A one-slot list for the guard, so it can be installed after the app started (app state is
    # frozen then); the health hook's likewise.
    state = _RpcState(
        specs=dict(API_SPECS if specs is None else specs),
        handlers={},
        metrics=_RpcMetrics(registry),
        connections={},
        guard=[None],
        body_timeout_s=body_timeout_s,
    )
    app[RPC_STATE] = state
    app[SPECS] = state.specs
    app[HANDLERS] = state.handlers
    app[REGISTRY] = registry
    app[METRICS] = state.metrics
    app[BODY_TIMEOUT] = body_timeout_s
    app[CONNECTIONS] = state.connections
    app[HEALTH_HOOK] = [health]
    app[GUARD] = state.guard
    for name, handler in (handlers or {}).items():
        add_handler(app, name, handler)
    app.cleanup_ctx.append(_loop_lag_probe)
    app.router.add_post("/rpc/{api}", _rpc)
    app.router.add_get("/healthz", _healthz)
    app.router.add_get("/metrics", _metrics)
    return app


def _encode(resp: RpcMessage, version: int, encoding: Encoding) -> bytes:
    cls = type(resp)
    if not cls.declares_only_plain_values():
        # Lists, structs or ids: never remembered, so their values are not gathered either.
        return codec.encode(resp.to_wire(version, encoding), encoding)
    values = tuple(resp.__dict__.values())
    kinds = tuple(map(type, values))
    if not _FLAT.issuperset(kinds):
        return codec.encode(resp.to_wire(version, encoding), encoding)
    # An answer of plain values only (a heartbeat's, the usual one): its bytes follow from its
    # class, version, encoding and values, and few such answers differ. The kinds are part of the
    # key since True == 1 and hash alike, yet encode differently.
    key = (cls, version, encoding, values, kinds)
    found = _ENCODED.get(key)
    if found is None:
        found = codec.encode(resp.to_wire(version, encoding), encoding)
        if len(found) <= ENCODED_ANSWER_BYTES:
            if len(_ENCODED) >= ENCODED_ANSWERS:
                # Answers holding ids or epochs (registrations) all differ: start over rather than
                # keep them.
                _ENCODED.clear()
            _ENCODED[key] = found
    return found


_FLAT = frozenset({int, bool, str, type(None)})
"""Kinds of field values an answer may be remembered by: immutable, and equal only when encoded
alike (not float: 0.0 == -0.0)."""

ENCODED_ANSWERS = 1024
"""How many encoded answers of plain values are kept, each at most ENCODED_ANSWER_BYTES long."""
ENCODED_ANSWER_BYTES = 512

_ENCODED: dict[tuple[Any, ...], bytes] = {}


def _parse(
    spec: ApiSpec, body: bytes, encoding: Encoding, version: int, large: bool
) -> tuple[RpcMessage, int]:
    """The request and how many structs it holds (counted only for a large body)."""
    data = codec.decode(body, encoding)
    if large:
        return spec.request_model.from_large_wire(data, version)
    return spec.request_model.from_wire(data, version), 0


async def _loop_lag_probe(app: web.Application) -> AsyncIterator[None]:
    """Runs while the app serves: sleeps LOOP_LAG_INTERVAL_S and records how much later it woke."""
    metrics: _RpcMetrics = app[METRICS]

    async def probe() -> None:
        worst = 0.0
        while True:
            asked = time.perf_counter()
            await asyncio.sleep(LOOP_LAG_INTERVAL_S)
            lag = max(0.0, time.perf_counter() - asked - LOOP_LAG_INTERVAL_S)
            metrics.loop_lag.observe(lag)
            if lag >= LOOP_STALL_WARN_S:
                log.warning("event loop stalled", stalled_ms=round(lag * 1000))
            if lag > worst:
                worst = lag
                metrics.loop_lag_max.set(lag)

    task = asyncio.get_running_loop().create_task(probe(), name="loop-lag-probe")
    try:
        yield
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def add_handler(app: web.Application, api: str, handler: Handler) -> None:
    """Serve `api` (a name in the app's specs) with `handler`; may be called after the app started."""
    if api not in app[SPECS]:
        raise KeyError(f"unknown API {api!r}; known: {', '.join(sorted(app[SPECS]))}")
    app[HANDLERS][api] = handler


def set_guard(app: web.Application, guard: Guard | None) -> None:
    """Put `guard` in front of every handler of `app`, on every listener serving it; may be called
    after the app started."""
    app[GUARD][0] = guard


def served_handler(app: web.Application, api: str) -> Handler | None:
    """The handler a request for `api` runs: the registered one behind the app's guard."""
    return _served(app[RPC_STATE], api)


def set_health_hook(app: web.Application, hook: HealthHook | None) -> None:
    """Install (or clear) the /healthz hook; may be called after the app started."""
    app[HEALTH_HOOK][0] = hook


def _error_body(code: Errors, message: str) -> dict[str, Any]:
    return {"ErrorCode": int(code), "ErrorMessage": message}


def _reply(
    obj: Any, encoding: Encoding, status: int = 200, headers: dict[str, str] | None = None
) -> web.Response:
    """`obj` (a wire dict, or bytes already encoded) as the response body; `headers` is taken over."""
    if headers is None:
        headers = {}
    headers[hdrs.CONTENT_TYPE] = codec.CONTENT_TYPES[encoding]
    return web.Response(
        body=obj if isinstance(obj, bytes) else codec.encode(obj, encoding), status=status, headers=headers
    )


def _answer_headers(encoding: Encoding, version: int) -> Mapping[str, str]:
    """The headers of an answer (200) in `encoding` at `version`, built once per pair: web.Response
    copies the headers it is given, so they are shared, never changed."""
    key = (encoding, version)
    found = _ANSWER_HEADERS.get(key)
    if found is None:
        found = _ANSWER_HEADERS[key] = {
            codec.API_VERSION_HEADER: str(version),
            hdrs.CONTENT_TYPE: codec.CONTENT_TYPES[encoding],
        }
    return found


_ANSWER_HEADERS: dict[tuple[Encoding, int], dict[str, str]] = {}


def _header_safe(text: str) -> str:
    # Header values must be one latin-1 line.
    flat = " ".join(text.split())
    return flat.encode("latin-1", "replace").decode("latin-1")[:1000]


def _body_encoding(request: web.BaseRequest) -> Encoding | None:
    raw = request.headers.get(hdrs.CONTENT_TYPE)
    # The header as clients send it is found without parsing it.
    found = _BY_HEADER.get(raw) if raw is not None else None
    return found if found is not None else codec.encoding_for(raw)


_BY_HEADER: dict[str, Encoding] = {mime: enc for enc, mime in codec.CONTENT_TYPES.items()}


async def _rpc(request: web.Request) -> web.Response:
    """The route of `POST /rpc/{api}`: requests the fast path of start_server's listeners did not take."""
    return await _call(request.app[RPC_STATE], request, request.match_info["api"])


async def _call(state: _RpcState, request: web.BaseRequest, api: str) -> web.Response:
    start = time.perf_counter()
    declared = _body_encoding(request)
    outcome = Errors.NONE
    # aiohttp runs each request in its own task, so the context is this request's alone.
    token = REQUEST_CONTEXT.set(_request_context(state, request))
    try:
        response, outcome = await _serve(state, request, api, declared)
        return response
    finally:
        REQUEST_CONTEXT.reset(token)
        state.metrics.of(api if api in state.specs else "unknown").record(
            outcome, (time.perf_counter() - start) * 1000
        )


def _request_context(state: _RpcState, request: web.BaseRequest) -> RequestContext:
    transport = request.transport
    base = state.connections.get(transport) if transport is not None else None
    if base is None:
        # A connection start_server did not accept (an app served by a runner of the caller's own).
        base = RequestContext(listener="", client_id="", client_host=request.remote or "")
    client_id = request.headers.get(codec.CLIENT_ID_HEADER, "")
    return dataclasses.replace(base, client_id=client_id) if client_id else base


def _served(state: _RpcState, api: str) -> Handler | None:
    handler = state.handlers.get(api)
    guard = state.guard[0]
    return guard(api, handler) if handler is not None and guard is not None else handler


async def _serve(
    state: _RpcState, request: web.BaseRequest, api: str, declared: Encoding | None
) -> tuple[web.Response, Errors]:
    encoding: Encoding = declared or "json"
    spec: ApiSpec | None = state.specs.get(api)
    handler = _served(state, api)
    if spec is None or handler is None:
        msg = f"this process does not serve API '{api}'; it serves: {', '.join(sorted(state.handlers)) or 'none'}"
        return _reply(_error_body(Errors.INVALID_REQUEST, msg), encoding, 404), Errors.INVALID_REQUEST

    if declared is None:
        msg = f"Content-Type must be {codec.MSGPACK} or {codec.JSON}, got '{request.content_type}'"
        return _reply(_error_body(Errors.INVALID_REQUEST, msg), encoding, 400), Errors.INVALID_REQUEST

    limit = request.client_max_size
    # Refused before reading when the size is announced, so an oversized body costs no memory.
    announced = request.content_length
    if announced is not None and announced > limit:
        return _too_large(limit, encoding), Errors.INVALID_REQUEST
    try:
        version = _requested_version(request, spec)
        try:
            content = request.content
            if content.is_eof():
                # The whole body came with the headers (a small request's usual case): nothing to
                # wait for, so neither a deadline nor read()'s chunk loop.
                body = content.read_nowait()
                if len(body) > limit:
                    raise web.HTTPRequestEntityTooLarge(limit, len(body))
            else:
                async with asyncio.timeout(state.body_timeout_s):
                    body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            return _too_large(limit, encoding), Errors.INVALID_REQUEST
        except TimeoutError:
            slow = f"the request body did not arrive within {state.body_timeout_s:g}s"
            return _reply(
                _error_body(Errors.REQUEST_TIMED_OUT, slow), encoding, 408
            ), Errors.REQUEST_TIMED_OUT
        # A large body takes long to validate (a million uuids: about a second), and a large request
        # tends to get a large answer (a Metadata naming 100,000 topics): both off the loop.
        large = len(body) > DECODE_OFF_LOOP_BYTES
        if large:
            req, structs = await run_large(_parse, spec, body, encoding, version, large)
        else:
            req, structs = _parse(spec, body, encoding, version, large)
    except KafkaError as e:
        status = 400
        return _reply(_error_body(e.code, e.message or e.code.name), encoding, status), e.code

    if structs <= MANY_STRUCTS:
        return await _answer(api, spec, handler, req, version, encoding, large)
    # While a request of many structs is in hand its models are alive, and its handler's allocations
    # (on the loop too) would set off full collections that walk them all: the collector waits until
    # it is answered (see offload). A large Produce is a few structs around its record bytes, and
    # may wait seconds for its acks: it is not held.
    with collector_paused():
        return await _answer(api, spec, handler, req, version, encoding, large)


def _too_large(limit: int, encoding: Encoding) -> web.Response:
    too_large = f"request body larger than socket.request.max.bytes={limit}"
    return _reply(_error_body(Errors.INVALID_REQUEST, too_large), encoding, 413)


async def _answer(
    api: str, spec: ApiSpec, handler: Handler, req: RpcMessage, version: int, encoding: Encoding, large: bool
) -> tuple[web.Response, Errors]:
    message: str | None = None
    try:
        resp = await handler(req, version)
        # pydantic models' metaclass makes isinstance() slow; the exact class is the usual answer.
        if type(resp) is not spec.response_model and not isinstance(resp, spec.response_model):
            raise TypeError(
                f"handler for {api} returned {type(resp).__name__}, not {spec.response_model.__name__}"
            )
        value = getattr(resp, "ErrorCode", 0) or 0
        code = _ERRORS.get(value)
        if code is None:
            code = Errors(value)
        payload = (
            await run_large(_encode, resp, version, encoding) if large else _encode(resp, version, encoding)
        )
    except KafkaError as e:
        code = e.code
        if e.message:
            message = _header_safe(e.message)
        payload = _encode(spec.error_response(code), version, encoding)
    except Exception:
        log.exception("rpc handler failed", api=api, api_version=version)
        code = Errors.UNKNOWN_SERVER_ERROR
        message = "Unexpected server error"
        payload = _encode(spec.error_response(code), version, encoding)
    headers = _answer_headers(encoding, version)
    if message is not None:
        headers = {**headers, codec.ERROR_MESSAGE_HEADER: message}
    return web.Response(body=payload, headers=headers), code


_ERRORS: dict[int, Errors] = {int(e): e for e in Errors}
"""Errors by code: a dict look-up instead of the enum's call."""


def _requested_version(request: web.BaseRequest, spec: ApiSpec) -> int:
    raw = request.headers.get(codec.API_VERSION_HEADER)
    if raw is None:
        return spec.max_version
    try:
        version = int(raw.strip())
    except ValueError:
        raise KafkaError(
            Errors.INVALID_REQUEST, f"{codec.API_VERSION_HEADER} must be an integer, got '{raw}'"
        ) from None
    spec.check_version(version)
    return version


async def _healthz(request: web.Request) -> web.Response:
    hook: HealthHook | None = request.app[HEALTH_HOOK][0]
    body: dict[str, Any] = {"status": "ok"}
    if hook is not None:
        try:
            details = hook()
            if inspect.isawaitable(details):
                details = await details
            body.update(details)
        except Exception as e:
            log.exception("health hook failed")
            body = {"status": "error", "error": f"{type(e).__name__}: {e}"}
    return web.json_response(body, status=200 if body.get("status") == "ok" else 503, dumps=_json_dumps)


def _json_dumps(obj: Any) -> str:
    return json.dumps(obj, default=str)


async def _metrics(request: web.Request) -> web.Response:
    data = generate_latest(request.app[REGISTRY])
    resp = web.Response(body=data)
    resp.headers["Content-Type"] = CONTENT_TYPE_LATEST
    return resp


# In-flight requests get this long to finish when the server stops; then their connections are cut.
# aiohttp's default (60 s) would let one Produce parked for its acks outlast a broker's whole stop.
SHUTDOWN_GRACE_S = 2.0

DEFAULT_HANDSHAKE_TIMEOUT_S = 10.0
"""How long a TLS client may take over its handshake: a connection counts against the quotas from
its accept, so one that never finishes must not hold its place for long."""

NO_IDLE_LIMIT_S = 10.0**9


@dataclasses.dataclass(frozen=True)
class _Listener:
    """What start_server was told about the listener it serves."""

    app: web.Application
    name: str
    security_protocol: str
    ssl_context: ssl.SSLContext | None
    principal_of: PrincipalOf | None
    quotas: ConnectionQuotas | None
    handshake_timeout_s: float


class _Gate(asyncio.Protocol):
    """One accepted connection: counted against the quotas, upgraded to TLS when the listener has a
    context, then handed to aiohttp's request handler, to which it forwards everything after.

    It stays the connection's protocol to the end so it learns when the connection closes: then its
    place in the quotas is given back, however the connection ended (refused handshake, idle
    timeout, server stop)."""

    def __init__(self, site: _ListenerSite) -> None:
        self._site = site
        self._listener = site.listener
        self._transport: asyncio.BaseTransport | None = None
        self._ip: str | None = None
        self._inner: asyncio.Protocol | None = None
        self._tls: sslproto.SSLProtocol | None = None
        self._closed = False

    # -- accept

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        if self._tls is not None:
            # The second call: the TLS layer's, its handshake over, with the decrypting transport.
            self._handshake_over(transport)
            return
        listener = self._listener
        peer = transport.get_extra_info("peername")
        ip = str(peer[0]) if peer else ""
        if listener.quotas is not None:
            refused = listener.quotas.try_acquire(ip)
            if refused is not None:
                log.info("connection refused at accept", listener=listener.name, peer=ip, reason=refused)
                self._closed = True
                transport.abort()
                return
        self._ip = ip
        self._site.gates.add(self)
        if listener.ssl_context is None:
            self._hand_over(transport, ANONYMOUS_PRINCIPAL)
            return
        # The TLS layer goes under this protocol here and now, as loop.create_server(ssl=...) puts it:
        # loop.start_tls, awaited from a task, would leave a window in which uvloop (it reads before
        # a paused protocol's pause takes hold) hands the ClientHello to this protocol instead.
        loop = asyncio.get_running_loop()
        waiter = loop.create_future()
        tls = self._tls = sslproto.SSLProtocol(
            loop,
            self,
            listener.ssl_context,
            waiter,
            server_side=True,
            ssl_handshake_timeout=listener.handshake_timeout_s,
        )
        # uvloop's transports are not asyncio.Transport subclasses, hence the cast.
        stream = cast(asyncio.Transport, transport)
        self._transport = stream
        stream.set_protocol(tls)
        tls.connection_made(stream)
        waiter.add_done_callback(self._handshake_ended)

    def _handshake_ended(self, waiter: asyncio.Future[None]) -> None:
        """The TLS layer's waiter: an error when the handshake failed; also woken (without one) when
        the peer went away before it was over, which the TLS layer reports nowhere else."""
        if self._inner is not None or self._closed:
            return
        error = (
            "connection closed" if waiter.cancelled() or waiter.exception() is None else waiter.exception()
        )
        # Kafka logs a failed handshake as a failed authentication, at INFO; a peer that only
        # connected and left (a port probe) is not worth that.
        level = (
            log.info if isinstance(error, ssl.SSLError | TimeoutError | ConnectionAbortedError) else log.debug
        )
        level(
            "TLS handshake failed",
            listener=self._listener.name,
            peer=self._ip,
            error=str(error) or repr(error),
        )
        self._release()

    def _handshake_over(self, transport: asyncio.BaseTransport) -> None:
        listener = self._listener
        cert = transport.get_extra_info("peercert")
        try:
            principal = (
                listener.principal_of(cert) if listener.principal_of is not None else ANONYMOUS_PRINCIPAL
            )
        except Exception as e:
            log.info(
                "no principal for the client certificate", listener=listener.name, peer=self._ip, error=str(e)
            )
            self._release()
            cast(asyncio.Transport, transport).abort()
            return
        self._hand_over(transport, principal)

    def _hand_over(self, transport: asyncio.BaseTransport, principal: str) -> None:
        listener = self._listener
        server = self._site.runner_server()
        if server is None:  # the runner is shutting down
            self._release()
            cast(asyncio.Transport, transport).abort()
            return
        self._transport = transport
        listener.app[CONNECTIONS][transport] = RequestContext(
            listener=listener.name,
            client_id="",
            client_host=self._ip or "",
            principal=principal,
            security_protocol=listener.security_protocol,
        )
        inner = self._inner = server()
        inner.connection_made(transport)

    # -- forwarded to aiohttp once it has the connection

    def data_received(self, data: bytes) -> None:
        if self._inner is not None:
            self._inner.data_received(data)

    def eof_received(self) -> bool | None:
        if self._inner is not None:
            return self._inner.eof_received()
        return None

    def pause_writing(self) -> None:
        if self._inner is not None:
            self._inner.pause_writing()

    def resume_writing(self) -> None:
        if self._inner is not None:
            self._inner.resume_writing()

    def connection_lost(self, exc: BaseException | None) -> None:
        if self._release() and self._inner is not None:
            self._inner.connection_lost(exc)

    def _release(self) -> bool:
        """Give the connection's place back, once; False when that was done already."""
        if self._closed:
            return False
        self._closed = True
        self._site.gates.discard(self)
        if self._ip is not None and self._listener.quotas is not None:
            self._listener.quotas.release(self._ip)
        if self._transport is not None:
            self._listener.app[CONNECTIONS].pop(self._transport, None)
        return True

    def abort(self) -> None:
        """Cut a connection whose handshake is not over (the server is stopping)."""
        if self._inner is None and self._transport is not None:
            cast(asyncio.Transport, self._transport).abort()


class _ListenerSite(web.TCPSite):
    """A TCPSite whose connections pass through a _Gate (aiohttp's own would start TLS itself, before
    a connection could be counted)."""

    def __init__(self, runner: web.AppRunner, host: str, port: int, listener: _Listener) -> None:
        super().__init__(runner, host, port, ssl_context=listener.ssl_context, reuse_address=True)
        self.listener = listener
        self.gates: set[_Gate] = set()

    def runner_server(self) -> web.Server | None:
        return self._runner.server

    async def start(self) -> None:
        await web.BaseSite.start(self)
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: _Gate(self),
            self._host,
            self._port,
            backlog=self._backlog,
            reuse_address=self._reuse_address,
            reuse_port=self._reuse_port,
        )

    async def stop(self) -> None:
        await super().stop()
        for gate in list(self.gates):
            gate.abort()


def _take_rpc_first(app: web.Application, runner: web.AppRunner) -> None:
    """Have `runner`'s server answer `POST /rpc/<an API of the app>` itself, and hand every other
    request to the app as before.

    An RPC then skips the router's resolve, its match info and the middleware chain: what one costs
    aiohttp is most of what a heartbeat costs the controller. It is answered by the same code as the
    app's route, so only an app with middlewares or response-prepare hooks of its own (which must see
    every request), or a request the route would not take the same way (another path spelling, a
    query string, an `Expect` header), goes through the app."""
    server = runner.server
    state = app.get(RPC_STATE)
    if server is None or state is None or app.middlewares or app.on_response_prepare:
        return
    specs = state.specs
    routed = server.request_handler

    async def dispatch(request: web.BaseRequest) -> web.StreamResponse:
        path = request.raw_path
        if (
            path.startswith("/rpc/")
            and path[5:] in specs
            and request.method == hdrs.METH_POST
            and hdrs.EXPECT not in request.headers
        ):
            return await _call(state, request, path[5:])
        return await routed(request)

    # Read by each connection's handler when it is made: set before the listener accepts any.
    server.request_handler = dispatch


async def start_server(
    app: web.Application,
    host: str = "127.0.0.1",
    port: int = 0,
    ssl_context: ssl.SSLContext | None = None,
    *,
    listener: str = "",
    security_protocol: str | None = None,
    principal_of: PrincipalOf | None = None,
    quotas: ConnectionQuotas | None = None,
    idle_timeout_s: float | None = None,
    handshake_timeout_s: float = DEFAULT_HANDSHAKE_TIMEOUT_S,
) -> tuple[web.AppRunner, int]:
    """Start serving `app`; returns the runner (call `await runner.cleanup()` to stop) and the bound port.

    `ssl_context`: serve TLS (a server context; its verify mode decides whether clients must present
    a certificate). `principal_of` names the peer of a TLS connection from its certificate; without
    it every connection is User:ANONYMOUS. `listener` and `security_protocol` (default: SSL with a
    context, PLAINTEXT without) are what handlers see in the request context. `quotas` bounds the
    connections (a connection over a bound is closed at accept), `idle_timeout_s` closes a connection
    that has carried no request for that long (Kafka's connections.max.idle.ms; negative: never)."""
    if idle_timeout_s is None:
        runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=SHUTDOWN_GRACE_S)
    else:
        runner = web.AppRunner(
            app,
            access_log=None,
            handle_signals=False,
            shutdown_timeout=SHUTDOWN_GRACE_S,
            keepalive_timeout=idle_timeout_s if idle_timeout_s >= 0 else NO_IDLE_LIMIT_S,
        )
    await runner.setup()
    _take_rpc_first(app, runner)
    spec = _Listener(
        app=app,
        name=listener,
        security_protocol=security_protocol or ("SSL" if ssl_context is not None else "PLAINTEXT"),
        ssl_context=ssl_context,
        principal_of=principal_of,
        quotas=quotas,
        handshake_timeout_s=handshake_timeout_s,
    )
    site = _ListenerSite(runner, host, port, spec)
    try:
        await site.start()
    except BaseException:
        await runner.cleanup()
        raise
    bound = runner.addresses[-1][1] if port == 0 else port
    return runner, bound
