"""Kafka's variable-length integers (clients ByteUtils).

Two families share the base-128 little-endian layout (7 bits a byte, 0x80 = more follows):
- unsigned varints, used by flexible message versions and the metadata record frame;
- zigzag varints (32-bit) and varlongs (64-bit), used inside record batches.

Decoders take `(buf, pos)` and return `(value, next_pos)`, so callers can walk a buffer
without slicing it. A one-byte value is by far the most common case and takes the short path.
"""

from __future__ import annotations

from typing import TypeAlias

Buffer: TypeAlias = bytes | bytearray | memoryview

_ONE_BYTE = [bytes([i]) for i in range(128)]

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1
INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1
UINT32_MAX = (1 << 32) - 1


class VarintError(ValueError):
    """A varint that runs past the buffer, is too long, or does not fit its type."""


def _read_groups(buf: Buffer, pos: int, max_bytes: int, what: str) -> tuple[int, int]:
    value = 0
    shift = 0
    start = pos
    try:
        while True:
            b = buf[pos]
            pos += 1
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value, pos
            shift += 7
            if pos - start >= max_bytes:
                raise VarintError(f"{what} at position {start} is longer than {max_bytes} bytes")
    except IndexError:
        raise VarintError(f"{what} at position {start} runs past the end of the buffer") from None


def decode_unsigned_varint(buf: Buffer, pos: int = 0) -> tuple[int, int]:
    """An unsigned 32-bit varint (at most 5 bytes)."""
    try:
        b = buf[pos]
    except IndexError:
        raise VarintError(f"unsigned varint at position {pos} runs past the end of the buffer") from None
    if b < 0x80:
        return b, pos + 1
    value, pos = _read_groups(buf, pos, 5, "unsigned varint")
    if value > UINT32_MAX:
        raise VarintError(f"unsigned varint {value} does not fit in 32 bits")
    return value, pos


def decode_varint(buf: Buffer, pos: int = 0) -> tuple[int, int]:
    """A zigzag 32-bit varint."""
    try:
        b = buf[pos]
    except IndexError:
        raise VarintError(f"varint at position {pos} runs past the end of the buffer") from None
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), pos + 1
    raw, pos = _read_groups(buf, pos, 5, "varint")
    if raw > UINT32_MAX:
        raise VarintError(f"varint does not fit in 32 bits (raw {raw})")
    return (raw >> 1) ^ -(raw & 1), pos


def decode_varlong(buf: Buffer, pos: int = 0) -> tuple[int, int]:
    """A zigzag 64-bit varlong."""
    try:
        b = buf[pos]
    except IndexError:
        raise VarintError(f"varlong at position {pos} runs past the end of the buffer") from None
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), pos + 1
    raw, pos = _read_groups(buf, pos, 10, "varlong")
    if raw >= 1 << 64:
        raise VarintError(f"varlong does not fit in 64 bits (raw {raw})")
    return (raw >> 1) ^ -(raw & 1), pos


def _groups(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def encode_unsigned_varint(value: int) -> bytes:
    if 0 <= value < 0x80:
        return _ONE_BYTE[value]
    if not 0 <= value <= UINT32_MAX:
        raise VarintError(f"{value} does not fit in an unsigned 32-bit varint")
    return _groups(value)


def encode_varint(value: int) -> bytes:
    if not INT32_MIN <= value <= INT32_MAX:
        raise VarintError(f"{value} does not fit in a 32-bit varint")
    z = (value << 1) ^ (value >> 31)
    return _ONE_BYTE[z] if z < 0x80 else _groups(z)


def encode_varlong(value: int) -> bytes:
    if not INT64_MIN <= value <= INT64_MAX:
        raise VarintError(f"{value} does not fit in a 64-bit varlong")
    z = (value << 1) ^ (value >> 63)
    return _ONE_BYTE[z] if z < 0x80 else _groups(z)


def size_of_unsigned_varint(value: int) -> int:
    return max(1, (value.bit_length() + 6) // 7)


def size_of_varint(value: int) -> int:
    return size_of_unsigned_varint((value << 1) ^ (value >> 31))
