"""Body encodings of the RPC transport: msgpack (Uuid = 16-byte bin) and JSON (Uuid = 22-char text)."""

from __future__ import annotations

import json
from typing import Any

import msgpack

from protocol.errors import Errors, KafkaError
from protocol.rpc.message import Encoding

MSGPACK = "application/msgpack"
JSON = "application/json"
CONTENT_TYPES: dict[Encoding, str] = {"msgpack": MSGPACK, "json": JSON}
_BY_MIME: dict[str, Encoding] = {
    MSGPACK: "msgpack",
    "application/x-msgpack": "msgpack",
    "application/vnd.msgpack": "msgpack",
    JSON: "json",
}

API_VERSION_HEADER = "Kafka-Api-Version"
ERROR_MESSAGE_HEADER = "Kafka-Error-Message"


def encoding_for(content_type: str | None) -> Encoding | None:
    """The encoding a Content-Type names (parameters such as charset ignored), or None if unsupported."""
    if not content_type:
        return None
    mime = content_type.split(";", 1)[0].strip().lower()
    return _BY_MIME.get(mime)


def decode(body: bytes, encoding: Encoding) -> Any:
    """Parse a body; anything that is not valid msgpack/JSON becomes KafkaError(INVALID_REQUEST)."""
    try:
        if encoding == "msgpack":
            return msgpack.unpackb(body, raw=False, strict_map_key=True)
        return json.loads(body)
    except Exception as e:  # msgpack raises several unrelated types for bad input
        raise KafkaError(
            Errors.INVALID_REQUEST, f"body is not valid {encoding}: {type(e).__name__}: {e}"
        ) from None


def encode(obj: Any, encoding: Encoding) -> bytes:
    if encoding == "msgpack":
        return msgpack.packb(obj, use_bin_type=True)
    return json.dumps(obj, separators=(",", ":")).encode()
