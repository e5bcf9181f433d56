"""A Kafka-protocol client for kraftpy's own tools: one connection per broker, ApiVersions first,
then each request at the highest version both sides know (as Kafka's NetworkClient does).

It speaks to a broker's PLAINTEXT listener with the same codec the listener answers with
(protocol.wire), so a tool given a Kafka bootstrap address works as Kafka's tools do.
"""

from __future__ import annotations

import asyncio
import struct
from types import TracebackType
from typing import Any

from protocol.errors import Errors, KafkaError
from protocol.rpc import API_SPECS
from protocol.rpc.api_versions import ApiVersionsRequest, ApiVersionsResponse
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


class KafkaConnection:
    def __init__(self, host: str, port: int, timeout_s: float = 10.0) -> None:
        self.host, self.port, self.timeout_s = host, port, timeout_s
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._versions: dict[int, tuple[int, int]] = {}
        self._correlation = 0
        self._lock = asyncio.Lock()

    async def __aenter__(self) -> KafkaConnection:
        await self.connect()
        return self

    async def __aexit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        await self.close()

    async def connect(self) -> None:
        try:
            self._reader, self._writer = await asyncio.wait_for(
                asyncio.open_connection(self.host, self.port), self.timeout_s
            )
        except (OSError, TimeoutError) as e:
            raise KafkaError(Errors.NETWORK_EXCEPTION, f"cannot reach {self.host}:{self.port}: {e}") from None
        resp = await self._send("ApiVersions", ApiVersionsRequest(ClientSoftwareName="kraftpy"), 3)
        assert isinstance(resp, ApiVersionsResponse)
        self._versions = {k.ApiKey: (k.MinVersion, k.MaxVersion) for k in resp.ApiKeys}

    async def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def version_for(self, name: str) -> int:
        spec = _spec(name)
        theirs = self._versions.get(spec.api_key)
        if theirs is None or theirs[1] < spec.min_version or theirs[0] > spec.max_version:
            raise KafkaError(Errors.UNSUPPORTED_VERSION, f"{self.host}:{self.port} does not serve {name}")
        return min(theirs[1], spec.max_version)

    async def call(self, name: str, req: RpcMessage, version: int | None = None) -> Any:
        return await self._send(name, req, self.version_for(name) if version is None else version)

    async def _send(self, name: str, req: RpcMessage, version: int) -> Any:
        spec = _spec(name)
        api = wire_api(spec, spec.min_version, spec.max_version)
        async with self._lock:
            if self._writer is None or self._reader is None:
                raise KafkaError(Errors.NETWORK_EXCEPTION, f"not connected to {self.host}:{self.port}")
            self._correlation += 1
            client = CLIENT_ID.encode()
            header = struct.pack(">hhih", spec.api_key, version, self._correlation, len(client)) + client
            if api.flexible(version):
                header += b"\x00"
            body = bytearray()
            api.encode_request(req, version, body)
            self._writer.write(_SIZE.pack(len(header) + len(body)) + header + bytes(body))
            try:
                async with asyncio.timeout(self.timeout_s):
                    await self._writer.drain()
                    (size,) = _SIZE.unpack(await self._reader.readexactly(4))
                    frame = await self._reader.readexactly(size)
            except (OSError, asyncio.IncompleteReadError, TimeoutError) as e:
                await self.close()
                raise KafkaError(
                    Errors.NETWORK_EXCEPTION,
                    f"{self.host}:{self.port} closed the connection on {name}: {e!r}",
                ) from None
        (correlation,) = struct.unpack_from(">i", frame)
        if correlation != self._correlation:
            raise KafkaError(Errors.NETWORK_EXCEPTION, f"{name}: answer to request {correlation}")
        pos = 5 if api.response_header_flexible(version) else 4
        return api.decode_response(frame, pos, version)


async def connect_any(bootstrap: str, timeout_s: float = 10.0) -> KafkaConnection:
    """A connection to the first bootstrap broker that answers."""
    last: KafkaError | None = None
    for host, port in parse_bootstrap(bootstrap):
        conn = KafkaConnection(host, port, timeout_s)
        try:
            await conn.connect()
            return conn
        except KafkaError as e:
            last = e
    assert last is not None
    raise last
