"""The vocabulary for writing Kafka message schemas as Python data.

A schema is a `MessageSchema` holding `Field`s; a field's type is spelt as in Kafka
(`int32`, `string`, `uuid`, `[]int32`, `[]BrokerEndpoint`, `KRaftVersionFeature`): a name that
is not a primitive is a struct whose fields are given inline. Version ranges are spelt
`"0+"`, `"1-2"`, `"3"` or `"none"`. The codec (protocol.codegen) turns these into classes and
per-version readers and writers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

MAX_VERSION = 0x7FFF

# fixed-width types and their struct format (big-endian on the wire)
FIXED_TYPES: dict[str, str] = {
    "int8": "b",
    "int16": "h",
    "uint16": "H",
    "int32": "i",
    "uint32": "I",
    "int64": "q",
    "float64": "d",
    "bool": "?",
    "uuid": "16s",
}
VARINT_TYPES = frozenset({"uvarint", "varint", "varlong"})
BLOB_TYPES = frozenset({"string", "bytes"})
PRIMITIVE_TYPES = frozenset(FIXED_TYPES) | VARINT_TYPES | BLOB_TYPES


class SchemaError(ValueError):
    """A schema that cannot describe a message (bad version range, tag on a non-flexible version...)."""


class _TypeDefault:
    """Marker: the field takes its type's natural default (0, false, "", empty array, zero uuid)."""

    def __repr__(self) -> str:
        return "TYPE_DEFAULT"


TYPE_DEFAULT: Any = _TypeDefault()


@dataclass(frozen=True)
class Versions:
    """An inclusive range of versions; empty when low > high."""

    low: int
    high: int

    @classmethod
    def parse(cls, text: str) -> Versions:
        text = text.strip()
        if text == "none":
            return cls(1, 0)
        if text.endswith("+"):
            return cls(int(text[:-1]), MAX_VERSION)
        if "-" in text:
            lo, hi = text.split("-", 1)
            return cls(int(lo), int(hi))
        v = int(text)
        return cls(v, v)

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.low <= version <= self.high

    @property
    def empty(self) -> bool:
        return self.low > self.high


NO_VERSIONS = Versions(1, 0)


@dataclass(frozen=True)
class Field:
    """One field of a message or struct.

    `type`: Kafka's type spelling. `versions`: where the field exists. `nullable`: versions
    where it may be null. `tagged`/`tag`: versions where it travels as a tagged field, and its
    tag. `default`: Kafka's default (None = null); TYPE_DEFAULT = the type's natural default.
    `ignorable`: may be dropped silently when written at a version that lacks it.
    `fields`: the struct's fields when `type` names a struct (or an array of one).
    """

    name: str
    type: str
    versions: str = "0+"
    nullable: str = "none"
    tagged: str = "none"
    tag: int | None = None
    default: Any = TYPE_DEFAULT
    ignorable: bool = False
    about: str = ""
    fields: tuple[Field, ...] = ()

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def element_type(self) -> str:
        return self.type[2:] if self.is_array else self.type

    @property
    def is_struct(self) -> bool:
        """The field is a struct or an array of structs."""
        return self.element_type not in PRIMITIVE_TYPES

    def version_range(self) -> Versions:
        return Versions.parse(self.versions)

    def nullable_range(self) -> Versions:
        return Versions.parse(self.nullable)

    def tagged_range(self) -> Versions:
        return Versions.parse(self.tagged)

    def present_in(self, version: int) -> bool:
        return version in self.version_range()

    def nullable_in(self, version: int) -> bool:
        return version in self.nullable_range()

    def tagged_in(self, version: int) -> bool:
        return version in self.tagged_range()


@dataclass(frozen=True)
class MessageSchema:
    """A whole message: a metadata record, a control record or an RPC body."""

    name: str
    api_key: int | None
    valid_versions: str
    flexible_versions: str
    fields: tuple[Field, ...]
    about: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def versions(self) -> Versions:
        return Versions.parse(self.valid_versions)

    def flexible_in(self, version: int) -> bool:
        return version in Versions.parse(self.flexible_versions)


def check_schema(schema: MessageSchema) -> None:
    """Reject schemas the codec cannot honour, so mistakes surface at import, not at read time."""
    valid = schema.versions()
    if valid.empty:
        raise SchemaError(f"{schema.name}: no valid versions")
    _check_fields(schema, schema.fields, valid, schema.name)


def _check_fields(schema: MessageSchema, fields: tuple[Field, ...], valid: Versions, where: str) -> None:
    names: set[str] = set()
    tags: dict[int, str] = {}
    for f in fields:
        if f.name in names:
            raise SchemaError(f"{where}: field {f.name} appears twice")
        names.add(f.name)
        tagged = f.tagged_range()
        if not tagged.empty:
            if f.tag is None:
                raise SchemaError(f"{where}.{f.name}: tagged versions without a tag")
            if f.tag in tags:
                raise SchemaError(f"{where}.{f.name}: tag {f.tag} already used by {tags[f.tag]}")
            tags[f.tag] = f.name
            for v in range(max(tagged.low, valid.low), min(tagged.high, valid.high) + 1):
                if not schema.flexible_in(v):
                    raise SchemaError(f"{where}.{f.name}: tagged at v{v}, which is not flexible")
        elif f.tag is not None:
            raise SchemaError(f"{where}.{f.name}: a tag without tagged versions")
        if f.default is None and f.nullable_range().empty:
            raise SchemaError(f"{where}.{f.name}: null default on a field that is never nullable")
        if f.is_struct:
            if not f.fields:
                raise SchemaError(f"{where}.{f.name}: struct type {f.element_type} has no fields")
            _check_fields(schema, f.fields, valid, f"{where}.{f.element_type}")
        elif f.fields:
            raise SchemaError(f"{where}.{f.name}: a {f.type} cannot have nested fields")
