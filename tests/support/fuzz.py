"""Request bodies for fuzzing the RPC edge: well-formed ones with hostile values, and broken ones.

Pure and seeded: `BodyMaker(seed).body(spec)` walks the request model's fields (their pydantic
annotations and range constraints) and returns what a client would POST: the API version header,
the encoding and the encoded bytes. About half of the bodies are well-formed for their version, with
values from the edges of each field's range (0, -1, the minimum and maximum, long strings, strings
that do not encode, empty and long lists); the rest are mutated: a field dropped, a value of the
wrong type, a nested map where a list belongs, a truncated or random body, a version out of range.
"""

from __future__ import annotations

import json
import random
import types
import typing
from dataclasses import dataclass
from typing import Any

import msgpack
from annotated_types import Ge, Le
from pydantic import BaseModel

from protocol.rpc.message import FieldVersions
from protocol.rpc.spec import ApiSpec
from protocol.uuid import Uuid

MAX_LIST = 64  # a list may be long, but a fuzz body stays small enough to send 100,000 of them
# Texts a client may send: empty, ordinary, long, control characters, a lone surrogate (not UTF-8).
TEXTS = ("", "a", "topic-1", "x" * 300, "\x00\n\t", "é€😀", "\ud800", "..", "-", "a" * 249, "a/b")
INT_SPECIALS = (0, 1, -1, -2, 2, 7, 1000)


@dataclass(frozen=True)
class Body:
    api: str
    version: int
    encoding: str  # "msgpack" or "json"
    data: bytes
    mutated: bool


def _bounds(metadata: list[Any]) -> tuple[int, int]:
    lo, hi = -(2**63), 2**63 - 1
    for m in metadata:
        if isinstance(m, Ge):
            lo = int(m.ge)  # type: ignore[call-overload]
        elif isinstance(m, Le):
            hi = int(m.le)  # type: ignore[call-overload]
    return lo, hi


class BodyMaker:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    # ---------------------------------------------------------------- values

    def _int(self, lo: int, hi: int) -> int:
        r = self.rng.random()
        if r < 0.5:
            v = self.rng.choice(INT_SPECIALS)
            if lo <= v <= hi:
                return v
        if r < 0.7:
            return self.rng.choice((lo, hi))
        return self.rng.randint(max(lo, -(10**6)), min(hi, 10**6))

    def _text(self) -> str:
        if self.rng.random() < 0.7:
            return self.rng.choice(TEXTS)
        return "".join(self.rng.choice("abcxyz-_.0129") for _ in range(self.rng.randint(1, 20)))

    def value(self, annotation: Any, metadata: list[Any], depth: int) -> Any:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            inner, *extra = typing.get_args(annotation)
            flat = []
            for e in extra:
                flat.extend(getattr(e, "metadata", [e]))
            return self.value(inner, [*metadata, *flat], depth)
        if origin in (typing.Union, types.UnionType):
            args = typing.get_args(annotation)
            if type(None) in args and self.rng.random() < 0.2:
                return None
            choices = [a for a in args if a is not type(None)]
            return self.value(self.rng.choice(choices), metadata, depth)
        if origin is list:
            (item,) = typing.get_args(annotation)
            n = self.rng.choice((0, 0, 1, 1, 2, 3, self.rng.randint(0, MAX_LIST))) if depth < 3 else 0
            return [self.value(item, [], depth + 1) for _ in range(n)]
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            return self.struct(annotation, None, depth + 1)
        if annotation is bool:
            return self.rng.random() < 0.5
        if annotation is int:
            return self._int(*_bounds(metadata))
        if annotation is float:
            return self.rng.choice((0.0, -1.0, 1e300, 0.5))
        if annotation is str:
            return self._text()
        if annotation is bytes:
            return self.rng.choice((b"", b"\x00" * 5, bytes(self.rng.randbytes(self.rng.randint(0, 200)))))
        if annotation is Uuid:
            return self.rng.choice(
                (
                    Uuid.ZERO,
                    Uuid.ONE,
                    Uuid(self.rng.randbytes(16)),
                    Uuid(bytes(16)),
                    Uuid.from_string("AAAAAAAAAAAAAAAAAAAAAg"),
                )
            )
        return None

    def struct(self, model: type[BaseModel], version: int | None, depth: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, info in model.model_fields.items():
            fv = next((m for m in info.metadata if isinstance(m, FieldVersions)), None)
            if version is not None and fv is not None and version not in fv.versions:
                continue
            out[name] = self.value(info.annotation, list(info.metadata), depth)
        return out

    # ---------------------------------------------------------------- mutations

    def _junk(self) -> Any:
        return self.rng.choice((None, -1, 2**70, "x", [], {}, [1, "a"], {"a": 1}, True, 1.5, b"\xff"))

    def mutate(self, body: dict[str, Any]) -> Any:
        r = self.rng.random()
        keys = list(body)
        if r < 0.2 and keys:
            body.pop(self.rng.choice(keys))
        elif r < 0.55 and keys:
            body[self.rng.choice(keys)] = self._junk()
        elif r < 0.7:
            body[self.rng.choice(("Unknown", "", "ErrorCode"))] = self._junk()
        elif r < 0.8:
            return self._junk()
        elif r < 0.9 and keys:
            k = self.rng.choice(keys)
            if isinstance(body[k], list) and body[k]:
                body[k] = body[k] * self.rng.randint(2, 50)
            else:
                body[k] = [body[k]] * 3
        else:
            return {k: body[k] for k in keys[: self.rng.randint(0, len(keys))]}
        return body

    # ---------------------------------------------------------------- bodies

    def body(self, spec: ApiSpec) -> Body:
        version = self.rng.randint(spec.min_version, spec.max_version)
        mutated = self.rng.random() < 0.5
        if mutated and self.rng.random() < 0.1:
            version = self.rng.choice((spec.max_version + 1, -1, 32767))
        data: Any = self.struct(spec.request_model, version, 0)
        if mutated:
            data = self.mutate(data)
        encoding = "msgpack" if self.rng.random() < 0.7 else "json"
        raw = encode(data, encoding)
        if mutated and self.rng.random() < 0.1:
            cut = self.rng.randint(0, max(0, len(raw) - 1))
            raw = raw[:cut] if self.rng.random() < 0.5 else self.rng.randbytes(self.rng.randint(0, 64))
        return Body(spec.name, version, encoding, raw, mutated)


def _plain(value: Any, encoding: str) -> Any:
    if isinstance(value, Uuid):
        return value.bytes if encoding == "msgpack" else str(value)
    if isinstance(value, dict):
        return {k: _plain(v, encoding) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v, encoding) for v in value]
    if isinstance(value, bytes) and encoding == "json":
        import base64

        return base64.b64encode(value).decode()
    return value


def encode(data: Any, encoding: str) -> bytes:
    """Bytes a client would send; text that is not UTF-8 (a lone surrogate) goes as is, as a
    hostile client could send it. Integers too large for msgpack go as JSON only."""
    plain = _plain(data, encoding)
    if encoding == "json":
        return json.dumps(plain, ensure_ascii=False).encode("utf-8", "surrogatepass")
    try:
        return msgpack.packb(plain, unicode_errors="surrogatepass")
    except (OverflowError, TypeError, ValueError):
        return json.dumps(plain, ensure_ascii=False, default=str).encode("utf-8", "surrogatepass")
