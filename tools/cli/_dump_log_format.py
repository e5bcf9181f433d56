"""`kraftpy metadata dump` in Kafka's format: the lines `kafka-dump-log.sh --cluster-metadata-decoder
--files F` prints (kafka.tools.DumpLogSegments, Kafka 3.9).

Per file: `Dumping <path>`, then `Log starting offset: <base offset>` for a segment, `Snapshot end
offset: <o>, epoch: <e>` for a snapshot, `KRaft bootstrap snapshot` for bootstrap.checkpoint. Per
batch (printBatchLevel) one line of header fields, `position` being the batch's byte position in the
file and `crc` the stored CRC-32C read unsigned. Per record a line starting `| offset:`; a data
record ends with ` payload: ` and the MetadataRecordSerde JSON (`{"type":"<MetadataRecordType>",
"version":v,"data":{...}}`) or `Error at <offset>, skipping. <reason>`; a control record with
` endTxnMarker: ...`, ` SnapshotHeader {...}`, ` SnapshotFooter {...}`, ` KRaftVersion {...}`,
` KRaftVoters {...}` or, for LeaderChange and unknown types, ` controlType: LEADER_CHANGE(2)`.
Batches are read as FileLogInputStream reads them: a tail too short to hold its batch ends the
file with `Found <n> invalid bytes at the end of <name>`.

Where Kafka prints `isvalid: false` or the trailing-bytes line and exits 0, this module prints the
same and then raises LogFileError, so the command exits 1; where Kafka stops with a stack trace
(an impossible batch size, a legacy or compressed batch, unreadable records) it raises LogFileError.
"""

from __future__ import annotations

import struct
from typing import Any, TextIO

from crc32c import crc32c

from protocol.codegen import decoder_for
from protocol.control_records import ControlRecordType, UnknownControlRecord, decode_control_record
from protocol.log_files import FileKind, LogFile, LogFileError, read_bytes
from protocol.message import MessageDecodeError
from protocol.metadata_records import RECORD_CLASSES, MetadataRecordType
from protocol.record_batch import (
    BATCH_OVERHEAD,
    COMPRESSION_MASK,
    COMPRESSION_NAMES,
    CRC_START,
    DELETE_HORIZON_FLAG,
    LOG_OVERHEAD,
    NO_SEQUENCE,
    TIMESTAMP_TYPE_MASK,
    BatchHeader,
    CorruptBatchError,
    Record,
    decode_batch,
    read_batch_header,
)
from protocol.varint import VarintError, decode_unsigned_varint
from tools.cli._kafka_json import dumps, message_json

HEADER_SIZE_UP_TO_MAGIC = 17  # FileLogInputStream: fewer bytes than this cannot start a batch
RECORD_OVERHEAD_V0 = 14  # LegacyRecord.RECORD_OVERHEAD_V0: the smallest size field Kafka accepts
FRAME_VERSION = 1
_INT32_MAX = 0x7FFFFFFF
_CONTROL_JSON_LABELS = {
    ControlRecordType.SNAPSHOT_HEADER: "SnapshotHeader",
    ControlRecordType.SNAPSHOT_FOOTER: "SnapshotFooter",
    ControlRecordType.KRAFT_VERSION: "KRaftVersion",
    ControlRecordType.KRAFT_VOTERS: "KRaftVoters",
}


def increment_sequence(sequence: int, increment: int) -> int:
    """DefaultRecordBatch.incrementSequence: sequences wrap from Integer.MAX_VALUE to 0."""
    if sequence > _INT32_MAX - increment:
        return increment - (_INT32_MAX - sequence) - 1
    return sequence + increment


def _bool(value: bool) -> str:
    return "true" if value else "false"


def _timestamp_type(attributes: int) -> str:
    return "LogAppendTime" if attributes & TIMESTAMP_TYPE_MASK else "CreateTime"


def file_header(log_file: LogFile) -> str:
    """The line after `Dumping <path>` that names what the file is."""
    if log_file.kind is FileKind.SEGMENT:
        return f"Log starting offset: {log_file.offset}"
    if log_file.kind is FileKind.BOOTSTRAP:
        return "KRaft bootstrap snapshot"
    return f"Snapshot end offset: {log_file.offset}, epoch: {log_file.epoch}"


