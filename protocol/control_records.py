"""KRaft control records: the records of control batches (leader changes, snapshot framing, voters).

A control record's key is `int16 key version (0), int16 ControlRecordType`; its value is the
message written directly at its version, with no ApiMessageAndVersion frame. Every value starts
with an int16 `Version` field, which is how a reader knows the version it was written at.
"""

from __future__ import annotations

import base64
import struct
from dataclasses import dataclass
from enum import IntEnum
from typing import Any, ClassVar

from protocol.codegen import build_message_class, decoder_for, encoder_for
from protocol.message import MessageDecodeError, MessageEncodeError
from protocol.schemas import control as s

_M = __name__
_KEY = struct.Struct(">hh")
CONTROL_KEY_VERSION = 0


class ControlRecordType(IntEnum):
    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6
    UNKNOWN = -1


LeaderChangeMessage: Any = build_message_class(
    s.LEADER_CHANGE, _M, {"CONTROL_TYPE": ControlRecordType.LEADER_CHANGE}
)
SnapshotHeaderRecord: Any = build_message_class(
    s.SNAPSHOT_HEADER, _M, {"CONTROL_TYPE": ControlRecordType.SNAPSHOT_HEADER}
)
SnapshotFooterRecord: Any = build_message_class(
    s.SNAPSHOT_FOOTER, _M, {"CONTROL_TYPE": ControlRecordType.SNAPSHOT_FOOTER}
)
KRaftVersionRecord: Any = build_message_class(
    s.KRAFT_VERSION, _M, {"CONTROL_TYPE": ControlRecordType.KRAFT_VERSION}
)
VotersRecord: Any = build_message_class(s.VOTERS, _M, {"CONTROL_TYPE": ControlRecordType.KRAFT_VOTERS})

CONTROL_RECORD_CLASSES: dict[int, Any] = {
    cls.CONTROL_TYPE: cls
    for cls in (
        LeaderChangeMessage,
        SnapshotHeaderRecord,
        SnapshotFooterRecord,
        KRaftVersionRecord,
        VotersRecord,
    )
}


@dataclass(frozen=True)
class UnknownControlRecord:
    """A control record of a type (or version) this codec does not read, such as transaction markers."""

    control_type: int
    key: bytes
    value: bytes | None

    NAME: ClassVar[str] = "UnknownControlRecord"

    def to_json_dict(self, version: int | None = None) -> dict[str, Any]:
        value = None if self.value is None else base64.b64encode(self.value).decode("ascii")
        return {"controlType": self.control_type, "value": value}


def control_record_name(message: Any) -> str:
    if isinstance(message, UnknownControlRecord):
        try:
            return f"UnknownControlRecord({ControlRecordType(message.control_type).name})"
        except ValueError:
            return f"UnknownControlRecord(type={message.control_type})"
    return str(message.NAME)


def read_control_type(key: bytes | None) -> int:
    """The ControlRecordType id in a control record key."""
    if key is None or len(key) < 4:
        raise MessageDecodeError(f"control record key must be at least 4 bytes, got {key!r}")
    _version, ctype = _KEY.unpack_from(key, 0)
    return int(ctype)


def encode_control_record(record: Any) -> tuple[bytes, bytes]:
    """(key, value) of a control record, given an instance or an ApiMessageAndVersion wrapping one.

    A bare instance is written at the version its Version field names (0 unless set, as Kafka does).
    """
    message = getattr(record, "message", record)
    version = getattr(record, "version", None)
    if isinstance(message, UnknownControlRecord):
        if message.value is None:
            raise MessageEncodeError("an unknown control record without a value cannot be written")
        return message.key, message.value
    cls = type(message)
    if CONTROL_RECORD_CLASSES.get(getattr(cls, "CONTROL_TYPE", None)) is not cls:
        raise MessageEncodeError(f"{cls.__name__} is not a control record")
    if version is None:
        version = message.Version
    enc = encoder_for(cls, version)
    w = bytearray()
    try:
        enc(message, w)
    except MessageEncodeError:
        raise
    except (struct.error, TypeError, AttributeError, ValueError, OverflowError) as e:
        raise MessageEncodeError(f"cannot write {cls.NAME} v{version}: {e}") from None
    return _KEY.pack(CONTROL_KEY_VERSION, cls.CONTROL_TYPE), bytes(w)


def decode_control_record(key: bytes | None, value: bytes | None) -> Any:
    """An ApiMessageAndVersion for a known control record, else an UnknownControlRecord."""
    from protocol.framing import ApiMessageAndVersion

    ctype = read_control_type(key)
    assert key is not None
    cls = CONTROL_RECORD_CLASSES.get(ctype)
    if cls is None or value is None or len(value) < 2 or len(key) != 4:
        return UnknownControlRecord(ctype, bytes(key), value)
    (version,) = struct.unpack_from(">h", value, 0)
    if not cls.LOWEST_VERSION <= version <= cls.HIGHEST_VERSION:
        return UnknownControlRecord(ctype, bytes(key), value)
    buf = bytes(value)
    try:
        message, end = decoder_for(cls, version)(buf, 0)
    except MessageDecodeError:
        raise
    except (IndexError, struct.error, UnicodeDecodeError, ValueError) as e:
        raise MessageDecodeError(f"{cls.NAME} v{version} is malformed: {e}") from None
    if end != len(buf):
        raise MessageDecodeError(f"found {len(buf) - end} byte(s) of garbage after {cls.NAME} v{version}")
    return ApiMessageAndVersion(message, version)


def control_records(batch: Any) -> list[Any]:
    """The decoded records of a control batch (see decode_control_record)."""
    if not batch.is_control:
        raise ValueError(f"batch at offset {batch.base_offset} is not a control batch")
    return [decode_control_record(r.key, r.value) for r in batch.records]
