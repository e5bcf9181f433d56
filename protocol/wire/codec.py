"""Kafka's binary protocol for one request and its response, without I/O.

A frame is a 4-byte big-endian size and that many bytes. A request frame starts with a request
header: ApiKey, ApiVersion, CorrelationId and ClientId (header v1), plus tagged fields when the API
version is flexible (header v2). A response starts with the CorrelationId (header v0), plus tagged
fields when flexible (v1), except ApiVersions, whose response header is always v0.

Bodies are read and written by protocol.codegen from schemas derived from the RPC models
(protocol.wire.schema); the bridge here turns a decoded struct into the RPC model the handlers take,
and a handler's model back into a struct, through the models' own version checks (from_wire and
to_wire), so the HTTP and Kafka transports accept and refuse exactly the same bodies.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from functools import cache
from typing import Any

from protocol.codegen import build_message_class, decoder_for, encoder_for
from protocol.errors import Errors, KafkaError
from protocol.message import MessageDecodeError, Struct
from protocol.rpc.message import RpcMessage
from protocol.rpc.spec import ApiSpec
from protocol.schema import Versions
from protocol.uuid import Uuid
from protocol.varint import decode_unsigned_varint
from protocol.wire.schema import ABSENT_AS_NONE, wire_schema

API_VERSIONS_KEY = 18
_HEADER = struct.Struct(">hhih")
_I32 = struct.Struct(">i")


class FrameError(ValueError):
    """A request the listener cannot answer at all: Kafka closes the connection on these."""


@dataclass(frozen=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


def peek_header(frame: bytes) -> tuple[int, int, int]:
    """(api key, api version, correlation id), readable from any frame of 8 bytes or more: enough
    to answer a request whose body cannot be read."""
    if len(frame) < 8:
        raise FrameError(f"a request of {len(frame)} bytes has no header")
    return struct.unpack_from(">hhi", frame, 0)


def read_request_header(frame: bytes, flexible: bool) -> tuple[RequestHeader, int]:
    """The header and where the body starts. ClientId is a classic (int16-length) nullable string
    in every header version, even the flexible v2."""
    try:
        key, version, correlation, n = _HEADER.unpack_from(frame, 0)
        pos = _HEADER.size
        client_id = None
        if n >= 0:
            client_id = frame[pos : pos + n].decode()
            if len(frame) < pos + n:
                raise FrameError("the request header's ClientId runs past the frame")
            pos += n
        elif n != -1:
            raise FrameError(f"the request header's ClientId has length {n}")
        if flexible:
            count, pos = decode_unsigned_varint(frame, pos)
            for _ in range(count):
                _tag, pos = decode_unsigned_varint(frame, pos)
                size, pos = decode_unsigned_varint(frame, pos)
                pos += size
            if pos > len(frame):
                raise FrameError("the request header's tagged fields run past the frame")
    except (struct.error, IndexError, UnicodeDecodeError, ValueError) as e:
        if isinstance(e, FrameError):
            raise
        raise FrameError(f"unreadable request header: {e}") from None
    return RequestHeader(key, version, correlation, client_id), pos


def response_header(correlation_id: int, flexible: bool) -> bytes:
    return _I32.pack(correlation_id) + (b"\x00" if flexible else b"")


@dataclass(frozen=True)
class WireApi:
    """One API as the Kafka listener serves it: its spec and the codegen classes of its bodies."""

    spec: ApiSpec
    request_cls: Any
    response_cls: Any

    @property
    def api_key(self) -> int:
        return self.spec.api_key

    def flexible(self, version: int) -> bool:
        return version in Versions.parse(self.spec.flexible_versions)

    def response_header_flexible(self, version: int) -> bool:
        return self.flexible(version) and self.spec.api_key != API_VERSIONS_KEY

    def decode_request(self, frame: bytes, pos: int, version: int) -> RpcMessage:
        """The request model; KafkaError(INVALID_REQUEST) when the bytes do not hold one."""
        try:
            body, _end = decoder_for(self.request_cls, version)(frame, pos)
        except (MessageDecodeError, IndexError, struct.error, UnicodeDecodeError, ValueError) as e:
            raise KafkaError(Errors.INVALID_REQUEST, f"{self.spec.name} v{version}: {e}") from None
        return self.spec.request_model.from_wire(to_plain(body, version), version)

    def encode_response(self, msg: RpcMessage, version: int, out: bytearray) -> None:
        """`msg` written at `version` onto `out`; KafkaError(UNSUPPORTED_VERSION) when it cannot be."""
        data = msg.to_wire(version, "msgpack")
        encoder_for(self.response_cls, version)(from_plain(self.response_cls, data), out)

    def encode_request(self, msg: RpcMessage, version: int, out: bytearray) -> None:
        """For clients and tests: `msg` written as a request body."""
        data = msg.to_wire(version, "msgpack")
        encoder_for(self.request_cls, version)(from_plain(self.request_cls, data), out)

    def decode_response(self, frame: bytes, pos: int, version: int) -> RpcMessage:
        body, _end = decoder_for(self.response_cls, version)(frame, pos)
        return self.spec.response_model.from_wire(to_plain(body, version), version)


@cache
def wire_api(spec: ApiSpec, min_version: int, max_version: int) -> WireApi:
    valid = f"{min_version}-{max_version}"
    module = __name__
    req = build_message_class(
        wire_schema(spec.request_model, spec.api_key, valid, spec.flexible_versions), module
    )
    resp = build_message_class(
        wire_schema(spec.response_model, spec.api_key, valid, spec.flexible_versions), module
    )
    return WireApi(spec, req, resp)


# ---- struct <-> the dicts RpcMessage.from_wire / to_wire speak --------------------------------------


def to_plain(obj: Struct, version: int) -> dict[str, Any]:
    """A decoded struct as a wire dict: the fields `version` has, structs as dicts."""
    out: dict[str, Any] = {}
    owner = type(obj).__name__
    for f in obj._FIELDS:
        if not f.present_in(version):
            continue
        value = getattr(obj, f.name)
        if f.is_struct and value is not None:
            if f.is_array:
                value = [to_plain(v, version) for v in value]
            elif (owner, f.name) in ABSENT_AS_NONE and value == type(value)():
                continue
            else:
                value = to_plain(value, version)
        out[f.name] = value
    return out


def from_plain(cls: type[Struct], data: dict[str, Any]) -> Struct:
    """A struct of `cls` from a wire dict (msgpack flavour: Uuids as 16 bytes)."""
    kwargs: dict[str, Any] = {}
    for f in cls._FIELDS:
        if f.name not in data:
            continue
        value = data[f.name]
        if value is not None:
            if f.is_struct:
                sub = cls._STRUCT_CLASSES[f.name]
                value = [from_plain(sub, v) for v in value] if f.is_array else from_plain(sub, value)
            elif f.element_type == "uuid":
                value = [_uuid(v) for v in value] if f.is_array else _uuid(value)
        kwargs[f.name] = value
    return cls(**kwargs)


def _uuid(value: Any) -> Uuid:
    return value if isinstance(value, Uuid) else Uuid(bytes(value))
