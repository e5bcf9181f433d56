"""A pydantic field type for Kafka `bytes`/`records` fields: raw bytes in msgpack, base64 text in JSON.

RpcMessage's wire encoder passes bytes through untouched, which msgpack sends as bin; JSON has no
bytes, so models with such fields mix in `BytesWireMixin` to turn them into base64 text there.
"""

from __future__ import annotations

import base64
import binascii
from typing import Annotated, Any

from pydantic import GetCoreSchemaHandler, SerializationInfo
from pydantic_core import core_schema

from protocol.rpc.message import Encoding, RpcMessage


def _to_bytes(value: Any) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    if isinstance(value, str):
        try:
            return base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError) as e:
            raise ValueError(f"bytes in JSON are base64 text: {e}") from None
    raise ValueError(f"expected bytes (msgpack bin) or base64 text, got {type(value).__name__}")


def _from_bytes(value: bytes, info: SerializationInfo) -> Any:
    if info.mode_is_json():
        return base64.b64encode(value).decode("ascii")
    return value


class _BytesSchema:
    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.no_info_plain_validator_function(
            _to_bytes,
            serialization=core_schema.plain_serializer_function_ser_schema(
                _from_bytes, info_arg=True, when_used="always"
            ),
        )

    def __get_pydantic_json_schema__(self, schema: Any, handler: Any) -> dict[str, Any]:
        return {"type": "string", "contentEncoding": "base64"}


Bytes = Annotated[bytes, _BytesSchema()]
"""Field annotation for Kafka `bytes` / `records`: validates from bytes or base64 text."""


class BytesWireMixin(RpcMessage):
    """Encodes this model's bytes fields as base64 text when the body is JSON."""

    def _to_wire(self, version: int, encoding: Encoding, path: str) -> dict[str, Any]:
        out = super()._to_wire(version, encoding, path)
        if encoding == "json":
            for name, value in out.items():
                if isinstance(value, bytes | bytearray | memoryview):
                    out[name] = base64.b64encode(bytes(value)).decode("ascii")
        return out
