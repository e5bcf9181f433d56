"""Records as Kafka's generated `*JsonConverter.write(message, version)` builds them, and the text
Jackson's `JsonNode.toString()` gives that JSON: what `kafka-dump-log.sh` prints as a payload.

The converter rules (generator/.../JsonConverterGenerator.java and FieldSpec.java, Kafka 3.9):
- keys are the schema's field names with the first letter lower-cased (`TopicId` -> `topicId`), in
  the order the schema declares the fields; fields the version lacks are left out;
- a tagged field is written only when it differs from its default (an array or string defaulting to
  null: when not null; an array defaulting to empty: when null or not empty);
- int8/16/32/64 and uint16/32 are numbers, bool true/false, uuid its base64 text (Uuid.toString),
  bytes a BinaryNode, which Jackson writes as standard base64 with padding; null is null.

Jackson's text (WriterBasedJsonGenerator, Jackson 2.16 as shipped with Kafka 3.9): compact, `"` and
`\\` escaped, control characters as \\b \\t \\n \\f \\r or \\u00XX with upper-case hex digits,
everything else (non-ASCII included) as is; doubles as Java's Double.toString, NaN and the
infinities quoted.
"""

from __future__ import annotations

import base64
import math
import re
from decimal import Decimal
from typing import Any, Final

from protocol.codegen import default_of
from protocol.message import Struct
from protocol.schema import Field
from protocol.uuid import Uuid

# Kafka's declaration order where protocol/schemas lists a record's fields in another order
# (metadata/src/main/resources/common/metadata/PartitionChangeRecord.json, 3.9).
KAFKA_FIELD_ORDER: Final[dict[str, tuple[str, ...]]] = {
    "PartitionChangeRecord": (
        "PartitionId",
        "TopicId",
        "Isr",
        "Leader",
        "Replicas",
        "RemovingReplicas",
        "AddingReplicas",
        "LeaderRecoveryState",
        "Directories",
        "EligibleLeaderReplicas",
        "LastKnownElr",
    ),
}


def camel_case(name: str) -> str:
    """Kafka's camelCaseName: the field name with its first letter lower-cased."""
    return name[:1].lower() + name[1:]


def _fields(cls: type[Struct]) -> tuple[Field, ...]:
    order = KAFKA_FIELD_ORDER.get(getattr(cls, "NAME", ""))
    if order is None:
        return cls._FIELDS
    by_name = {f.name: f for f in cls._FIELDS}
    return tuple(by_name[name] for name in order)


def _is_default(owner: type[Struct], f: Field, value: Any) -> bool:
    if f.is_struct and not f.is_array:
        return bool(value == owner._STRUCT_CLASSES[f.name]())
    return bool(value == default_of(f))


def message_json(message: Struct, version: int) -> dict[str, Any]:
    """The JSON object Kafka's converter writes for `message` at `version` (key order kept)."""
    cls = type(message)
    out: dict[str, Any] = {}
    for f in _fields(cls):
        if not f.present_in(version):
            continue
        value = getattr(message, f.name)
        if f.tagged_in(version) and _is_default(cls, f, value):
            continue
        out[camel_case(f.name)] = _value_json(value, version)
    return out


def _value_json(value: Any, version: int) -> Any:
    if isinstance(value, Struct):
        return message_json(value, version)
    if isinstance(value, Uuid):
        return str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, list | tuple):
        return [_value_json(v, version) for v in value]
    return value


_SHORT_ESCAPES: Final = {"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}
_NEEDS_ESCAPE: Final = re.compile(r'["\\\x00-\x1f]')


def _escape(m: re.Match[str]) -> str:
    c = m.group()
    if c in ('"', "\\"):
        return "\\" + c
    return _SHORT_ESCAPES.get(c) or f"\\u{ord(c):04X}"


def java_double(d: float) -> str:
    """Java's Double.toString: plain notation for 1e-3 <= |d| < 1e7, else `1.5E-5`; always a
    fraction digit. Digits are the shortest that read back as `d` (Java 19+; older Javas
    occasionally print one more)."""
    if d == 0:
        return "-0.0" if math.copysign(1.0, d) < 0 else "0.0"
    sign = "-" if d < 0 else ""
    _, digit_tuple, exp = Decimal(repr(abs(d))).as_tuple()
    assert isinstance(exp, int)
    digits = "".join(map(str, digit_tuple)).rstrip("0") or "0"
    point = len(digit_tuple) + exp  # the value is 0.<digits> * 10**point
    if 1e-3 <= abs(d) < 1e7:
        if point <= 0:
            return f"{sign}0.{'0' * -point}{digits}"
        if point >= len(digits):
            return f"{sign}{digits}{'0' * (point - len(digits))}.0"
        return f"{sign}{digits[:point]}.{digits[point:]}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{point - 1}"


def dumps(value: Any) -> str:
    """Compact JSON text as Jackson's JsonNode.toString() writes it, in the dict's key order."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return '"NaN"'
        if math.isinf(value):
            return '"Infinity"' if value > 0 else '"-Infinity"'
        return java_double(value)
    if isinstance(value, str):
        return '"' + _NEEDS_ESCAPE.sub(_escape, value) + '"'
    if isinstance(value, dict):
        return "{" + ",".join(f"{dumps(str(k))}:{dumps(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(dumps(v) for v in value) + "]"
    raise TypeError(f"no JSON form for {type(value).__name__}")
