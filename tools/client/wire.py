"""A Kafka-protocol client for kraftpy's own tools: one connection per broker, ApiVersions first,
then each request at the highest version both sides know (as Kafka's NetworkClient does).

It speaks to a broker's PLAINTEXT listener with the same codec the listener answers with
(protocol.wire), so a tool given a Kafka bootstrap address works as Kafka's tools do.
"""

from __future__ import annotations

import asyncio
import struct
from typing import Any

from protocol.errors import Errors, KafkaError
from protocol.rpc import API_SPECS
from protocol.rpc.api_versions import ApiVersionsRequest
from protocol.rpc.broker_fetch import FETCH_SPEC
from protocol.rpc.message import RpcMessage
from protocol.rpc.spec import ApiSpec
from protocol.wire.codec import wire_api

_SIZE = struct.Struct(">i")
CLIENT_ID = "kraftpy-tools"


def _spec(name: str) -> ApiSpec:
    return FETCH_SPEC if name == "Fetch" else API_SPECS[name]


def parse_bootstrap(servers: str) -> list[tuple[str, int]]:
    out = []
    for item in servers.split(","):
        host, sep, port = item.strip().rpartition(":")
        if not sep or not port.isdigit():
            raise ValueError(f"'{item}' is not host:port")
        out.append((host.strip("[]"), int(port)))
    return out


async def connect_any(bootstrap: str, timeout_s: float = 10.0) -> KafkaRpcClient:
    """A connection to the first bootstrap broker that answers."""
    last: KafkaError | None = None
    for host, port in parse_bootstrap(bootstrap):
        conn = KafkaRpcClient(host, port, timeout_s)
        try:
            await conn.connect()
            return conn
        except KafkaError as e:
            last = e
    assert last is not None
    raise last


