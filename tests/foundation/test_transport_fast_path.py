"""start_server answers `POST /rpc/<api>` itself, ahead of the app's router, when the app has no
middlewares: every answer must be the one the app's own route gives."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import msgpack
import pytest
from aiohttp import web

from protocol.errors import Errors, KafkaError
from protocol.rpc import BrokerHeartbeatRequest, BrokerHeartbeatResponse
from protocol.transport import RpcClient, create_app, start_server
from protocol.transport.context import current_request

seen: list[tuple[int, int, str]] = []


async def heartbeat(req: BrokerHeartbeatRequest, version: int) -> BrokerHeartbeatResponse:
    seen.append((req.BrokerId, version, current_request().listener))
    if req.BrokerId == 13:
        raise KafkaError(Errors.STALE_BROKER_EPOCH, "epoch 1 is stale\nsecond line")
    if req.BrokerId == 666:
        raise ZeroDivisionError("bug")
    return BrokerHeartbeatResponse(IsCaughtUp=True, IsFenced=False, ErrorCode=0)


async def _serve(middleware: bool) -> tuple[web.AppRunner, str]:
    app = create_app({"BrokerHeartbeat": heartbeat}, client_max_size=1000)
    if middleware:

        @web.middleware
        async def passing(request: web.Request, handler):  # type: ignore[no-untyped-def]
            return await handler(request)

        app.middlewares.append(passing)
    runner, port = await start_server(app, "127.0.0.1", 0, listener="L")
    return runner, f"http://127.0.0.1:{port}"


@pytest.fixture
async def urls() -> AsyncIterator[tuple[str, str]]:
    """(an app with a middleware: every request through its router, an app without one)."""
    seen.clear()
    routed, routed_url = await _serve(True)
    direct, direct_url = await _serve(False)
    yield routed_url, direct_url
    await routed.cleanup()
    await direct.cleanup()


def _json(broker_id: int) -> bytes:
    return json.dumps(BrokerHeartbeatRequest(BrokerId=broker_id).to_wire(1)).encode()


MSGPACK_BODY = msgpack.packb(BrokerHeartbeatRequest(BrokerId=1).to_wire(1, "msgpack"))

# (method, path, body, headers, aiohttp request options)
REQUESTS: list[tuple[str, str, bytes, dict[str, str], dict[str, Any]]] = [
    ("POST", "/rpc/BrokerHeartbeat", MSGPACK_BODY, {"Content-Type": "application/msgpack"}, {}),
    ("POST", "/rpc/BrokerHeartbeat", _json(1), {"Content-Type": "application/json"}, {}),
    ("POST", "/rpc/BrokerHeartbeat", _json(1), {"Content-Type": "application/json; charset=utf-8"}, {}),
    (
        "POST",
        "/rpc/BrokerHeartbeat",
        _json(1),
        {"Content-Type": "application/json", "Kafka-Api-Version": "0"},
        {},
    ),
    (
        "POST",
        "/rpc/BrokerHeartbeat",
        _json(1),
        {"Content-Type": "application/json", "Kafka-Api-Version": "2"},
        {},
    ),
    (
        "POST",
        "/rpc/BrokerHeartbeat",
        _json(1),
        {"Content-Type": "application/json", "Kafka-Api-Version": "x"},
        {},
    ),
    (
        "POST",
        "/rpc/BrokerHeartbeat",
        _json(1),
        {"Content-Type": "application/json", "Kafka-Client-Id": "c"},
        {},
    ),
    ("POST", "/rpc/BrokerHeartbeat", _json(13), {"Content-Type": "application/json"}, {}),
    ("POST", "/rpc/BrokerHeartbeat", _json(666), {"Content-Type": "application/msgpack"}, {}),
    ("POST", "/rpc/BrokerHeartbeat", _json(666), {"Content-Type": "application/json"}, {}),
    ("POST", "/rpc/BrokerHeartbeat", b"{not json", {"Content-Type": "application/json"}, {}),
    ("POST", "/rpc/BrokerHeartbeat", b"{}", {"Content-Type": "text/plain"}, {}),
    ("POST", "/rpc/BrokerHeartbeat", b"x" * 2000, {"Content-Type": "application/json"}, {}),
    ("POST", "/rpc/BrokerHeartbeat", _json(1), {"Content-Type": "application/json"}, {"expect100": True}),
    ("POST", "/rpc/BrokerHeartbeat?x=1", _json(1), {"Content-Type": "application/json"}, {}),
    ("POST", "/rpc/Broker%48eartbeat", _json(1), {"Content-Type": "application/json"}, {}),
    ("POST", "/rpc/BrokerRegistration", b"{}", {"Content-Type": "application/json"}, {}),
    ("POST", "/rpc/NoSuchApi", b"{}", {"Content-Type": "application/json"}, {}),
    ("POST", "/rpc/", b"{}", {"Content-Type": "application/json"}, {}),
    ("GET", "/rpc/BrokerHeartbeat", b"", {}, {}),
    ("PUT", "/rpc/BrokerHeartbeat", _json(1), {"Content-Type": "application/json"}, {}),
]


async def _answer(
    session: aiohttp.ClientSession,
    url: str,
    method: str,
    body: bytes,
    headers: dict[str, str],
    opts: dict[str, Any],
) -> tuple[int, bytes, dict[str, str]]:
    async with session.request(
        method, url, data=body or None, headers=headers, skip_auto_headers=("Content-Type",), **opts
    ) as r:
        raw = await r.read()
        # The date may tick between the two answers.
        kept = {k: v for k, v in r.headers.items() if k not in ("Date",)}
        return r.status, raw, kept


@pytest.mark.parametrize("method,path,body,headers,opts", REQUESTS)
async def test_an_rpc_is_answered_as_the_apps_route_answers_it(
    urls: tuple[str, str], method: str, path: str, body: bytes, headers: dict[str, str], opts: dict[str, Any]
) -> None:
    routed_url, direct_url = urls
    async with aiohttp.ClientSession() as s:
        routed = await _answer(s, routed_url + path, method, body, headers, opts)
        routed_seen = list(seen)
        seen.clear()
        direct = await _answer(s, direct_url + path, method, body, headers, opts)
    assert direct == routed
    assert seen == routed_seen


async def test_metrics_count_an_rpc_answered_by_the_listener(urls: tuple[str, str]) -> None:
    _, url = urls
    async with RpcClient(url) as c:
        await c.call("BrokerHeartbeat", BrokerHeartbeatRequest(BrokerId=1))
        await c.call("BrokerHeartbeat", BrokerHeartbeatRequest(BrokerId=13))
    async with aiohttp.ClientSession() as s, s.get(f"{url}/metrics") as r:
        text = await r.text()
    assert 'kafka_network_requestmetrics_errors_total{error="NONE",request="BrokerHeartbeat"} 1.0' in text
    assert 'kafka_network_requestmetrics_totaltimems_count{request="BrokerHeartbeat"} 2.0' in text
    assert seen == [(1, 1, "L"), (13, 1, "L")]


async def test_an_app_with_a_response_prepare_hook_sees_every_rpc_answer() -> None:
    app = create_app({"BrokerHeartbeat": heartbeat})
    prepared: list[int] = []

    async def on_prepare(request: web.Request, response: web.StreamResponse) -> None:
        prepared.append(response.status)

    app.on_response_prepare.append(on_prepare)
    runner, port = await start_server(app, "127.0.0.1", 0)
    try:
        async with RpcClient(f"http://127.0.0.1:{port}") as c:
            await c.call("BrokerHeartbeat", BrokerHeartbeatRequest(BrokerId=1))
    finally:
        await runner.cleanup()
    assert prepared == [200]


async def test_the_listener_takes_rpcs_only_for_an_app_without_middlewares() -> None:
    """The comparisons above would pass with the fast path switched off: check it is on where it should be."""
    routed, _ = await _serve(True)
    direct, _ = await _serve(False)
    try:
        assert routed.server is not None and direct.server is not None
        assert routed.server.request_handler == routed.app._handle
        assert direct.server.request_handler != direct.app._handle
    finally:
        await routed.cleanup()
        await direct.cleanup()
