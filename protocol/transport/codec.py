"""Body encodings of the RPC transport: msgpack (Uuid = 16-byte bin) and JSON (Uuid = 22-char text)."""

from __future__ import annotations

import json
import re
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
CLIENT_ID_HEADER = "Kafka-Client-Id"
"""The caller's client.id, as a Kafka request header carries it (handlers see it in the request context)."""


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
        # Strict UTF-8 first: json.loads(bytes) would let raw surrogate bytes through (surrogatepass).
        obj = json.loads(body.decode("utf-8"))
    except Exception as e:  # msgpack raises several unrelated types for bad input
        raise KafkaError(
            Errors.INVALID_REQUEST, f"body is not valid {encoding}: {type(e).__name__}: {e}"
        ) from None
    # JSON's \uXXXX escapes can spell a lone surrogate, a str no UTF-8 reply, record or log line can
    # carry; msgpack cannot (its strings must be valid UTF-8). Only bodies with such an escape are walked.
    if _SURROGATE_ESCAPE.search(body) is not None:
        where = _surrogate_path(obj, "")
        if where is not None:
            raise KafkaError(
                Errors.INVALID_REQUEST, f"field '{where or '<body>'}' holds a lone UTF-16 surrogate, not text"
            )
    return obj


_SURROGATE_ESCAPE = re.compile(rb"\\[uU][dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _surrogate_path(obj: Any, path: str) -> str | None:
    """The path of the first string (value or key) holding a surrogate, or None."""
    if isinstance(obj, str):
        return path if _SURROGATE.search(obj) else None
    if isinstance(obj, dict):
        for k, v in obj.items():
            sub = f"{path}.{k}" if path else str(k)
            if _SURROGATE.search(k):
                return path or "<key>"
            found = _surrogate_path(v, sub)
            if found is not None:
                return found
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            found = _surrogate_path(v, f"{path}[{i}]")
            if found is not None:
                return found
    return None


def encode(obj: Any, encoding: Encoding) -> bytes:
    if encoding == "msgpack":
        return msgpack.packb(obj, use_bin_type=True)
    return json.dumps(obj, separators=(",", ":")).encode()
