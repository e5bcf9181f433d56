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
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, TypeVar

import structlog
from aiohttp import web
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
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
from protocol.transport.offload import collector_paused, run_large

T = TypeVar("T")

Handler = Callable[[Any, int], Awaitable[RpcMessage]]
"""`async handler(request_model, api_version) -> response_model`."""

HealthHook = Callable[[], Mapping[str, Any] | Awaitable[Mapping[str, Any]]]
"""Returns details merged into /healthz; a "status" other than "ok" makes /healthz answer 503."""

HANDLERS = web.AppKey("kraftpy_rpc_handlers", dict)
SPECS = web.AppKey("kraftpy_rpc_specs", dict)
REGISTRY = web.AppKey("kraftpy_metrics_registry", CollectorRegistry)
HEALTH_HOOK = web.AppKey("kraftpy_health_hook", list)
METRICS = web.AppKey("kraftpy_rpc_metrics", object)
BODY_TIMEOUT = web.AppKey("kraftpy_body_timeout_s", float)

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
        # Kafka's RequestMetrics MBeans as the JMX exporter names them (docs/metrics.md).
        self.requests = Counter(
            "kafka_network_requestmetrics_requests",
            "RequestsPerSec: requests served, by API",
            ["request"],
            registry=registry,
        )
        self.errors = Counter(
            "kafka_network_requestmetrics_errors",
            "ErrorsPerSec: requests served, by API and the error code name of the answer (NONE included)",
            ["request", "error"],
            registry=registry,
        )
        self.latency = Histogram(
            "kafka_network_requestmetrics_totaltimems",
            "TotalTimeMs: from receiving a request body to sending its answer, in ms",
            ["request"],
            registry=registry,
            buckets=(0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000),
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
    app[SPECS] = dict(API_SPECS if specs is None else specs)
    app[HANDLERS] = {}
    if registry is None:
        registry = CollectorRegistry()
        ProcessCollector(registry=registry)
    app[REGISTRY] = registry
    app[METRICS] = _RpcMetrics(registry)
    app[BODY_TIMEOUT] = body_timeout_s
    # A one-slot list, so a hook can be installed after the app started (app state is frozen then).
    app[HEALTH_HOOK] = [health]
    for name, handler in (handlers or {}).items():
        add_handler(app, name, handler)
    app.cleanup_ctx.append(_loop_lag_probe)
    app.router.add_post("/rpc/{api}", _rpc)
    app.router.add_get("/healthz", _healthz)
    app.router.add_get("/metrics", _metrics)
    return app


def _encode(resp: RpcMessage, version: int, encoding: Encoding) -> bytes:
    return codec.encode(resp.to_wire(version, encoding), encoding)


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


def set_health_hook(app: web.Application, hook: HealthHook | None) -> None:
    """Install (or clear) the /healthz hook; may be called after the app started."""
    app[HEALTH_HOOK][0] = hook


def _error_body(code: Errors, message: str) -> dict[str, Any]:
    return {"ErrorCode": int(code), "ErrorMessage": message}


def _reply(
    obj: Any, encoding: Encoding, status: int = 200, headers: Mapping[str, str] | None = None
) -> web.Response:
    """`obj` (a wire dict, or bytes already encoded) as the response body."""
    return web.Response(
        body=obj if isinstance(obj, bytes) else codec.encode(obj, encoding),
        status=status,
        content_type=codec.CONTENT_TYPES[encoding],
        headers=headers,
    )


async def _run(off_loop: bool, fn: Callable[..., T], *args: Any) -> T:
    """`fn(*args)`, on a worker thread when `off_loop`, where the GIL still hands the loop its turn
    every few milliseconds; used for the bodies of large requests and their answers."""
    if off_loop:
        return await run_large(fn, *args)
    return fn(*args)


def _header_safe(text: str) -> str:
    # Header values must be one latin-1 line.
    flat = " ".join(text.split())
    return flat.encode("latin-1", "replace").decode("latin-1")[:1000]


async def _rpc(request: web.Request) -> web.Response:
    app = request.app
    api = request.match_info["api"]
    metrics: _RpcMetrics = app[METRICS]
    start = time.perf_counter()
    encoding = codec.encoding_for(request.content_type) or "json"
    outcome = Errors.NONE
    try:
        response, outcome = await _serve(request, api, encoding)
        return response
    finally:
        label = api if api in app[SPECS] else "unknown"
        metrics.requests.labels(label).inc()
        metrics.errors.labels(label, outcome.name).inc()
        metrics.latency.labels(label).observe((time.perf_counter() - start) * 1000)


async def _serve(request: web.Request, api: str, encoding: Encoding) -> tuple[web.Response, Errors]:
    app = request.app
    spec: ApiSpec | None = app[SPECS].get(api)
    handler = app[HANDLERS].get(api)
    if spec is None or handler is None:
        msg = f"this process does not serve API '{api}'; it serves: {', '.join(sorted(app[HANDLERS])) or 'none'}"
        return _reply(_error_body(Errors.INVALID_REQUEST, msg), encoding, 404), Errors.INVALID_REQUEST

    if codec.encoding_for(request.content_type) is None:
        msg = f"Content-Type must be {codec.MSGPACK} or {codec.JSON}, got '{request.content_type}'"
        return _reply(_error_body(Errors.INVALID_REQUEST, msg), encoding, 400), Errors.INVALID_REQUEST

    limit = request.client_max_size
    too_large = f"request body larger than socket.request.max.bytes={limit}"
    # Refused before reading when the size is announced, so an oversized body costs no memory.
    if request.content_length is not None and request.content_length > limit:
        return _reply(_error_body(Errors.INVALID_REQUEST, too_large), encoding, 413), Errors.INVALID_REQUEST
    try:
        version = _requested_version(request, spec)
        try:
            async with asyncio.timeout(app[BODY_TIMEOUT]):
                body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            return _reply(
                _error_body(Errors.INVALID_REQUEST, too_large), encoding, 413
            ), Errors.INVALID_REQUEST
        except TimeoutError:
            slow = f"the request body did not arrive within {app[BODY_TIMEOUT]:g}s"
            return _reply(
                _error_body(Errors.REQUEST_TIMED_OUT, slow), encoding, 408
            ), Errors.REQUEST_TIMED_OUT
        # A large body takes long to validate (a million uuids: about a second), and a large request
        # tends to get a large answer (a Metadata naming 100,000 topics): both off the loop.
        large = len(body) > DECODE_OFF_LOOP_BYTES
        req, structs = await _run(large, _parse, spec, body, encoding, version, large)
    except KafkaError as e:
        status = 400
        return _reply(_error_body(e.code, e.message or e.code.name), encoding, status), e.code

    # While a request of many structs is in hand its models are alive, and its handler's allocations
    # (on the loop too) would set off full collections that walk them all: the collector waits until
    # it is answered (see offload). A large Produce is a few structs around its record bytes, and
    # may wait seconds for its acks: it is not held.
    with collector_paused() if structs > MANY_STRUCTS else contextlib.nullcontext():
        return await _answer(api, spec, handler, req, version, encoding, large)


async def _answer(
    api: str, spec: ApiSpec, handler: Handler, req: RpcMessage, version: int, encoding: Encoding, large: bool
) -> tuple[web.Response, Errors]:
    headers: dict[str, str] = {codec.API_VERSION_HEADER: str(version)}
    try:
        resp = await handler(req, version)
        if not isinstance(resp, spec.response_model):
            raise TypeError(
                f"handler for {api} returned {type(resp).__name__}, not {spec.response_model.__name__}"
            )
        code = Errors(getattr(resp, "ErrorCode", 0) or 0)
        payload = await _run(large, _encode, resp, version, encoding)
    except KafkaError as e:
        code = e.code
        if e.message:
            headers[codec.ERROR_MESSAGE_HEADER] = _header_safe(e.message)
        payload = _encode(spec.error_response(code), version, encoding)
    except Exception:
        log.exception("rpc handler failed", api=api, api_version=version)
        code = Errors.UNKNOWN_SERVER_ERROR
        headers[codec.ERROR_MESSAGE_HEADER] = "Unexpected server error"
        payload = _encode(spec.error_response(code), version, encoding)
    return _reply(payload, encoding, 200, headers), code


def _requested_version(request: web.Request, spec: ApiSpec) -> int:
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


async def start_server(
    app: web.Application, host: str = "127.0.0.1", port: int = 0
) -> tuple[web.AppRunner, int]:
    """Start serving `app`; returns the runner (call `await runner.cleanup()` to stop) and the bound port."""
    runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=SHUTDOWN_GRACE_S)
    await runner.setup()
    site = web.TCPSite(runner, host, port, reuse_address=True)
    await site.start()
    bound = runner.addresses[-1][1] if port == 0 else port
    return runner, bound
