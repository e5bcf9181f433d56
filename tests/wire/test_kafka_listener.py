"""The Kafka-protocol listener over real sockets on 127.0.0.1: framing, ApiVersions, ordering, and
what it does with requests it cannot or will not answer."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import AsyncIterator

import pytest

from protocol.errors import Errors, KafkaError
from protocol.rpc import API_SPECS
from protocol.rpc.api_versions import SPEC as API_VERSIONS
from protocol.rpc.api_versions import ApiVersionsRequest
from protocol.rpc.describe_cluster import DescribeClusterRequest, DescribeClusterResponse
from protocol.transport import create_app
from protocol.transport.kafka_server import KafkaListener
from protocol.wire.codec import wire_api

DESCRIBE_CLUSTER = API_SPECS["DescribeCluster"]


class Calls:
    def __init__(self) -> None:
        self.seen: list[int] = []
        self.gate: asyncio.Event | None = None
        self.fail: BaseException | None = None

    async def describe_cluster(self, req: DescribeClusterRequest, version: int) -> DescribeClusterResponse:
        self.seen.append(version)
        if self.gate is not None:
            await self.gate.wait()
        if self.fail is not None:
            raise self.fail
        return DescribeClusterResponse(ClusterId="c1", ControllerId=7)


@pytest.fixture
async def served() -> AsyncIterator[tuple[KafkaListener, int, Calls]]:
    calls = Calls()
    app = create_app({"DescribeCluster": calls.describe_cluster})
    listener = KafkaListener(app, "PLAINTEXT", ("DescribeCluster",), max_request_bytes=4096)
    port = await listener.start("127.0.0.1", 0)
    try:
        yield listener, port, calls
    finally:
        await listener.stop()


def frame(
    api_key: int, version: int, correlation: int, body: bytes, flexible: bool, client: bytes = b"t"
) -> bytes:
    header = struct.pack(">hhih", api_key, version, correlation, len(client)) + client
    if flexible:
        header += b"\x00"
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


def request(spec, msg, version: int, correlation: int) -> bytes:  # type: ignore[no-untyped-def]
    api = wire_api(spec, spec.min_version, spec.max_version)
    body = bytearray()
    api.encode_request(msg, version, body)
    return frame(spec.api_key, version, correlation, bytes(body), api.flexible(version))


async def read_answer(reader: asyncio.StreamReader) -> bytes:
    (size,) = struct.unpack(">i", await reader.readexactly(4))
    return await reader.readexactly(size)


def describe_answer(data: bytes, version: int) -> tuple[int, DescribeClusterResponse]:
    api = wire_api(DESCRIBE_CLUSTER, DESCRIBE_CLUSTER.min_version, DESCRIBE_CLUSTER.max_version)
    (correlation,) = struct.unpack_from(">i", data)
    resp = api.decode_response(data, 5, version)  # header v1: correlation id and empty tags
    assert isinstance(resp, DescribeClusterResponse)
    return correlation, resp


async def closed(reader: asyncio.StreamReader) -> bool:
    return await asyncio.wait_for(reader.read(), 5) == b""


async def test_api_versions_lists_exactly_what_is_served(served) -> None:  # type: ignore[no-untyped-def]
    _, port, _ = served
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(
        request(API_VERSIONS, ApiVersionsRequest(ClientSoftwareName="t", ClientSoftwareVersion="1"), 3, 9)
    )
    data = await read_answer(reader)
    writer.close()
    (correlation,) = struct.unpack_from(">i", data)
    assert correlation == 9
    # the response header stays v0 (no tagged fields) even at a flexible version
    resp = wire_api(API_VERSIONS, 0, 4).decode_response(data, 4, 3)
    assert resp.ErrorCode == 0
    assert {(k.ApiKey, k.MinVersion, k.MaxVersion) for k in resp.ApiKeys} == {(18, 0, 4), (60, 0, 1)}


async def test_api_versions_at_an_unknown_version_answers_v0_with_the_list(served) -> None:  # type: ignore[no-untyped-def]
    _, port, _ = served
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(frame(18, 99, 5, b"\x00garbage", flexible=True))
    data = await read_answer(reader)
    resp = wire_api(API_VERSIONS, 0, 4).decode_response(data, 4, 0)
    assert resp.ErrorCode == Errors.UNSUPPORTED_VERSION
    assert any(k.ApiKey == 18 for k in resp.ApiKeys)
    writer.close()


async def test_pipelined_requests_are_answered_in_order(served) -> None:  # type: ignore[no-untyped-def]
    _, port, calls = served
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(
        b"".join(
            request(DESCRIBE_CLUSTER, DescribeClusterRequest(), v, c) for c, v in ((1, 0), (2, 1), (3, 0))
        )
    )
    answers = [describe_answer(await read_answer(reader), v) for v in (0, 1, 0)]
    writer.close()
    assert [c for c, _ in answers] == [1, 2, 3]
    assert all(r.ClusterId == "c1" and r.ControllerId == 7 for _, r in answers)
    assert calls.seen == [0, 1, 0]


async def test_a_slow_connection_does_not_stall_another(served) -> None:  # type: ignore[no-untyped-def]
    _, port, calls = served
    calls.gate = asyncio.Event()
    slow_r, slow_w = await asyncio.open_connection("127.0.0.1", port)
    slow_w.write(request(DESCRIBE_CLUSTER, DescribeClusterRequest(), 0, 1))
    fast_r, fast_w = await asyncio.open_connection("127.0.0.1", port)
    fast_w.write(request(API_VERSIONS, ApiVersionsRequest(), 0, 2))
    (correlation,) = struct.unpack_from(">i", await asyncio.wait_for(read_answer(fast_r), 5))
    assert correlation == 2
    calls.gate.set()
    assert describe_answer(await read_answer(slow_r), 0)[0] == 1
    slow_w.close()
    fast_w.close()


@pytest.mark.parametrize(
    ("what", "data"),
    [
        ("a frame over socket.request.max.bytes", struct.pack(">i", 4097) + b"\x00" * 16),
        ("a negative frame size", struct.pack(">i", -1)),
        ("an unknown api key", frame(999, 0, 1, b"", flexible=False)),
        ("an api not served here", frame(0, 9, 1, b"", flexible=True)),
        ("a version outside the advertised range", frame(60, 7, 1, b"\x00", flexible=True)),
        ("a body that cannot be read", frame(60, 0, 1, b"\x05", flexible=True)),
        ("a header shorter than its fields", struct.pack(">i", 6) + b"\x00\x3c\x00\x00\x00\x00"),
    ],
)
async def test_bad_requests_close_the_connection_and_reach_no_handler(served, what: str, data: bytes) -> None:  # type: ignore[no-untyped-def]
    _, port, calls = served
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(data)
    assert await closed(reader), what
    writer.close()
    assert calls.seen == []
    # the listener itself is unharmed
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request(DESCRIBE_CLUSTER, DescribeClusterRequest(), 0, 4))
    assert describe_answer(await read_answer(reader), 0)[0] == 4
    writer.close()


async def test_a_truncated_frame_leaves_the_listener_serving(served) -> None:  # type: ignore[no-untyped-def]
    _, port, calls = served
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    whole = request(DESCRIBE_CLUSTER, DescribeClusterRequest(), 0, 1)
    writer.write(whole[: len(whole) - 3])
    await writer.drain()
    writer.close()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request(DESCRIBE_CLUSTER, DescribeClusterRequest(), 0, 2))
    assert describe_answer(await read_answer(reader), 0)[0] == 2
    writer.close()
    assert calls.seen == [0]


@pytest.mark.parametrize(
    ("failure", "code"),
    [
        (KafkaError(Errors.NOT_CONTROLLER, "moved"), Errors.NOT_CONTROLLER),
        (RuntimeError("bug"), Errors.UNKNOWN_SERVER_ERROR),
    ],
)
async def test_a_failing_handler_gets_the_apis_error_answer(
    served, failure: BaseException, code: Errors
) -> None:  # type: ignore[no-untyped-def]
    _, port, calls = served
    calls.fail = failure
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request(DESCRIBE_CLUSTER, DescribeClusterRequest(), 1, 3))
    correlation, resp = describe_answer(await read_answer(reader), 1)
    writer.close()
    assert (correlation, resp.ErrorCode) == (3, code)


async def test_answers_decode_with_kafka_python(served) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("kafka", reason="kafka-python is not installed")
    from kafka.protocol.metadata.api_versions import ApiVersionsResponse as KafkaApiVersionsResponse

    _, port, _ = served
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request(API_VERSIONS, ApiVersionsRequest(), 3, 11))
    data = await read_answer(reader)
    writer.close()
    resp = KafkaApiVersionsResponse.decode(data[4:], version=3)
    assert {k.api_key for k in resp.api_keys} == {18, 60}


async def test_a_large_request_and_its_large_answer_are_read_and_written() -> None:
    """Past DECODE_OFF_LOOP_BYTES the body is read on a worker thread, and an answer of many structs
    is written there: the bytes must be the same as on the loop."""
    from protocol.rpc.metadata import MetadataRequest, MetadataResponse

    async def metadata(req: MetadataRequest, version: int) -> MetadataResponse:
        return MetadataResponse(
            Topics=[MetadataResponse.MetadataResponseTopic(Name=t.Name) for t in req.Topics or ()]
        )

    spec = API_SPECS["Metadata"]
    app = create_app({"Metadata": metadata})
    listener = KafkaListener(app, "PLAINTEXT", ("Metadata",))
    port = await listener.start("127.0.0.1", 0)
    try:
        names = [f"topic-{i:06d}" for i in range(30_000)]
        req = MetadataRequest(Topics=[MetadataRequest.MetadataRequestTopic(Name=n) for n in names])
        data = request(spec, req, 12, 21)
        assert len(data) > 256 * 1024
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(data)
        answer = await read_answer(reader)
        writer.close()
        resp = wire_api(spec, spec.min_version, spec.max_version).decode_response(answer, 5, 12)
        assert [t.Name for t in resp.Topics] == names
    finally:
        await listener.stop()
