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


_UNSIGNED_PAIR = struct.Struct(">QQ")
_SIGNED_PAIR = struct.Struct(">qq")


class InvalidUuidError(ValueError):
    """Text or bytes that are not a Kafka Uuid."""


class Uuid(bytes):
    """An immutable 128-bit id, ordered as Kafka orders it (signed msb, then signed lsb).

    A Uuid is its 16 bytes: a subclass of `bytes`, so that hashing and equality are bytes' own C code
    (the hash computed once and kept in the object). The controller and broker images key millions of
    dict entries by Uuid and by (Uuid, partition), where a Python-level `__hash__` was most of the
    replay time. Consequences to keep in mind:

    - `isinstance(u, bytes)` is true: anything that turns values into JSON, msgpack or text must test
      for Uuid before bytes (msgpack packs a Uuid as 16-byte bin without calling a `default` hook).
    - A Uuid equals the plain `bytes` of its 16 bytes (and hashes alike, as before); no code mixes the two.
    - `len(u)`, iteration and slicing work as on bytes; `.bytes` is a plain `bytes` copy.
    - `<`, `<=`, `>`, `>=` keep Kafka's signed order, not bytes' unsigned one.
    """

    __slots__ = ()

    ZERO: ClassVar[Uuid]
    ONE: ClassVar[Uuid]
    METADATA_TOPIC_ID: ClassVar[Uuid]

    def __new__(cls, raw: bytes) -> Uuid:
        if type(raw) is not bytes or len(raw) != 16:
            raise InvalidUuidError(f"a Uuid is 16 bytes, got {raw!r}")
        return bytes.__new__(cls, raw)

    # bytes' C hash, not a Python function: the type's hash slot is bytes' own (see tests/protocol/test_uuid.py).
    __hash__ = bytes.__hash__

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Uuid is immutable")

    @classmethod
    def from_longs(cls, msb: int, lsb: int) -> Uuid:
        return cls(_UNSIGNED_PAIR.pack(msb & _MASK64, lsb & _MASK64))

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
    def msb(self) -> int:
        return _SIGNED_PAIR.unpack(self)[0]

    @property
    def lsb(self) -> int:
        return _SIGNED_PAIR.unpack(self)[1]

    def is_reserved(self) -> bool:
        """DirectoryId.reserved: msb == 0 and lsb < 100 (the first hundred ids)."""
        msb, lsb = _SIGNED_PAIR.unpack(self)
        return msb == 0 and 0 <= lsb < 100

    def __str__(self) -> str:
        return base64.urlsafe_b64encode(self).rstrip(b"=").decode("ascii")

    def __repr__(self) -> str:
        return f"Uuid('{self}')"

    # No __eq__ here: bytes' own compares the 16 bytes in C (a Python one would cost what it saves).

    def __lt__(self, other: Uuid) -> bool:
        return _SIGNED_PAIR.unpack(self) < _SIGNED_PAIR.unpack(other)

    def __le__(self, other: Uuid) -> bool:
        return _SIGNED_PAIR.unpack(self) <= _SIGNED_PAIR.unpack(other)

    def __gt__(self, other: Uuid) -> bool:
        return _SIGNED_PAIR.unpack(self) > _SIGNED_PAIR.unpack(other)

    def __ge__(self, other: Uuid) -> bool:
        return _SIGNED_PAIR.unpack(self) >= _SIGNED_PAIR.unpack(other)

    def __reduce__(self) -> tuple[type[Uuid], tuple[bytes]]:
        return (Uuid, (bytes(self),))

    # Last in the class body: from here on the name `bytes` in it means this property.
    @property
    def bytes(self) -> bytes:
        """The 16 bytes as a plain `bytes` object (a slice of a bytes subclass is one; faster than bytes())."""
        return self[:]


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
