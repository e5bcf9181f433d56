"""Kafka's Uuid: 16 bytes, shown as 22 characters of URL-safe base64 without padding.

Reserved directory ids follow shipped Kafka (reference 4.2), not the KIP-858 text:
MIGRATING=(0,0), UNASSIGNED=(0,1), LOST=(0,2); every (0, n<100) is reserved.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
import struct
from typing import ClassVar

_MASK64 = (1 << 64) - 1
# Java's URL-safe decoder refuses '+' and '/', which Python's would quietly accept beside '-' and '_'.
_URL_SAFE_TEXT = re.compile(r"[A-Za-z0-9_-]*={0,2}")


def _signed64(v: int) -> int:
    return v - (1 << 64) if v & (1 << 63) else v


class InvalidUuidError(ValueError):
    """Text or bytes that are not a Kafka Uuid."""


class Uuid:
    """An immutable 128-bit id, ordered as Kafka orders it (signed msb, then signed lsb)."""

    __slots__ = ("_bytes",)
    _bytes: bytes

    ZERO: ClassVar[Uuid]
    ONE: ClassVar[Uuid]
    METADATA_TOPIC_ID: ClassVar[Uuid]

    def __init__(self, raw: bytes) -> None:
        if type(raw) is not bytes or len(raw) != 16:
            raise InvalidUuidError(f"a Uuid is 16 bytes, got {raw!r}")
        object.__setattr__(self, "_bytes", raw)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Uuid is immutable")

    @classmethod
    def from_longs(cls, msb: int, lsb: int) -> Uuid:
        return cls(struct.pack(">QQ", msb & _MASK64, lsb & _MASK64))

    @classmethod
    def from_string(cls, text: str) -> Uuid:
        """Parse Kafka's text form; like Kafka, 24 characters with '==' padding are accepted too."""
        if not isinstance(text, str):
            raise InvalidUuidError(f"a Uuid text must be a string, got {type(text).__name__}")
        if len(text) > 24:
            raise InvalidUuidError(f"'{text}' is not a Uuid: longer than 24 characters")
        if not _URL_SAFE_TEXT.fullmatch(text):
            raise InvalidUuidError(f"'{text}' is not a Uuid: not URL-safe base64")
        padded = text + "=" * (-len(text) % 4)
        try:
            raw = base64.b64decode(padded, altchars=b"-_", validate=True)
        except (binascii.Error, ValueError) as e:
            raise InvalidUuidError(f"'{text}' is not a Uuid: not URL-safe base64 ({e})") from None
        if len(raw) != 16:
            raise InvalidUuidError(f"'{text}' is not a Uuid: decodes to {len(raw)} bytes, not 16")
        return cls(raw)

    @classmethod
    def random(cls) -> Uuid:
        """A random v4 id that is never reserved and never prints with a leading '-'."""
        while True:
            b = bytearray(os.urandom(16))
            b[6] = (b[6] & 0x0F) | 0x40
            b[8] = (b[8] & 0x3F) | 0x80
            u = cls(bytes(b))
            if not u.is_reserved() and not str(u).startswith("-"):
                return u

    @property
    def bytes(self) -> bytes:
        return self._bytes

    @property
    def msb(self) -> int:
        return _signed64(int.from_bytes(self._bytes[:8], "big"))

    @property
    def lsb(self) -> int:
        return _signed64(int.from_bytes(self._bytes[8:], "big"))

    def is_reserved(self) -> bool:
        """DirectoryId.reserved: msb == 0 and lsb < 100 (the first hundred ids)."""
        return self.msb == 0 and 0 <= self.lsb < 100

    def __str__(self) -> str:
        return base64.urlsafe_b64encode(self._bytes).rstrip(b"=").decode("ascii")

    def __repr__(self) -> str:
        return f"Uuid('{self}')"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Uuid) and other._bytes == self._bytes

    def __hash__(self) -> int:
        return hash(self._bytes)

    def _key(self) -> tuple[int, int]:
        return (self.msb, self.lsb)

    def __lt__(self, other: Uuid) -> bool:
        return self._key() < other._key()

    def __le__(self, other: Uuid) -> bool:
        return self._key() <= other._key()

    def __gt__(self, other: Uuid) -> bool:
        return self._key() > other._key()

    def __ge__(self, other: Uuid) -> bool:
        return self._key() >= other._key()

    def __reduce__(self) -> tuple[type[Uuid], tuple[bytes]]:
        return (Uuid, (self._bytes,))


Uuid.ZERO = Uuid.from_longs(0, 0)
Uuid.ONE = Uuid.from_longs(0, 1)
Uuid.METADATA_TOPIC_ID = Uuid.ONE

# Reserved directory ids (shipped Kafka's DirectoryId; see docs/kip-deviations.md).
MIGRATING = Uuid.ZERO
UNASSIGNED = Uuid.ONE
LOST = Uuid.from_longs(0, 2)
RESERVED_DIRECTORY_NAMES = {MIGRATING: "MIGRATING", UNASSIGNED: "UNASSIGNED", LOST: "LOST"}


def random_directory_id(taken: set[Uuid] | frozenset[Uuid] = frozenset()) -> Uuid:
    """A directory.id for a new log dir: random, unreserved, unique among `taken`."""
    while True:
        u = Uuid.random()
        if u not in taken:
            return u


def describe_directory(directory: Uuid) -> str:
    """A readable name: the reserved ones by name, others as their text."""
    return RESERVED_DIRECTORY_NAMES.get(directory, str(directory))
