"""The frame around a metadata record value: ApiMessageAndVersion.

    unsigned varint frame version (1), unsigned varint apiKey, unsigned varint version, message

Shipped Kafka writes frame version 1 and rejects 0 and anything else, although its javadoc says 0
(see docs/kip-deviations.md). Bytes after the message are an error, as in Kafka.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from protocol.codegen import Decoder, Encoder, decoder_for, encoder_for
from protocol.message import MessageDecodeError, MessageEncodeError, UnsupportedVersionError
from protocol.metadata_records import (
    RECORD_CLASSES,
    BrokerRegistrationChangeRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    UnknownRecord,
)
from protocol.varint import decode_unsigned_varint, encode_unsigned_varint

FRAME_VERSION = 1
_MAX_ID = 0x7FFF

# metadata.version feature levels that change which record version is written (MetadataVersion.java)
MV_3_3_IV3 = 7
MV_3_4_IV0 = 8
MV_3_7_IV2 = 17
MV_4_0_IV0 = 22


@dataclass(frozen=True, slots=True)
class ApiMessageAndVersion:
    """A record and the version it is (or is to be) written at."""

    message: Any
    version: int


# A frozen dataclass's __init__ pays for object.__setattr__ per field; setting the slots through
# their descriptors builds the same object at a fraction of the cost, once per record read.
_set_message = ApiMessageAndVersion.__dict__["message"].__set__
_set_version = ApiMessageAndVersion.__dict__["version"].__set__


class RecordFrameError(MessageDecodeError):
    """A metadata record value whose frame (version, apiKey, version) cannot be read."""


# (frame version 1, apiKey, version) as 3 bytes -> (reader, version), for every known record
# whose frame fits in one-byte varints, which is all of them
_FRAMES: dict[bytes, tuple[Decoder, int]] = {}
_HEADERS: dict[tuple[int, int], bytes] = {}
_WRITERS: dict[tuple[type, int], tuple[bytes, Encoder]] = {}
# values that always decode to the same immutable record (NoOpRecord, EndTransactionRecord)
_SHARED: dict[bytes, ApiMessageAndVersion] = {}


def _decoder(api_key: int, version: int) -> Decoder | None:
    cls = RECORD_CLASSES.get(api_key)
    if cls is None or not cls.LOWEST_VERSION <= version <= cls.HIGHEST_VERSION:
        return None
    return decoder_for(cls, version)


def _fill_tables() -> None:
    for api_key, cls in RECORD_CLASSES.items():
        for version in range(cls.LOWEST_VERSION, cls.HIGHEST_VERSION + 1):
            frame = bytes((FRAME_VERSION, api_key, version))
            # readers are generated on first use, so a lazy entry builds and replaces itself
            _FRAMES[frame] = (_lazy_reader(frame, cls, version), version)
            if not cls._FIELDS:
                _SHARED[frame + b"\x00"] = ApiMessageAndVersion(cls(), version)


def _lazy_reader(frame: bytes, cls: Any, version: int) -> Decoder:
    def first_read(buf: bytes, pos: int) -> tuple[Any, int]:
        reader = decoder_for(cls, version)
        _FRAMES[frame] = (reader, version)
        return reader(buf, pos)

    return first_read


def _read_frame(buf: bytes) -> tuple[int, int, int]:
    try:
        frame_version, pos = decode_unsigned_varint(buf, 0)
        if frame_version == 0:
            raise RecordFrameError(
                "metadata record frame version 0 is not readable (expected 1); "
                "such records come from the 2.8 early-access KRaft format"
            )
        if frame_version != FRAME_VERSION:
            raise RecordFrameError(f"unknown metadata record frame version {frame_version} (expected 1)")
        api_key, pos = decode_unsigned_varint(buf, pos)
        version, pos = decode_unsigned_varint(buf, pos)
    except ValueError as e:
        if isinstance(e, RecordFrameError):
            raise
        raise RecordFrameError(f"unreadable metadata record frame: {e}") from None
    if api_key > _MAX_ID:
        raise RecordFrameError(f"metadata record apiKey {api_key} is larger than {_MAX_ID}")
    if version > _MAX_ID:
        raise RecordFrameError(f"metadata record version {version} is larger than {_MAX_ID}")
    return api_key, version, pos


def decode_record(buf: bytes | bytearray | memoryview) -> ApiMessageAndVersion:
    """Read one framed metadata record value. Unknown types/versions give an UnknownRecord."""
    return decode_records((buf,))[0]


def decode_records(values: Iterable[bytes | bytearray | memoryview]) -> list[ApiMessageAndVersion]:
    """decode_record for many values: one call for a whole batch keeps per-record overhead down."""
    out: list[ApiMessageAndVersion] = []
    append = out.append
    frames = _FRAMES
    shared = _SHARED
    new = object.__new__
    amv_cls = ApiMessageAndVersion
    set_message = _set_message
    set_version = _set_version
    for buf in values:
        if type(buf) is not bytes:
            buf = bytes(buf)
        if len(buf) == 4:
            amv = shared.get(buf)
            if amv is not None:
                append(amv)
                continue
        # the common frame is 3 one-byte varints, so its 3 bytes name the decoder directly
        frame = frames.get(buf[:3])
        if frame is not None:
            dec, version = frame
            pos = 3
        else:
            if not buf:
                raise RecordFrameError("empty metadata record value")
            api_key, version, pos = _read_frame(buf)
            dec = _decoder(api_key, version)
            if dec is None:
                append(ApiMessageAndVersion(UnknownRecord(api_key, version, buf[pos:]), version))
                continue
        try:
            message, end = dec(buf, pos)
        except (IndexError, struct.error, UnicodeDecodeError, ValueError) as e:
            raise _malformed(buf, e) from None
        if end != len(buf):
            raise _malformed(buf, MessageDecodeError(f"found {len(buf) - end} byte(s) of garbage after it"))
        amv = new(amv_cls)
        set_message(amv, message)
        set_version(amv, version)
        append(amv)
    return out


def _malformed(buf: bytes, e: Exception) -> MessageDecodeError:
    api_key, version, _ = _read_frame(buf)
    name = RECORD_CLASSES[api_key].NAME
    if isinstance(e, MessageDecodeError):
        return MessageDecodeError(f"{name} v{version}: {e}")
    return MessageDecodeError(f"{name} v{version} is malformed: {e}")


def _header(api_key: int, version: int) -> bytes:
    h = _HEADERS.get((api_key, version))
    if h is None:
        h = (
            encode_unsigned_varint(FRAME_VERSION)
            + encode_unsigned_varint(api_key)
            + encode_unsigned_varint(version)
        )
        _HEADERS[(api_key, version)] = h
    return h


def encode_record(amv: ApiMessageAndVersion) -> bytes:
    """The framed value of a metadata record at amv.version."""
    message = amv.message
    entry = _WRITERS.get((type(message), amv.version))
    if entry is None:
        entry = _writer(message, amv.version)
        if entry is None:  # an UnknownRecord is written back as it was read
            return _header(message.api_key, message.version) + message.raw
    header, enc = entry
    w = bytearray(header)
    try:
        enc(message, w)
    except MessageEncodeError:
        raise
    except (struct.error, TypeError, AttributeError, ValueError, OverflowError) as e:
        raise MessageEncodeError(f"cannot write {message.NAME} v{amv.version}: {e}") from None
    return bytes(w)


def _writer(message: Any, version: int) -> tuple[bytes, Encoder] | None:
    cls = type(message)
    if cls is UnknownRecord:
        return None
    api_key = getattr(cls, "API_KEY", None)
    if api_key is None or RECORD_CLASSES.get(api_key) is not cls:
        raise MessageEncodeError(f"{cls.__name__} is not a metadata record")
    entry = (_header(api_key, version), encoder_for(cls, version))
    _WRITERS[(cls, version)] = entry
    return entry


def default_version(record_class: Any, metadata_version_level: int) -> int:
    """The version Kafka writes a record at under a metadata.version feature level."""
    mv = metadata_version_level
    if record_class is RegisterBrokerRecord:
        if mv >= MV_3_7_IV2:
            return 3
        if mv >= MV_3_4_IV0:
            return 2
        return 1 if mv >= MV_3_3_IV3 else 0
    if record_class is PartitionRecord or record_class is PartitionChangeRecord:
        if mv >= MV_4_0_IV0:
            return 2
        return 1 if mv >= MV_3_7_IV2 else 0
    if record_class is BrokerRegistrationChangeRecord:
        if mv >= MV_3_7_IV2:
            return 2
        return 1 if mv >= MV_3_3_IV3 else 0
    if getattr(record_class, "LOWEST_VERSION", None) is None:
        raise UnsupportedVersionError(f"{record_class!r} is not a metadata record class")
    return int(record_class.LOWEST_VERSION)


_fill_tables()