class KafkaRpcClient:
    """RpcClient's interface (`call(api, request, version)`, `close()`) over Kafka's protocol, so the
    tools' client works against a broker's Kafka listener. Requests are pipelined on one connection;
    the broker answers them in order."""

    scheme = "kafka"

    def __init__(self, host: str, port: int, timeout: float = 30.0) -> None:
        self.host, self.port, self.timeout = host, port, timeout
        self.base_url = f"kafka://{host}:{port}"
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._versions: dict[int, tuple[int, int]] = {}
        self._pending: list[tuple[int, asyncio.Future[bytes]]] = []
        self._correlation = 0
        self._connecting: asyncio.Lock | None = None
        self._reading: asyncio.Task[None] | None = None

    async def __aenter__(self) -> KafkaRpcClient:
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def connect(self) -> None:
        """Connect and learn the broker's API versions (done by the first call otherwise)."""
        if self._connecting is None:
            self._connecting = asyncio.Lock()
        async with self._connecting:
            if self._writer is not None:
                return
            try:
                self._reader, self._writer = await asyncio.wait_for(
                    asyncio.open_connection(self.host, self.port), self.timeout
                )
            except (OSError, TimeoutError) as e:
                raise _unreachable(self.base_url, "connect", e) from None
            self._reading = asyncio.get_running_loop().create_task(self._read_answers())
            resp = await self._exchange("ApiVersions", ApiVersionsRequest(ClientSoftwareName="kraftpy"), 3)
            self._versions = {k.ApiKey: (k.MinVersion, k.MaxVersion) for k in resp.ApiKeys}

    async def _read_answers(self) -> None:
        assert self._reader is not None
        try:
            while True:
                (size,) = _SIZE.unpack(await self._reader.readexactly(4))
                frame = await self._reader.readexactly(size)
                if not self._pending:
                    raise ConnectionError("an answer to no request")
                correlation, fut = self._pending.pop(0)
                if struct.unpack_from(">i", frame)[0] != correlation:
                    raise ConnectionError("answers out of order")
                if not fut.done():
                    fut.set_result(frame)
        except (OSError, asyncio.IncompleteReadError, ConnectionError) as e:
            self._fail_all(e)

    def _fail_all(self, e: BaseException) -> None:
        pending, self._pending = self._pending, []
        for _, fut in pending:
            if not fut.done():
                fut.set_exception(_unreachable(self.base_url, "read", e))
        if self._writer is not None:
            self._writer.close()
        self._writer = self._reader = None

    async def _exchange(self, name: str, req: RpcMessage, version: int, timeout: float | None = None) -> Any:
        spec = _spec(name)
        api = wire_api(spec, spec.min_version, spec.max_version)
        if self._writer is None:
            raise _unreachable(self.base_url, name, ConnectionError("not connected"))
        self._correlation += 1
        client = CLIENT_ID.encode()
        header = struct.pack(">hhih", spec.api_key, version, self._correlation, len(client)) + client
        if api.flexible(version):
            header += b"\x00"
        body = bytearray()
        api.encode_request(req, version, body)
        fut: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        self._pending.append((self._correlation, fut))
        self._writer.write(_SIZE.pack(len(header) + len(body)) + header + bytes(body))
        try:
            async with asyncio.timeout(timeout or self.timeout):
                await self._writer.drain()
                frame = await fut
        except TimeoutError:
            from protocol.transport.errors import RpcConnectionError

            self._fail_all(TimeoutError(f"{name} timed out"))
            raise RpcConnectionError(
                Errors.REQUEST_TIMED_OUT, f"{name} to {self.base_url} timed out"
            ) from None
        except OSError as e:
            self._fail_all(e)
            raise _unreachable(self.base_url, name, e) from None
        pos = 5 if api.response_header_flexible(version) else 4
        return api.decode_response(frame, pos, version)

    def version_for(self, name: str) -> int:
        """The highest version of `name` both sides know (once connected)."""
        return self._version(name, None)

    def _version(self, name: str, wanted: int | None) -> int:
        spec = _spec(name)
        theirs = self._versions.get(spec.api_key)
        if theirs is None or theirs[1] < spec.min_version or theirs[0] > spec.max_version:
            raise KafkaError(Errors.UNSUPPORTED_VERSION, f"{self.base_url} does not serve {name}")
        top = min(theirs[1], spec.max_version)
        return top if wanted is None else max(min(wanted, top), max(theirs[0], spec.min_version))

    async def call(
        self,
        api: str,
        request: RpcMessage,
        version: int | None = None,
        *,
        timeout: float | None = None,
        **_: Any,
    ) -> Any:
        await self.connect()
        return await self._exchange(api, request, self._version(api, version), timeout)

    async def close(self) -> None:
        if self._reading is not None:
            self._reading.cancel()
            await asyncio.gather(self._reading, return_exceptions=True)
            self._reading = None
        self._fail_all(ConnectionError("closed"))


def _unreachable(url: str, what: str, e: BaseException) -> KafkaError:
    from protocol.transport.errors import RpcConnectionError

    return RpcConnectionError(Errors.NETWORK_EXCEPTION, f"{what} to {url} failed: {e!r}")


async def speaks_kafka(host: str, port: int, timeout_s: float = 5.0) -> bool:
    """Whether host:port is a Kafka-protocol listener (else kraftpy's HTTP RPC): an ApiVersions v0
    frame gets a Kafka answer from one and an HTTP error status line from the other."""
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout_s)
    except (OSError, TimeoutError) as e:
        raise _unreachable(f"{host}:{port}", "connect", e) from None
    try:
        client = CLIENT_ID.encode()
        header = struct.pack(">hhih", 18, 0, 0, len(client)) + client
        writer.write(_SIZE.pack(len(header)) + header)
        head = await asyncio.wait_for(reader.readexactly(4), timeout_s)
        return not head.startswith(b"HTTP")
    except (OSError, TimeoutError, asyncio.IncompleteReadError) as e:
        raise _unreachable(f"{host}:{port}", "probe", e) from None
    finally:
        writer.close()
