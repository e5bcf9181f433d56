"""Kafka wire schemas derived from the RPC models, so a message is declared once.

An RpcMessage already holds Kafka's field names, order, versions, nullability and tags; what it
lacks for the binary protocol is each integer's width (read from the range its type allows) and the
API's flexible versions (from its ApiSpec). The schema built here feeds protocol.codegen, the same
generator that reads and writes the metadata records.

One shape differs on purpose: a model keeps "absent" tagged structs as None (so handlers test
`is None`), where Kafka writes a non-nullable struct that is simply left out when it equals its
default. Such fields become non-nullable here and are marked in `ABSENT_AS_NONE` so the bridge
(protocol.wire.bridge) maps None to the default struct and back.
"""

from __future__ import annotations

import types
from functools import cache
from typing import Annotated, Any, Union, get_args, get_origin

from annotated_types import Ge, Le
from pydantic.fields import FieldInfo

from protocol.rpc.message import FieldVersions, RpcMessage, VersionRange
from protocol.schema import TYPE_DEFAULT, Field, MessageSchema
from protocol.uuid import Uuid

_INT_WIDTHS = (
    ("int8", -(2**7), 2**7 - 1),
    ("int16", -(2**15), 2**15 - 1),
    ("uint16", 0, 2**16 - 1),
    ("int32", -(2**31), 2**31 - 1),
    ("int64", -(2**63), 2**63 - 1),
)


class WireSchemaError(TypeError):
    """A model whose fields cannot be written in Kafka's binary protocol."""


def _range(v: VersionRange) -> str:
    return str(v)


def _nonempty(v: VersionRange) -> bool:
    return v.highest is None or v.lowest <= v.highest


def _unwrap(annotation: Any) -> tuple[Any, list[Any], bool]:
    """(bare type, its Annotated metadata, whether None is allowed)."""
    meta: list[Any] = []
    optional = False
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            base, *extra = get_args(annotation)
            meta.extend(extra)
            annotation = base
            continue
        if origin in (Union, types.UnionType):
            args = [a for a in get_args(annotation) if a is not type(None)]
            optional = optional or len(args) < len(get_args(annotation))
            if len(args) != 1:
                raise WireSchemaError(f"union {annotation} has no Kafka type")
            annotation = args[0]
            continue
        return annotation, meta, optional


def _int_type(meta: list[Any], where: str) -> str:
    lo = hi = None
    for m in meta:
        items = m.metadata if isinstance(m, FieldInfo) else [m]
        for c in items:
            if isinstance(c, Ge):
                lo = c.ge
            elif isinstance(c, Le):
                hi = c.le
    if hi is None:
        raise WireSchemaError(f"{where}: an int without a range has no Kafka width")
    for name, _low, high in _INT_WIDTHS:
        if hi == high and (lo is None or lo >= _low):
            return name
    raise WireSchemaError(f"{where}: no Kafka integer allows {lo}..{hi}")


def _element(annotation: Any, meta: list[Any], where: str) -> tuple[str, type[RpcMessage] | None]:
    if isinstance(annotation, type) and issubclass(annotation, RpcMessage):
        return annotation.__name__, annotation
    if annotation is bool:
        return "bool", None
    if annotation is int:
        return _int_type(meta, where), None
    if annotation is float:
        return "float64", None
    if annotation is str:
        return "string", None
    if annotation is bytes:
        return "bytes", None
    if annotation is Uuid:
        return "uuid", None
    raise WireSchemaError(f"{where}: {annotation!r} has no Kafka type")


def _field(model: type[RpcMessage], name: str, info: FieldInfo, absent: set[tuple[str, str]]) -> Field:
    where = f"{model.__name__}.{name}"
    fv = next((m for m in info.metadata if isinstance(m, FieldVersions)), FieldVersions())
    bare, meta, _optional = _unwrap(info.annotation)
    meta = [*meta, *info.metadata]
    nested: type[RpcMessage] | None
    if get_origin(bare) is list:
        (item,) = get_args(bare)
        ibare, imeta, _ = _unwrap(item)
        etype, nested = _element(ibare, imeta, where)
        ktype = "[]" + etype
    else:
        ktype, nested = _element(bare, meta, where)
    nullable = _range(fv.nullable)
    default: Any = model.field_default(name)
    is_struct = nested is not None and not ktype.startswith("[]")
    if is_struct and default is None and _nonempty(fv.tagged):
        # a tagged struct that is None when absent: non-nullable on the wire, left out when default
        absent.add((model.__name__, name))
        nullable, default = "none", TYPE_DEFAULT
    elif is_struct or (isinstance(default, list) and default == []) or default == Uuid.ZERO:
        default = TYPE_DEFAULT if default is not None else None
    tagged = _range(fv.tagged)
    return Field(
        name,
        ktype,
        versions=_range(fv.versions),
        nullable=nullable,
        tagged=tagged,
        tag=fv.tag if tagged != "none" else None,
        default=default,
        ignorable=fv.ignorable,
        fields=_fields(nested, absent) if nested is not None else (),
    )


def _fields(model: type[RpcMessage], absent: set[tuple[str, str]]) -> tuple[Field, ...]:
    return tuple(_field(model, n, info, absent) for n, info in model.model_fields.items())


ABSENT_AS_NONE: set[tuple[str, str]] = set()
"""(model class name, field name) of tagged structs a model holds as None when absent."""


@cache
def wire_schema(model: type[RpcMessage], api_key: int, valid: str, flexible: str) -> MessageSchema:
    """The codegen schema of `model` (a request or response) over versions `valid`."""
    fields = _fields(model, ABSENT_AS_NONE)
    return MessageSchema(model.__name__, api_key, valid, flexible, fields)
