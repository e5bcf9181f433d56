"""Property tests: any value a schema allows, at any version, survives encode -> decode -> encode."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol.codegen import decoder_for, default_of, encoder_for
from protocol.control_records import CONTROL_RECORD_CLASSES
from protocol.framing import ApiMessageAndVersion, decode_record, encode_record
from protocol.metadata_records import RECORD_CLASSES
from protocol.schema import Field
from protocol.uuid import Uuid

_INTS = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uvarint": (0, 2**32 - 1),
    "varint": (-(2**31), 2**31 - 1),
    "varlong": (-(2**63), 2**63 - 1),
}


def _element(owner: Any, f: Field, version: int) -> st.SearchStrategy[Any]:
    t = f.element_type
    if f.is_struct:
        return _struct(owner._STRUCT_CLASSES[f.name], version)
    if t in _INTS:
        return st.integers(*_INTS[t])
    if t == "bool":
        return st.booleans()
    if t == "float64":
        return st.floats(allow_nan=False)
    if t == "string":
        return st.text(max_size=20)
    if t == "bytes":
        return st.binary(max_size=20)
    assert t == "uuid"
    return st.binary(min_size=16, max_size=16).map(Uuid)


def _value(owner: Any, f: Field, version: int) -> st.SearchStrategy[Any]:
    if not f.present_in(version):
        return st.just(default_of(f)) if not f.is_array else st.just([] if default_of(f) == [] else None)
    base = st.lists(_element(owner, f, version), max_size=4) if f.is_array else _element(owner, f, version)
    return st.none() | base if f.nullable_in(version) else base


def _struct(cls: Any, version: int) -> st.SearchStrategy[Any]:
    return st.builds(cls, **{f.name: _value(cls, f, version) for f in cls._FIELDS})


METADATA_CASES = [
    (cls, v) for cls in RECORD_CLASSES.values() for v in range(cls.LOWEST_VERSION, cls.HIGHEST_VERSION + 1)
]
CONTROL_CASES = [
    (cls, v)
    for cls in CONTROL_RECORD_CLASSES.values()
    for v in range(cls.LOWEST_VERSION, cls.HIGHEST_VERSION + 1)
]


@pytest.mark.parametrize(
    ("cls", "version"), METADATA_CASES, ids=[f"{c.NAME}-v{v}" for c, v in METADATA_CASES]
)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_metadata_record_round_trip(cls: Any, version: int, data: st.DataObject) -> None:
    record = data.draw(_struct(cls, version))
    raw = encode_record(ApiMessageAndVersion(record, version))
    amv = decode_record(raw)
    assert amv == ApiMessageAndVersion(record, version)
    assert encode_record(amv) == raw


@pytest.mark.parametrize(("cls", "version"), CONTROL_CASES, ids=[f"{c.NAME}-v{v}" for c, v in CONTROL_CASES])
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_control_record_round_trip(cls: Any, version: int, data: st.DataObject) -> None:
    record = data.draw(_struct(cls, version))
    out = bytearray()
    encoder_for(cls, version)(record, out)
    again, end = decoder_for(cls, version)(bytes(out), 0)
    assert end == len(out)
    assert again == record


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=64))
def test_garbage_never_escapes_as_an_unexpected_exception(raw: bytes) -> None:
    from protocol.message import MessageDecodeError

    try:
        amv = decode_record(b"\x01\x05\x01" + raw)
    except MessageDecodeError:
        return
    assert encode_record(amv) is not None


@pytest.mark.parametrize(
    "cls", sorted(RECORD_CLASSES.values(), key=lambda c: c.API_KEY), ids=lambda c: c.__name__
)
def test_from_values_builds_what_the_keywords_build(cls: Any) -> None:
    """`_from_values` takes every field by position, in schema order, and is otherwise __init__."""
    values = {f.name: (7 if f.type in _INTS else default_of(f)) for f in cls._FIELDS}
    by_position = cls._from_values(*values.values())
    assert type(by_position) is cls
    assert by_position == cls(**values)
    assert by_position._values() == tuple(values.values())
    assert by_position._unknown_tagged_fields is None
    with pytest.raises(TypeError):
        cls._from_values(*values.values(), None)
