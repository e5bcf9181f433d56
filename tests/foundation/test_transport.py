"""Transport in one process over real sockets: server errors, client retries, health and metrics."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import aiohttp
import msgpack
import pytest
from aiohttp import web

from protocol.errors import Errors, KafkaError
from protocol.rpc import BrokerHeartbeatRequest, BrokerHeartbeatResponse, BrokerRegistrationRequest
from protocol.transport import (
    REGISTRY,
    RetryPolicy,
    RpcClient,
    RpcConnectionError,
    RpcError,
    add_handler,
    codec,
    create_app,
    set_health_hook,
    start_server,
)
from protocol.uuid import Uuid

calls: list[tuple[BrokerHeartbeatRequest, int]] = []
peers: set[object] = set()


async def heartbeat(req: BrokerHeartbeatRequest, version: int) -> BrokerHeartbeatResponse:
    calls.append((req, version))
    if req.BrokerId == 13:
        raise KafkaError(Errors.STALE_BROKER_EPOCH, "epoch 1 is stale\nsecond line")
    if req.BrokerId == 666:
        raise ZeroDivisionError("bug")
    return BrokerHeartbeatResponse(IsCaughtUp=True, IsFenced=False)


@pytest.fixture
async def server() -> AsyncIterator[tuple[web.Application, str]]:
    calls.clear()
    peers.clear()
    app = create_app({"BrokerHeartbeat": heartbeat})

    @web.middleware
    async def record_peer(request: web.Request, handler):  # type: ignore[no-untyped-def]
        if request.transport is not None:
            peers.add(request.transport.get_extra_info("peername"))
        return await handler(request)

    app.middlewares.append(record_peer)

    async def extra(request: web.Request) -> web.Response:
        return web.Response(text="extra")

    app.router.add_get("/extra", extra)
    runner, port = await start_server(app, "127.0.0.1", 0)
    yield app, f"http://127.0.0.1:{port}"
    await runner.cleanup()


async def _post(url: str, body: bytes, ctype: str, version: str | None = None) -> tuple[int, dict, dict]:
    headers = {"Content-Type": ctype}
    if version is not None:
        headers["Kafka-Api-Version"] = version
    async with aiohttp.ClientSession() as s, s.post(url, data=body, headers=headers) as r:
        raw = await r.read()
        data = msgpack.unpackb(raw, raw=False) if r.content_type == "application/msgpack" else json.loads(raw)
        return r.status, data, dict(r.headers)


async def test_client_round_trip_both_encodings(server: tuple[web.Application, str]) -> None:
    _, url = server
    d = Uuid.random()
    async with RpcClient(url) as c:
        for enc in ("msgpack", "json"):
            resp = await c.call(
                "BrokerHeartbeat", BrokerHeartbeatRequest(BrokerId=1, OfflineLogDirs=[d]), encoding=enc
            )
            assert resp == BrokerHeartbeatResponse(IsCaughtUp=True, IsFenced=False)
        resp = await c.call("BrokerHeartbeat", BrokerHeartbeatRequest(BrokerId=1), version=0)
        sent = [
            (BrokerHeartbeatRequest(BrokerId=1, OfflineLogDirs=[d]), 1, "msgpack"),
            (BrokerHeartbeatRequest(BrokerId=1, OfflineLogDirs=[d]), 1, "json"),
            (BrokerHeartbeatRequest(BrokerId=1), 0, "msgpack"),
        ]
        expected = sum(len(codec.encode(r.to_wire(v, e), e)) for r, v, e in sent)
        assert c.sent_bytes == {"BrokerHeartbeat": expected}
    assert [v for _, v in calls] == [1, 1, 0]
    assert calls[0][0].OfflineLogDirs == [d] and calls[1][0].OfflineLogDirs == [d]


async def test_absent_version_header_means_highest(server: tuple[web.Application, str]) -> None:
    _, url = server
    body = json.dumps(BrokerHeartbeatRequest(BrokerId=1).to_wire(1)).encode()
    status, _, headers = await _post(f"{url}/rpc/BrokerHeartbeat", body, "application/json")
    assert status == 200 and headers["Kafka-Api-Version"] == "1"
    assert calls[-1][1] == 1


@pytest.mark.parametrize(
    "body,ctype",
    [
        (b"\xc1\xff garbage", "application/msgpack"),
        (b"{not json", "application/json"),
        (b"[1,2,3]", "application/json"),
        (b'{"BrokerId": "one"}', "application/json"),
        (b'{"BrokerId": 1}', "application/json"),
        (b"", "application/json"),
        (b"{}", "text/plain"),
    ],
)
async def test_bad_bodies_are_400_invalid_request(
    server: tuple[web.Application, str], body: bytes, ctype: str
) -> None:
    _, url = server
    status, data, _ = await _post(f"{url}/rpc/BrokerHeartbeat", body, ctype)
    assert status == 400
    assert data["ErrorCode"] == Errors.INVALID_REQUEST
    assert data["ErrorMessage"] and "Traceback" not in data["ErrorMessage"]
    assert calls == []


async def test_error_reply_uses_request_encoding(server: tuple[web.Application, str]) -> None:
    _, url = server
    status, data, headers = await _post(
        f"{url}/rpc/BrokerHeartbeat", msgpack.packb({"BrokerId": "x"}), "application/msgpack"
    )
    assert status == 400 and headers["Content-Type"].startswith("application/msgpack")
    assert data["ErrorCode"] == 42


async def test_unknown_api_is_404(server: tuple[web.Application, str]) -> None:
    _, url = server
    for api in ("NoSuchApi", "BrokerRegistration"):  # the second is known but not served here
        status, data, _ = await _post(f"{url}/rpc/{api}", b"{}", "application/json")
        assert status == 404 and api in data["ErrorMessage"]


@pytest.mark.parametrize("version,code", [("2", 35), ("-1", 35), ("abc", 42)])
async def test_bad_version_header(server: tuple[web.Application, str], version: str, code: int) -> None:
    _, url = server
    body = json.dumps(BrokerHeartbeatRequest(BrokerId=1).to_wire(1)).encode()
    status, data, _ = await _post(f"{url}/rpc/BrokerHeartbeat", body, "application/json", version)
    assert status == 400 and data["ErrorCode"] == code


async def test_kafka_error_from_handler_becomes_error_code(server: tuple[web.Application, str]) -> None:
    _, url = server
    body = json.dumps(BrokerHeartbeatRequest(BrokerId=13).to_wire(1)).encode()
    status, data, headers = await _post(f"{url}/rpc/BrokerHeartbeat", body, "application/json")
    assert status == 200
    assert data == BrokerHeartbeatResponse(ErrorCode=Errors.STALE_BROKER_EPOCH).to_wire(1)
    assert headers["Kafka-Error-Message"] == "epoch 1 is stale second line"
    async with RpcClient(url) as c:
        resp = await c.call("BrokerHeartbeat", BrokerHeartbeatRequest(BrokerId=13))
    assert resp.ErrorCode == Errors.STALE_BROKER_EPOCH and resp.IsFenced is True


async def test_unexpected_exception_is_unknown_server_error(
    server: tuple[web.Application, str], capsys: pytest.CaptureFixture[str]
) -> None:
    _, url = server
    body = json.dumps(BrokerHeartbeatRequest(BrokerId=666).to_wire(1)).encode()
    status, data, _ = await _post(f"{url}/rpc/BrokerHeartbeat", body, "application/json")
    assert status == 200 and data["ErrorCode"] == Errors.UNKNOWN_SERVER_ERROR
    assert "ZeroDivisionError" not in json.dumps(data)


async def test_client_raises_rpc_error_on_refused_request(server: tuple[web.Application, str]) -> None:
    _, url = server
    async with RpcClient(url) as c:
        with pytest.raises(RpcError) as e:
            await c.call("BrokerRegistration", BrokerRegistrationRequest(BrokerId=1))
    assert e.value.http_status == 404


async def test_handlers_can_be_added_later_and_extra_routes_work(server: tuple[web.Application, str]) -> None:
    app, url = server
    from protocol.rpc import BrokerRegistrationResponse

    async def register(req: BrokerRegistrationRequest, version: int) -> BrokerRegistrationResponse:
        return BrokerRegistrationResponse(BrokerEpoch=42)

    add_handler(app, "BrokerRegistration", register)
    async with RpcClient(url) as c:
        assert (await c.call("BrokerRegistration", BrokerRegistrationRequest(BrokerId=1))).BrokerEpoch == 42
    async with aiohttp.ClientSession() as s, s.get(f"{url}/extra") as r:
        assert await r.text() == "extra"
    with pytest.raises(KeyError):
        add_handler(app, "NoSuchApi", register)


async def test_healthz_and_hook(server: tuple[web.Application, str]) -> None:
    app, url = server
    async with aiohttp.ClientSession() as s:
        async with s.get(f"{url}/healthz") as r:
            assert r.status == 200 and (await r.json())["status"] == "ok"

        async def hook() -> dict:
            return {"status": "starting", "online_dirs": 2}

        set_health_hook(app, hook)
        async with s.get(f"{url}/healthz") as r:
            assert r.status == 503 and await r.json() == {"status": "starting", "online_dirs": 2}
        set_health_hook(app, lambda: {"broker_epoch": 5})
        async with s.get(f"{url}/healthz") as r:
            assert r.status == 200 and await r.json() == {"status": "ok", "broker_epoch": 5}

        def broken() -> dict:
            raise RuntimeError("nope")

        set_health_hook(app, broken)
        async with s.get(f"{url}/healthz") as r:
            assert r.status == 503 and "nope" in (await r.json())["error"]


async def test_metrics_count_requests_per_api(server: tuple[web.Application, str]) -> None:
    app, url = server
    async with RpcClient(url) as c:
        await c.call("BrokerHeartbeat", BrokerHeartbeatRequest(BrokerId=1))
        await c.call("BrokerHeartbeat", BrokerHeartbeatRequest(BrokerId=13))
    await _post(f"{url}/rpc/BrokerHeartbeat", b"junk", "application/json")
    async with aiohttp.ClientSession() as s, s.get(f"{url}/metrics") as r:
        text = await r.text()
    assert 'kafka_network_requestmetrics_errors_total{error="NONE",request="BrokerHeartbeat"} 1.0' in text
    assert (
        'kafka_network_requestmetrics_errors_total{error="STALE_BROKER_EPOCH",request="BrokerHeartbeat"} 1.0'
        in text
    )
    assert (
        'kafka_network_requestmetrics_errors_total{error="INVALID_REQUEST",request="BrokerHeartbeat"} 1.0'
        in text
    )
    assert 'kafka_network_requestmetrics_totaltimems_count{request="BrokerHeartbeat"} 3.0' in text
    assert app[REGISTRY] is not create_app()[REGISTRY]  # one registry per app/process


async def test_client_retries_connection_errors_then_gives_up() -> None:
    # Nothing listens on a port we bound and closed.
    sock_server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = sock_server.sockets[0].getsockname()[1]
    sock_server.close()
    await sock_server.wait_closed()
    async with RpcClient(
        f"http://127.0.0.1:{port}", retry=RetryPolicy(attempts=3, initial_backoff=0.001)
    ) as c:
        with pytest.raises(RpcConnectionError) as e:
            await c.call("BrokerHeartbeat", BrokerHeartbeatRequest(BrokerId=1))
    assert e.value.code == Errors.NETWORK_EXCEPTION
    assert "3 attempts" in (e.value.message or "")


async def test_client_retries_until_server_appears() -> None:
    app = create_app({"BrokerHeartbeat": heartbeat})
    runner, port = await start_server(app, "127.0.0.1", 0)
    await runner.cleanup()  # the port is free now; start again on it after the first attempt failed

    attempts = 0

    class Counting(RetryPolicy):
        def delay(self, retry: int) -> float:
            nonlocal attempts
            attempts += 1
            return 0.0

    restarted: list[web.AppRunner] = []

    async def call() -> BrokerHeartbeatResponse:
        async with RpcClient(f"http://127.0.0.1:{port}", retry=Counting(attempts=50)) as c:
            return await c.call("BrokerHeartbeat", BrokerHeartbeatRequest(BrokerId=1))

    task = asyncio.create_task(call())
    while attempts == 0:
        await asyncio.sleep(0.001)
    r2, _ = await start_server(create_app({"BrokerHeartbeat": heartbeat}), "127.0.0.1", port)
    restarted.append(r2)
    try:
        resp = await task
    finally:
        await r2.cleanup()
    assert resp.IsFenced is False and attempts >= 1


async def test_client_timeout_is_request_timed_out() -> None:
    started = asyncio.Event()
    release = asyncio.Event()

    async def slow(req: BrokerHeartbeatRequest, version: int) -> BrokerHeartbeatResponse:
        started.set()
        await release.wait()
        return BrokerHeartbeatResponse()

    runner, port = await start_server(create_app({"BrokerHeartbeat": slow}), "127.0.0.1", 0)
    try:
        async with RpcClient(
            f"http://127.0.0.1:{port}", timeout=0.2, retry=RetryPolicy(attempts=2, initial_backoff=0.001)
        ) as c:
            with pytest.raises(RpcConnectionError) as e:
                await c.call("BrokerHeartbeat", BrokerHeartbeatRequest(BrokerId=1))
        assert e.value.code == Errors.REQUEST_TIMED_OUT
        assert started.is_set()
    finally:
        release.set()
        await runner.cleanup()


async def test_client_reuses_one_connection(server: tuple[web.Application, str]) -> None:
    _, url = server
    async with RpcClient(url) as c:
        for _ in range(5):
            await c.call("BrokerHeartbeat", BrokerHeartbeatRequest(BrokerId=1))
    assert len(peers) == 1  # every call came over the same kept-alive connection


async def test_lone_surrogate_in_a_string_is_invalid_request_naming_the_field(
    server: tuple[web.Application, str],
) -> None:
    """JSON can spell a lone surrogate (\\ud800) that no UTF-8 reply can carry: refuse it at the edge."""
    _, url = server
    body = json.dumps({"BrokerId": 1, "BrokerEpoch": 1, "ClusterId": "\ud800", "CurrentMetadataOffset": 0})
    status, data, _ = await _post(
        f"{url}/rpc/BrokerHeartbeat", body.encode("utf-8", "surrogatepass"), "application/json"
    )
    assert status == 400 and data["ErrorCode"] == Errors.INVALID_REQUEST
    calls_before = len(calls)
    assert "ClusterId" in data["ErrorMessage"]
    # msgpack spells it only as invalid UTF-8, which is refused too
    packed = msgpack.packb(
        {"BrokerId": 1, "BrokerEpoch": 1, "ClusterId": b"\xed\xa0\x80"}, use_bin_type=False
    )
    status, data, _ = await _post(f"{url}/rpc/BrokerHeartbeat", packed, "application/msgpack")
    assert status == 400 and data["ErrorCode"] == Errors.INVALID_REQUEST
    assert len(calls) == calls_before


async def test_body_over_socket_request_max_bytes_is_refused_with_invalid_request() -> None:
    app = create_app({"BrokerHeartbeat": heartbeat}, client_max_size=1000)
    runner, port = await start_server(app, "127.0.0.1", 0)
    try:
        url = f"http://127.0.0.1:{port}/rpc/BrokerHeartbeat"
        big = json.dumps({"BrokerId": 1, "ClusterId": "x" * 5000}).encode()
        status, data, _ = await _post(url, big, "application/json")
        assert status == 413 and data["ErrorCode"] == Errors.INVALID_REQUEST
        assert "socket.request.max.bytes=1000" in data["ErrorMessage"]

        async def chunks() -> AsyncIterator[bytes]:
            yield big[:600]
            yield big[600:]

        # no Content-Length (chunked): refused once the limit is crossed while reading
        async with (
            aiohttp.ClientSession() as s,
            s.post(url, data=chunks(), headers={"Content-Type": "application/json"}) as r,
        ):
            assert r.status == 413
            assert json.loads(await r.read())["ErrorCode"] == Errors.INVALID_REQUEST
    finally:
        await runner.cleanup()


async def test_a_chunked_body_sent_whole_with_its_headers_is_held_to_the_limit_too() -> None:
    # Sent in one write, the body has fully arrived when the handler runs: it is taken as it is,
    # with no deadline, and still measured against socket.request.max.bytes.
    app = create_app({"BrokerHeartbeat": heartbeat}, client_max_size=1000)
    runner, port = await start_server(app, "127.0.0.1", 0)

    async def send(body: bytes) -> tuple[bytes, bytes]:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            writer.write(
                b"POST /rpc/BrokerHeartbeat HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Kafka-Api-Version: 0\r\nTransfer-Encoding: chunked\r\n\r\n"
                + b"%x\r\n" % len(body)
                + body
                + b"\r\n0\r\n\r\n"
            )
            await writer.drain()
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
            length = int(head.split(b"Content-Length: ")[1].split(b"\r\n")[0])
            return head, await asyncio.wait_for(reader.readexactly(length), 30)
        finally:
            writer.close()

    try:
        head, body = await send(json.dumps({"BrokerId": 1, "ClusterId": "x" * 5000}).encode())
        assert head.startswith(b"HTTP/1.1 413"), head
        assert json.loads(body)["ErrorCode"] == Errors.INVALID_REQUEST
        whole = {
            "BrokerId": 1,
            "BrokerEpoch": 7,
            "CurrentMetadataOffset": 0,
            "WantFence": False,
            "WantShutDown": False,
        }
        head, body = await send(json.dumps(whole).encode())
        assert head.startswith(b"HTTP/1.1 200"), head
        assert json.loads(body)["ErrorCode"] == Errors.NONE
    finally:
        await runner.cleanup()


def test_default_body_limit_is_kafkas_socket_request_max_bytes() -> None:
    from protocol.transport.server import DEFAULT_MAX_BODY

    assert DEFAULT_MAX_BODY == 104857600


async def test_a_body_that_trickles_in_is_cut_off_with_request_timed_out() -> None:
    async def heartbeat(req: BrokerHeartbeatRequest, version: int) -> BrokerHeartbeatResponse:
        return BrokerHeartbeatResponse()

    runner, port = await start_server(
        create_app({"BrokerHeartbeat": heartbeat}, body_timeout_s=0.3), "127.0.0.1", 0
    )
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(
            b"POST /rpc/BrokerHeartbeat HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b'Kafka-Api-Version: 0\r\nContent-Length: 1000\r\n\r\n{"BrokerId"'
        )
        await writer.drain()
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
        assert head.startswith(b"HTTP/1.1 408"), head
        body = await asyncio.wait_for(reader.read(200), 30)
        assert b"did not arrive within 0.3s" in body
        writer.close()
    finally:
        await runner.cleanup()


async def test_a_large_body_is_decoded_off_the_loop_and_still_served(
    server: tuple[web.Application, str],
) -> None:
    from protocol.transport import codec
    from protocol.transport.server import DECODE_OFF_LOOP_BYTES

    _, url = server
    dirs = [Uuid.random() for _ in range(5_000)]
    req = BrokerHeartbeatRequest(BrokerId=1, BrokerEpoch=1, CurrentMetadataOffset=0, OfflineLogDirs=dirs)
    # A field the model does not know is ignored, as Kafka ignores unknown tagged fields; here it
    # makes the body large.
    body = codec.encode({**req.to_wire(1, "msgpack"), "Padding": "x" * 300_000}, "msgpack")
    assert len(body) > DECODE_OFF_LOOP_BYTES
    status, data, _ = await _post(f"{url}/rpc/BrokerHeartbeat", body, "application/msgpack", "1")
    assert status == 200 and data.get("ErrorCode", 0) == 0
    assert calls[-1][0].OfflineLogDirs == dirs
    # A large body that is not valid is refused the same way off the loop.
    status, data, _ = await _post(f"{url}/rpc/BrokerHeartbeat", body[:-3], "application/msgpack", "1")
    assert status == 400 and data["ErrorCode"] == Errors.INVALID_REQUEST
    # More offline dirs than any broker has: refused naming the field, before any handler runs.
    calls_before = len(calls)
    many = BrokerHeartbeatRequest.model_construct(
        BrokerId=1,
        BrokerEpoch=1,
        CurrentMetadataOffset=0,
        OfflineLogDirs=[Uuid.random() for _ in range(20_000)],
    )
    wire = {**req.to_wire(1, "msgpack"), "OfflineLogDirs": [d.bytes for d in many.OfflineLogDirs]}
    status, data, _ = await _post(
        f"{url}/rpc/BrokerHeartbeat", codec.encode(wire, "msgpack"), "application/msgpack", "1"
    )
    assert status == 400 and "OfflineLogDirs" in data["ErrorMessage"] and len(calls) == calls_before


async def test_the_collector_waits_only_while_a_request_of_many_structs_is_answered(
    server: tuple[web.Application, str],
) -> None:
    """A request holding many structs is answered with the cyclic collector paused (a full collection
    would walk all its live models while holding the GIL); a large body of few structs is not."""
    import gc

    from protocol.rpc.metadata import MetadataRequest, MetadataResponse
    from protocol.transport import codec
    from protocol.transport.server import DECODE_OFF_LOOP_BYTES, MANY_STRUCTS

    app, url = server
    seen: list[bool] = []

    async def metadata(req: MetadataRequest, version: int) -> MetadataResponse:
        seen.append(gc.isenabled())
        return MetadataResponse(Topics=[{"Name": t.Name, "ErrorCode": 3} for t in req.Topics or []])

    add_handler(app, "Metadata", metadata)
    assert gc.isenabled()
    many = MetadataRequest(Topics=[{"Name": f"topic-{i:020}"} for i in range(MANY_STRUCTS + 1)])
    body = codec.encode(many.to_wire(9, "msgpack"), "msgpack")
    assert len(body) > DECODE_OFF_LOOP_BYTES
    status, data, _ = await _post(f"{url}/rpc/Metadata", body, "application/msgpack", "9")
    assert status == 200 and len(data["Topics"]) == MANY_STRUCTS + 1
    few = MetadataRequest(Topics=[{"Name": "t" * 300_000}])
    status, _, _ = await _post(
        f"{url}/rpc/Metadata", codec.encode(few.to_wire(9, "msgpack"), "msgpack"), "application/msgpack", "9"
    )
    assert status == 200
    assert seen == [False, True]
    assert gc.isenabled()


def test_the_collector_resumes_when_the_last_of_overlapping_pauses_ends() -> None:
    import gc
    import threading

    from protocol.transport import collector_paused

    outer_done = threading.Event()
    inner_in = threading.Event()

    def inner() -> None:
        with collector_paused():
            inner_in.set()
            outer_done.wait(5)
            assert not gc.isenabled()

    with collector_paused():
        t = threading.Thread(target=inner)
        t.start()
        inner_in.wait(5)
    outer_done.set()
    t.join()
    assert gc.isenabled()
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled(), "a collector disabled by someone else stays disabled"
    finally:
        gc.enable()


def test_the_heap_pause_and_the_large_request_pause_are_one_count() -> None:
    """A broker's or controller's load pause (kraftpy.heap) overlapping a large request's pause ends
    with the collector off until the last of them ends."""
    import gc

    from kraftpy.heap import collector_paused as load_paused
    from protocol.transport import collector_paused

    assert gc.isenabled()
    with load_paused():
        with collector_paused():
            pass
        assert not gc.isenabled()
        outer = collector_paused()
        outer.__enter__()
    assert not gc.isenabled(), "the request's pause is still on"
    outer.__exit__(None, None, None)
    assert gc.isenabled()
