"""The base of every generated message and struct class, and the codec's errors.

Instances are value objects: attributes are Kafka's field names, equality is by value, and
callers treat them as immutable (use `replace` to derive a changed copy).
"""

from __future__ import annotations

import base64
from typing import Any, ClassVar

from protocol.schema import Field, MessageSchema
from protocol.uuid import Uuid


class MessageDecodeError(ValueError):
    """Bytes that do not hold a valid message at the version read."""


class MessageEncodeError(ValueError):
    """A message whose values cannot be written (a null where none is allowed, a wrong type...)."""


class UnsupportedVersionError(MessageEncodeError):
    """The version asked for is outside the message's range, or lacks a field that is set."""


class Struct:
    """A message or a nested struct. Subclasses are generated from schemas by protocol.codegen."""

    __slots__ = ("_unknown_tagged_fields",)

    _unknown_tagged_fields: list[tuple[int, bytes]] | None
    # filled in by codegen
    _FIELDS: ClassVar[tuple[Field, ...]] = ()
    _FIELD_NAMES: ClassVar[tuple[str, ...]] = ()
    _STRUCT_CLASSES: ClassVar[dict[str, type[Struct]]] = {}

    def __init__(self, **kwargs: Any) -> None:  # replaced per class by codegen
        raise TypeError(f"{type(self).__name__} is abstract")

    @property
    def unknown_tagged_fields(self) -> list[tuple[int, bytes]]:
        """Tagged fields read from the wire that this schema does not know, as (tag, raw bytes)."""
        return list(self._unknown_tagged_fields or ())

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, n) for n in self._FIELD_NAMES)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, Struct)
        return self._values() == other._values() and (self._unknown_tagged_fields or None) == (
            other._unknown_tagged_fields or None
        )

    __hash__ = None  # type: ignore[assignment]  # holds lists

    def __repr__(self) -> str:
        inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in self._FIELD_NAMES)
        return f"{type(self).__qualname__}({inner})"

    def replace(self, **changes: Any) -> Any:
        """A copy with some fields changed (records are never mutated in place)."""
        values = {n: getattr(self, n) for n in self._FIELD_NAMES}
        unknown = set(changes) - set(values)
        if unknown:
            raise TypeError(f"{type(self).__name__} has no field(s) {', '.join(sorted(unknown))}")
        values.update(changes)
        copy = type(self)(**values)
        copy._unknown_tagged_fields = self._unknown_tagged_fields
        return copy

    def to_json_dict(self, version: int | None = None) -> dict[str, Any]:
        """Kafka field names to JSON values (Uuids as text, bytes as base64); with a version,
        fields the version lacks are left out."""
        out: dict[str, Any] = {}
        for f in self._FIELDS:
            if version is not None and not f.present_in(version):
                continue
            out[f.name] = _to_json(getattr(self, f.name), version)
        return out

    @classmethod
    def from_json_dict(cls, data: dict[str, Any]) -> Any:
        """The inverse of to_json_dict; absent fields take their defaults."""
        kwargs: dict[str, Any] = {}
        by_name = {f.name: f for f in cls._FIELDS}
        for name, value in data.items():
            f = by_name.get(name)
            if f is None:
                raise ValueError(f"{cls.__name__} has no field {name}")
            kwargs[name] = _from_json(cls, f, value)
        return cls(**kwargs)


class MessageMixin:
    """Class attributes every top-level message carries."""

    SCHEMA: ClassVar[MessageSchema]
    NAME: ClassVar[str]
    API_KEY: ClassVar[int]
    LOWEST_VERSION: ClassVar[int]
    HIGHEST_VERSION: ClassVar[int]


def _to_json(value: Any, version: int | None) -> Any:
    if isinstance(value, Struct):
        return value.to_json_dict(version)
    if isinstance(value, Uuid):
        return str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, list | tuple):
        return [_to_json(v, version) for v in value]
    return value


def _from_json(owner: type[Struct], f: Field, value: Any) -> Any:
    if value is None:
        return None
    if f.is_array:
        return [_element_from_json(owner, f, v) for v in value]
    return _element_from_json(owner, f, value)


def _element_from_json(owner: type[Struct], f: Field, value: Any) -> Any:
    t = f.element_type
    if f.is_struct:
        return owner._STRUCT_CLASSES[f.name].from_json_dict(value)
    if t == "uuid":
        return Uuid.from_string(value)
    if t == "bytes":
        return base64.b64decode(value)
    if t == "float64":
        return float(value)
    return value
