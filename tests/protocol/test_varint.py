"""Varints against hand-computed bytes, their limits, and round trips."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol.varint import (
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    UINT32_MAX,
    VarintError,
    decode_unsigned_varint,
    decode_varint,
    decode_varlong,
    encode_unsigned_varint,
    encode_varint,
    encode_varlong,
    size_of_unsigned_varint,
    size_of_varint,
)

CASES = [
    # (value, zigzag varint bytes)
    (0, "00"),
    (-1, "01"),
    (1, "02"),
    (-2, "03"),
    (63, "7e"),
    (-64, "7f"),
    (64, "8001"),
    (300, "d804"),
    (INT32_MAX, "feffffff0f"),
    (INT32_MIN, "ffffffff0f"),
]


@pytest.mark.parametrize(("value", "hexed"), CASES)
def test_zigzag_varint_both_ways(value: int, hexed: str) -> None:
    raw = bytes.fromhex(hexed)
    assert encode_varint(value) == raw
    assert decode_varint(raw, 0) == (value, len(raw))
    assert size_of_varint(value) == len(raw)


@pytest.mark.parametrize(
    ("value", "hexed"), [(0, "00"), (127, "7f"), (128, "8001"), (300, "ac02"), (UINT32_MAX, "ffffffff0f")]
)
def test_unsigned_varint_both_ways(value: int, hexed: str) -> None:
    raw = bytes.fromhex(hexed)
    assert encode_unsigned_varint(value) == raw
    assert decode_unsigned_varint(raw, 0) == (value, len(raw))
    assert size_of_unsigned_varint(value) == len(raw)


def test_varlong_extremes() -> None:
    for v in (INT64_MIN, INT64_MAX, 0, -1):
        raw = encode_varlong(v)
        assert decode_varlong(raw, 0) == (v, len(raw))
    assert len(encode_varlong(INT64_MIN)) == 10


def test_decoding_from_an_offset() -> None:
    assert decode_varint(b"\xff\x02\x00", 1) == (1, 2)


@pytest.mark.parametrize(
    ("fn", "raw"),
    [
        (decode_unsigned_varint, b""),
        (decode_unsigned_varint, b"\x80"),
        (decode_unsigned_varint, b"\x80\x80\x80\x80\x80\x01"),
        (decode_varint, b"\xff\xff\xff\xff\xff\x01"),
        (decode_varlong, b"\xff" * 10 + b"\x01"),
    ],
)
def test_truncated_or_overlong_varints_are_errors(fn, raw: bytes) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(VarintError):
        fn(raw, 0)


@pytest.mark.parametrize(
    ("fn", "value"),
    [(encode_varint, INT32_MAX + 1), (encode_varlong, INT64_MIN - 1), (encode_unsigned_varint, -1)],
)
def test_out_of_range_values_are_refused(fn, value: int) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(VarintError):
        fn(value)


@given(st.integers(INT32_MIN, INT32_MAX))
def test_varint_round_trip(v: int) -> None:
    raw = encode_varint(v)
    assert decode_varint(raw + b"\x00", 0) == (v, len(raw))


@given(st.integers(INT64_MIN, INT64_MAX))
def test_varlong_round_trip(v: int) -> None:
    raw = encode_varlong(v)
    assert decode_varlong(raw, 0) == (v, len(raw))


@given(st.integers(0, UINT32_MAX))
def test_unsigned_varint_round_trip(v: int) -> None:
    raw = encode_unsigned_varint(v)
    assert decode_unsigned_varint(raw, 0) == (v, len(raw))