def batch_line(h: BatchHeader, position: int, valid: bool) -> str:
    """printBatchLevel for a v2 batch."""
    last_sequence = (
        NO_SEQUENCE
        if h.base_sequence == NO_SEQUENCE
        else increment_sequence(h.base_sequence, h.last_offset_delta)
    )
    horizon = (
        f"OptionalLong[{h.base_timestamp}]" if h.attributes & DELETE_HORIZON_FLAG else "OptionalLong.empty"
    )
    codec = COMPRESSION_NAMES[h.attributes & COMPRESSION_MASK]
    return (
        f"baseOffset: {h.base_offset} lastOffset: {h.last_offset} count: {h.records_count} "
        f"baseSequence: {h.base_sequence} lastSequence: {last_sequence} producerId: {h.producer_id} "
        f"producerEpoch: {h.producer_epoch} partitionLeaderEpoch: {h.partition_leader_epoch} "
        f"isTransactional: {_bool(h.is_transactional)} isControl: {_bool(h.is_control)} "
        f"deleteHorizonMs: {horizon} position: {position} {_timestamp_type(h.attributes)}: "
        f"{h.max_timestamp} size: {h.size} magic: {h.magic} compresscodec: {codec} crc: {h.crc} "
        f"isvalid: {_bool(valid)}"
    )


def record_prefix(h: BatchHeader, rec: Record) -> str:
    """`| offset: ... headerKeys: [...]`, the part of a record line every record has."""
    if h.attributes & TIMESTAMP_TYPE_MASK:
        timestamp = h.max_timestamp
    else:
        timestamp = h.base_timestamp + rec.timestamp_delta
    sequence = increment_sequence(h.base_sequence, rec.offset_delta) if h.base_sequence >= 0 else NO_SEQUENCE
    key_size = -1 if rec.key is None else len(rec.key)
    value_size = -1 if rec.value is None else len(rec.value)
    header_keys = ",".join(k for k, _ in rec.headers)
    return (
        f"| offset: {h.base_offset + rec.offset_delta} {_timestamp_type(h.attributes)}: {timestamp} "
        f"keySize: {key_size} valueSize: {value_size} sequence: {sequence} headerKeys: [{header_keys}]"
    )


class _ParseError(Exception):
    """MetadataParseException: its message goes after `Error at <offset>, skipping.`"""


def _read_short(buf: bytes, pos: int, entity: str) -> tuple[int, int]:
    try:
        value, pos = decode_unsigned_varint(buf, pos)
    except VarintError:
        raise _ParseError(f"Error while reading {entity}") from None
    if value > 0x7FFF:
        raise _ParseError(f"Value for {entity} was too large.")
    return value, pos


def _metadata_json(value: bytes | None) -> str:
    """MetadataRecordSerde.read, then the dump's JSON object; _ParseError with Kafka's message."""
    if value is None:
        raise _ParseError("Error while reading frame version")
    frame_version, pos = _read_short(value, 0, "frame version")
    if frame_version == 0:
        raise _ParseError(
            "Could not deserialize metadata record with frame version 0. Note that upgrades from the "
            "preview release of KRaft in 2.8 to newer versions are not supported."
        )
    if frame_version != FRAME_VERSION:
        raise _ParseError(
            "Could not deserialize metadata record due to unknown frame version "
            f"{frame_version}(only frame version {FRAME_VERSION} is supported)"
        )
    api_key, pos = _read_short(value, pos, "type")
    version, pos = _read_short(value, pos, "version")
    cls = RECORD_CLASSES.get(api_key)
    if cls is None:
        raise _ParseError(
            f"org.apache.kafka.common.errors.UnsupportedVersionException: Unknown metadata id {api_key}"
        )
    if not cls.LOWEST_VERSION <= version <= cls.HIGHEST_VERSION:
        # Kafka reads it as if it were its highest known version; we do not guess
        raise _ParseError(f"Unknown version {version} of record type {api_key} ({cls.NAME})")
    try:
        message, end = decoder_for(cls, version)(value, pos)
    except (MessageDecodeError, IndexError, struct.error, UnicodeDecodeError, ValueError):
        raise _ParseError(f"Failed to deserialize record with type {api_key}") from None
    if end != len(value):
        raise _ParseError(f"Found {len(value) - end} byte(s) of garbage after {api_key}")
    data = message_json(message, version)
    return dumps({"type": MetadataRecordType(api_key).name, "version": version, "data": data})


