"""Reading and writing the records of `__consumer_offsets` (protocol.schemas.coordinator).

`encode_*` give a record's (key, value) bytes; `decode_record` turns one back into an
OffsetCommit, a GroupMetadata, or a tombstone of either (value None), and refuses anything else.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from protocol.codegen import build_message_class, decoder_for, encoder_for
from protocol.schemas import coordinator as s

_M = __name__
_I16 = struct.Struct(">h")

OffsetCommitKey: Any = build_message_class(s.OFFSET_COMMIT_KEY, _M)
OffsetCommitValue: Any = build_message_class(s.OFFSET_COMMIT_VALUE, _M)
GroupMetadataKey: Any = build_message_class(s.GROUP_METADATA_KEY, _M)
GroupMetadataValue: Any = build_message_class(s.GROUP_METADATA_VALUE, _M)

OFFSET_COMMIT_VALUE_VERSION = 3
GROUP_METADATA_VALUE_VERSION = 3


class CoordinatorRecordError(ValueError):
    """A record of __consumer_offsets this reader does not understand."""


@dataclass(frozen=True)
class OffsetRecord:
    group: str
    topic: str
    partition: int
    value: Any | None  # OffsetCommitValue, None for a tombstone


@dataclass(frozen=True)
class GroupRecord:
    group: str
    value: Any | None  # GroupMetadataValue, None for a tombstone


def _write(cls: Any, version: int, msg: Any) -> bytes:
    out = bytearray(_I16.pack(version))
    encoder_for(cls, version)(msg, out)
    return bytes(out)


def encode_offset_commit(group: str, topic: str, partition: int, value: Any) -> tuple[bytes, bytes]:
    key = _write(OffsetCommitKey, 1, OffsetCommitKey(Group=group, Topic=topic, Partition=partition))
    return key, _write(OffsetCommitValue, OFFSET_COMMIT_VALUE_VERSION, value)


def encode_group_metadata(group: str, value: Any) -> tuple[bytes, bytes]:
    key = _write(GroupMetadataKey, 2, GroupMetadataKey(Group=group))
    return key, _write(GroupMetadataValue, GROUP_METADATA_VALUE_VERSION, value)


def _read(cls: Any, data: bytes) -> Any:
    (version,) = _I16.unpack_from(data, 0)
    if not cls.LOWEST_VERSION <= version <= cls.HIGHEST_VERSION:
        raise CoordinatorRecordError(f"{cls.__name__} version {version} is not known")
    msg, _ = decoder_for(cls, version)(data, 2)
    return msg


def decode_record(key: bytes | None, value: bytes | None) -> OffsetRecord | GroupRecord:
    if key is None or len(key) < 2:
        raise CoordinatorRecordError("a record of __consumer_offsets without a key")
    try:
        (kind,) = _I16.unpack_from(key, 0)
        if kind in (0, 1):
            k = decoder_for(OffsetCommitKey, kind)(key, 2)[0]
            v = _read(OffsetCommitValue, value) if value is not None else None
            return OffsetRecord(k.Group, k.Topic, k.Partition, v)
        if kind == 2:
            k = decoder_for(GroupMetadataKey, 2)(key, 2)[0]
            v = _read(GroupMetadataValue, value) if value is not None else None
            return GroupRecord(k.Group, v)
    except CoordinatorRecordError:
        raise
    except Exception as e:
        raise CoordinatorRecordError(f"unreadable record of __consumer_offsets: {e}") from None
    raise CoordinatorRecordError(f"record kind {kind} of __consumer_offsets is not known")