def metadata_payload(offset: int, value: bytes | None) -> str:
    """What ClusterMetadataLogMessageParser gives for a data record's value."""
    try:
        return _metadata_json(value)
    except _ParseError as e:
        return f"Error at {offset}, skipping. {e}"


def control_suffix(rec: Record) -> str:
    """The end of a control record's line (after headerKeys); MessageDecodeError where Kafka throws."""
    key = rec.key
    if key is None or len(key) < 4:
        raise MessageDecodeError(f"control record key must be at least 4 bytes, got {key!r}")
    key_version, type_id = struct.unpack_from(">hh", key, 0)
    if key_version < 0:
        raise MessageDecodeError(f"invalid control record key version {key_version}")
    try:
        ctype = ControlRecordType(type_id)
    except ValueError:
        ctype = ControlRecordType.UNKNOWN
    if ctype in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        value = rec.value or b""
        if len(value) < 6 or struct.unpack_from(">h", value, 0)[0] < 0:
            raise MessageDecodeError(f"invalid end transaction marker value {value!r}")
        (coordinator_epoch,) = struct.unpack_from(">i", value, 2)
        return f" endTxnMarker: {ctype.name} coordinatorEpoch: {coordinator_epoch}"
    label = _CONTROL_JSON_LABELS.get(ctype)
    if label is None:
        return f" controlType: {ctype.name}({type_id})"
    decoded: Any = decode_control_record(bytes(key[:4]), rec.value)
    if isinstance(decoded, UnknownControlRecord):
        raise MessageDecodeError(f"{ctype.name} control record of an unknown version")
    return f" {label} {dumps(message_json(decoded.message, decoded.version))}"


def _record_lines(h: BatchHeader, records: list[Record], from_offset: int) -> list[str]:
    lines = []
    for rec in records:
        offset = h.base_offset + rec.offset_delta
        if offset < from_offset:
            continue
        if h.is_control:
            lines.append(record_prefix(h, rec) + control_suffix(rec))
        else:
            lines.append(f"{record_prefix(h, rec)} payload: {metadata_payload(offset, rec.value)}")
    return lines


def dump_file(log_file: LogFile, from_offset: int, out: TextIO) -> None:
    """Print one file as DumpLogSegments does. Raises LogFileError, after printing what Kafka would
    print, when a batch is invalid, bytes trail, or the file cannot be read on (see module doc)."""
    path = log_file.path
    buf = read_bytes(path)
    out.write(f"Dumping {path}\n{file_header(log_file)}\n")
    end = len(buf)
    pos = 0
    first_invalid: int | None = None
    while pos < end - HEADER_SIZE_UP_TO_MAGIC:
        (size,) = struct.unpack_from(">i", buf, pos + 8)
        if size < RECORD_OVERHEAD_V0:
            raise LogFileError(
                path,
                pos,
                f"Found record size {size} smaller than minimum record overhead ({RECORD_OVERHEAD_V0})",
            )
        if pos > end - LOG_OVERHEAD - size:
            break
        try:
            h = read_batch_header(buf, pos)
        except CorruptBatchError as e:
            raise LogFileError(path, pos, e.reason) from None
        if h.last_offset < from_offset:
            pos += h.size
            continue
        if h.attributes & COMPRESSION_MASK not in COMPRESSION_NAMES:
            raise LogFileError(path, pos, f"Unknown compression type id: {h.attributes & COMPRESSION_MASK}")
        valid = h.size >= BATCH_OVERHEAD and crc32c(memoryview(buf)[pos + CRC_START : pos + h.size]) == h.crc
        if not valid and first_invalid is None:
            first_invalid = pos
        out.write(batch_line(h, pos, valid) + "\n")
        try:
            records = decode_batch(buf, pos, verify_crc=False).records
            lines = _record_lines(h, records, from_offset)
        except CorruptBatchError as e:
            raise LogFileError(path, pos, e.reason) from None
        except MessageDecodeError as e:
            raise LogFileError(path, pos, f"batch at offset {h.base_offset}: {e}") from None
        if lines:
            out.write("\n".join(lines) + "\n")
        pos += h.size
    if pos < end:
        out.write(f"Found {end - pos} invalid bytes at the end of {path.name}\n")
        raise LogFileError(path, pos, f"{end - pos} bytes left that are not a whole record batch")
    if first_invalid is not None:
        raise LogFileError(path, first_invalid, "CRC-32C mismatch (isvalid: false)")
