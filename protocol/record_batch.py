"""Record batch v2 (magic 2), the on-disk and on-wire unit of Kafka logs, as KRaft writes it.

Layout (reference 8.2): a 61-byte header, then the records. The CRC is CRC-32C over everything
from Attributes to the end of the batch; PartitionLeaderEpoch sits before it and is not covered.
Only uncompressed batches are read: KRaft never compresses its metadata log.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, TypeAlias

from crc32c import crc32c

from protocol.varint import (
    VarintError,
    decode_varint,
    decode_varlong,
    encode_varint,
    encode_varlong,
)

if TYPE_CHECKING:
    from protocol.framing import ApiMessageAndVersion

Buffer: TypeAlias = bytes | bytearray | memoryview

MAGIC = 2
LOG_OVERHEAD = 12  # BaseOffset + Length: the part of the header that Length does not count
BATCH_OVERHEAD = 61
CRC_START = 21  # Attributes: first byte the CRC covers
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_FLAG = 0x10
CONTROL_FLAG = 0x20
DELETE_HORIZON_FLAG = 0x40
COMPRESSION_NAMES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}

# BaseOffset, Length, PartitionLeaderEpoch, Magic, CRC, Attributes, LastOffsetDelta,
# BaseTimestamp, MaxTimestamp, ProducerId, ProducerEpoch, BaseSequence, RecordsCount
_HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_STRUCT = _HEADER  # for readers that parse headers in place (protocol.metadata_batches)
_AFTER_CRC = struct.Struct(">hiqqqhii")
_PREFIX = struct.Struct(">qiib")
_NULL_LENGTH = encode_varint(-1)
_ZERO = b"\x00"
_new = object.__new__
assert _HEADER.size == BATCH_OVERHEAD


class CorruptBatchError(Exception):
    """A batch that cannot be read: bad CRC, bad magic, bad lengths or records.

    `offset_in_file` is the byte position of the batch in the buffer given (the file offset when
    the buffer is a whole file); `reason` says what is wrong.
    """

    def __init__(self, offset_in_file: int, reason: str) -> None:
        super().__init__(f"corrupt record batch at file position {offset_in_file}: {reason}")
        self.offset_in_file = offset_in_file
        self.reason = reason


class TruncatedBatchError(CorruptBatchError):
    """The buffer ends before the batch does: what a torn write leaves at the tail of a segment."""


@dataclass(slots=True)
class Record:
    """One record inside a v2 batch (DefaultRecord)."""

    attributes: int = 0
    timestamp_delta: int = 0
    offset_delta: int = 0
    key: bytes | None = None
    value: bytes | None = None
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)


@dataclass(slots=True)
class RecordBatch:
    """Every header field of a v2 batch plus its records.

    `crc` is the stored checksum when decoded (encode_batch always computes a fresh one);
    `length` is the stored Length field, or -1 for a batch built in memory.
    """

    base_offset: int = 0
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH
    magic: int = MAGIC
    crc: int = 0
    attributes: int = 0
    last_offset_delta: int = -1
    base_timestamp: int = -1
    max_timestamp: int = -1
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    base_sequence: int = NO_SEQUENCE
    records: list[Record] = field(default_factory=list)
    length: int = -1

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_FLAG)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_FLAG)

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def size(self) -> int:
        """Bytes the batch takes in a log: the stored size, or what encode_batch would write."""
        if self.length >= 0:
            return self.length + LOG_OVERHEAD
        return len(encode_batch(self))


class BatchHeader(NamedTuple):
    """The fixed 61-byte header of a batch, read without touching its records."""

    base_offset: int
    length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def size(self) -> int:
        return self.length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_FLAG)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_FLAG)


def read_batch_header(buf: Buffer, pos: int = 0) -> BatchHeader:
    """Parse the header at `pos` and check that the whole batch is in `buf`, without a CRC check.

    Raises TruncatedBatchError when `buf` ends early, CorruptBatchError for an impossible
    length or a magic other than 2.
    """
    available = len(buf) - pos
    if available < LOG_OVERHEAD + 5:
        raise TruncatedBatchError(pos, f"only {available} bytes left, less than a batch header")
    _base_offset, length, _epoch, magic = _PREFIX.unpack_from(buf, pos)
    if magic != MAGIC:
        raise CorruptBatchError(pos, f"magic is {magic}, only record batch v2 (magic 2) is supported")
    if length < BATCH_OVERHEAD - LOG_OVERHEAD:
        raise CorruptBatchError(pos, f"batch length {length} is smaller than the v2 header")
    if available < length + LOG_OVERHEAD:
        raise TruncatedBatchError(
            pos, f"batch of {length + LOG_OVERHEAD} bytes but only {available} bytes left"
        )
    return BatchHeader._make(_HEADER.unpack_from(buf, pos))


def _read_records(buf: bytes, pos: int, end: int, count: int, batch_pos: int) -> list[Record]:
    # One-byte varints (zigzag 0..63) cover nearly every field of a KRaft record, so each is read
    # inline and only longer ones go through decode_varint.
    records: list[Record] = []
    append = records.append
    new = _new
    for i in range(count):
        if pos >= end:
            raise CorruptBatchError(batch_pos, f"header says {count} records but the batch holds {i}")
        b = buf[pos]
        if b < 0x80:
            size = (b >> 1) ^ -(b & 1)
            pos += 1
        elif buf[pos + 1] < 0x80:
            b = (b & 0x7F) | (buf[pos + 1] << 7)
            size = (b >> 1) ^ -(b & 1)
            pos += 2
        else:
            size, pos = decode_varint(buf, pos)
        rec_end = pos + size
        if size < 6 or rec_end > end:
            raise CorruptBatchError(batch_pos, f"record {i} has impossible length {size}")
        rec = new(Record)
        rec.attributes = buf[pos]
        b = buf[pos + 1]
        if b < 0x80:
            rec.timestamp_delta = (b >> 1) ^ -(b & 1)
            pos += 2
        else:
            rec.timestamp_delta, pos = decode_varlong(buf, pos + 1)
        b = buf[pos]
        if b < 0x80:
            rec.offset_delta = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            rec.offset_delta, pos = decode_varint(buf, pos)
        b = buf[pos]
        if b == 1:  # zigzag -1: null key, as in every KRaft record
            rec.key = None
            pos += 1
        else:
            n, pos = decode_varint(buf, pos)
            rec.key = None if n < 0 else buf[pos : pos + n]
            if n > 0:
                pos += n
        b = buf[pos]
        if b < 0x80:
            n = (b >> 1) ^ -(b & 1)
            pos += 1
        elif buf[pos + 1] < 0x80:
            b = (b & 0x7F) | (buf[pos + 1] << 7)
            n = (b >> 1) ^ -(b & 1)
            pos += 2
        else:
            n, pos = decode_varint(buf, pos)
        if n < 0:
            rec.value = None
        else:
            rec.value = buf[pos : pos + n]
            pos += n
        if buf[pos] == 0:
            rec.headers = []
            pos += 1
        else:
            rec.headers, pos = _read_headers(buf, pos, batch_pos, i)
        if pos != rec_end:
            raise CorruptBatchError(
                batch_pos, f"record {i} declares {size} bytes but its fields take {size + pos - rec_end}"
            )
        append(rec)
    if pos != end:
        raise CorruptBatchError(batch_pos, f"{end - pos} bytes left over after {count} records")
    return records


def _read_headers(
    buf: bytes, pos: int, batch_pos: int, index: int
) -> tuple[list[tuple[str, bytes | None]], int]:
    count, pos = decode_varint(buf, pos)
    headers: list[tuple[str, bytes | None]] = []
    for _ in range(count):
        n, pos = decode_varint(buf, pos)
        if n < 0:
            raise CorruptBatchError(batch_pos, f"record {index} has a header with a null key")
        hkey = buf[pos : pos + n].decode("utf-8")
        pos += n
        n, pos = decode_varint(buf, pos)
        if n < 0:
            headers.append((hkey, None))
        else:
            headers.append((hkey, buf[pos : pos + n]))
            pos += n
    return headers, pos


def decode_batch(buf: Buffer, pos: int = 0, verify_crc: bool = True) -> RecordBatch:
    """Decode the whole batch at `pos`. Errors name `pos`, the batch's position in `buf`."""
    if len(buf) - pos < BATCH_OVERHEAD:
        read_batch_header(buf, pos)  # raises the precise error
    (
        base_offset,
        length,
        epoch,
        magic,
        crc,
        attributes,
        last_offset_delta,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        count,
    ) = _HEADER.unpack_from(buf, pos)
    end = pos + length + LOG_OVERHEAD
    if magic != MAGIC or length < BATCH_OVERHEAD - LOG_OVERHEAD or end > len(buf):
        read_batch_header(buf, pos)  # raises the precise error
    if type(buf) is not bytes:
        buf = bytes(memoryview(buf)[pos:end])
        end -= pos
        pos = 0
    if verify_crc:
        actual = crc32c(memoryview(buf)[pos + CRC_START : end])
        if actual != crc:
            raise CorruptBatchError(pos, f"CRC-32C mismatch: stored {crc:#010x}, computed {actual:#010x}")
    if attributes & COMPRESSION_MASK:
        name = COMPRESSION_NAMES.get(attributes & COMPRESSION_MASK, str(attributes & COMPRESSION_MASK))
        raise CorruptBatchError(pos, f"compressed batches ({name}) are not supported")
    if count < 0:
        raise CorruptBatchError(pos, f"negative record count {count}")
    try:
        records = _read_records(buf, pos + BATCH_OVERHEAD, end, count, pos)
    except (VarintError, IndexError, UnicodeDecodeError) as e:
        raise CorruptBatchError(pos, f"unreadable record: {e}") from None
    batch = _new(RecordBatch)
    batch.base_offset = base_offset
    batch.partition_leader_epoch = epoch
    batch.magic = magic
    batch.crc = crc
    batch.attributes = attributes
    batch.last_offset_delta = last_offset_delta
    batch.base_timestamp = base_timestamp
    batch.max_timestamp = max_timestamp
    batch.producer_id = producer_id
    batch.producer_epoch = producer_epoch
    batch.base_sequence = base_sequence
    batch.records = records
    batch.length = length
    return batch


def iter_batches(buf: Buffer, pos: int = 0, verify_crc: bool = True) -> Iterator[RecordBatch]:
    """Every batch from `pos` to the end of `buf`; a partial batch at the end raises TruncatedBatchError."""
    end = len(buf)
    while pos < end:
        batch = decode_batch(buf, pos, verify_crc)
        pos += batch.length + LOG_OVERHEAD
        yield batch


def iter_batch_positions(buf: Buffer, pos: int = 0) -> Iterator[tuple[int, BatchHeader]]:
    """(position, header) of every batch, reading headers only: the cheap way to scan a segment."""
    end = len(buf)
    while pos < end:
        h = read_batch_header(buf, pos)
        yield pos, h
        pos += h.length + LOG_OVERHEAD


def _encode_record(rec: Record) -> bytes:
    parts = [
        bytes((rec.attributes & 0xFF,)),
        encode_varlong(rec.timestamp_delta),
        encode_varint(rec.offset_delta),
    ]
    for blob in (rec.key, rec.value):
        if blob is None:
            parts.append(_NULL_LENGTH)
        else:
            parts.append(encode_varint(len(blob)))
            parts.append(blob)
    parts.append(encode_varint(len(rec.headers)))
    for hkey, hvalue in rec.headers:
        raw_key = hkey.encode("utf-8")
        parts.append(encode_varint(len(raw_key)))
        parts.append(raw_key)
        if hvalue is None:
            parts.append(_NULL_LENGTH)
        else:
            parts.append(encode_varint(len(hvalue)))
            parts.append(hvalue)
    body = b"".join(parts)
    return encode_varint(len(body)) + body


def _frame(
    base_offset: int,
    partition_leader_epoch: int,
    after_crc_fields: tuple[int, ...],
    records_bytes: bytes,
) -> bytes:
    tail = _AFTER_CRC.pack(*after_crc_fields) + records_bytes
    length = BATCH_OVERHEAD - LOG_OVERHEAD + len(records_bytes)
    return (
        _PREFIX.pack(base_offset, length, partition_leader_epoch, MAGIC)
        + struct.pack(">I", crc32c(tail))
        + tail
    )


def encode_batch(batch: RecordBatch) -> bytes:
    """The batch as bytes with a freshly computed Length and CRC; a decoded batch re-encodes byte for byte."""
    if batch.magic != MAGIC:
        raise ValueError(f"only record batch v2 (magic 2) can be written, not magic {batch.magic}")
    if batch.attributes & COMPRESSION_MASK:
        raise ValueError("compressed batches cannot be written")
    records_bytes = b"".join([_encode_record(r) for r in batch.records])
    fields = (
        batch.attributes,
        batch.last_offset_delta,
        batch.base_timestamp,
        batch.max_timestamp,
        batch.producer_id,
        batch.producer_epoch,
        batch.base_sequence,
        len(batch.records),
    )
    return _frame(batch.base_offset, batch.partition_leader_epoch, fields, records_bytes)


# zigzag varints of small non-negative ints (offset deltas, lengths), precomputed for the writers
_SMALL_VARINTS = [encode_varint(n) for n in range(4096)]


def _simple_records(values: Sequence[tuple[bytes | None, bytes]]) -> bytes:
    """Records with timestamp delta 0 and consecutive offset deltas, as KRaft's BatchBuilder writes them."""
    small = _SMALL_VARINTS
    limit = len(small)
    out = bytearray()
    for i, (key, value) in enumerate(values):
        delta = small[i] if i < limit else encode_varint(i)
        n = len(value)
        value_len = small[n] if n < limit else encode_varint(n)
        key_part = _NULL_LENGTH if key is None else encode_varint(len(key)) + key
        # attributes, timestamp delta, offset delta, key, value length, value, header count
        size = 3 + len(delta) + len(key_part) + len(value_len) + n
        out += small[size] if size < limit else encode_varint(size)
        out += b"\x00\x00"
        out += delta
        out += key_part
        out += value_len
        out += value
        out.append(0)
    return bytes(out)


def _kraft_batch(
    base_offset: int,
    leader_epoch: int,
    timestamp_ms: int,
    attributes: int,
    values: Sequence[tuple[bytes | None, bytes]],
) -> bytes:
    if not values:
        raise ValueError("a batch needs at least one record")
    fields = (
        attributes,
        len(values) - 1,
        timestamp_ms,
        timestamp_ms,
        NO_PRODUCER_ID,
        NO_PRODUCER_EPOCH,
        NO_SEQUENCE,
        len(values),
    )
    return _frame(base_offset, leader_epoch, fields, _simple_records(values))


def build_data_batch(values: Sequence[tuple[bytes | None, bytes]], timestamp_ms: int) -> bytes:
    """A batch of plain records (no producer id, offsets from 0), as a broker writes to its own
    internal topics; the leader's append gives it its offsets and epoch."""
    return _kraft_batch(0, NO_PARTITION_LEADER_EPOCH, timestamp_ms, 0, values)


def build_metadata_batch(
    base_offset: int,
    leader_epoch: int,
    timestamp_ms: int,
    records: Sequence[ApiMessageAndVersion],
) -> bytes:
    """A KRaft data batch: uncompressed, CreateTime, no producer, null keys, framed metadata records."""
    if not records:
        raise ValueError("a batch needs at least one record")
    fields = (
        0,
        len(records) - 1,
        timestamp_ms,
        timestamp_ms,
        NO_PRODUCER_ID,
        NO_PRODUCER_EPOCH,
        NO_SEQUENCE,
        len(records),
    )
    return _frame(base_offset, leader_epoch, fields, _metadata_records_section(records))


# What precedes a metadata record's value length at offset delta i: attributes 0, timestamp delta 0,
# the zigzag varint i, a null key. Grown on demand (a controller batch holds 10,000 records at most)
# by replacing the list, never by appending to it: batches are built on the loop and on the log's
# thread at once, and a list grown in place by two of them would hold heads at the wrong index.
_RECORD_HEADS: list[bytes] = []


def _metadata_records_section(records: Sequence[ApiMessageAndVersion]) -> bytes:
    """_simple_records([(None, encode_record(r)) for r in records]) in one pass: the bytes are the
    same, and the same errors are raised, but each record's writer is looked up once per run of
    records of one type and version, and no value is copied out on its own (a failed dir writes
    100,000 PartitionChangeRecords)."""
    from protocol.framing import _WRITERS, encode_record

    global _RECORD_HEADS
    heads = _RECORD_HEADS
    if len(heads) < len(records):
        heads = heads + [
            b"\x00\x00" + encode_varint(i) + _NULL_LENGTH for i in range(len(heads), len(records))
        ]
        _RECORD_HEADS = heads
    small = _SMALL_VARINTS
    limit = len(small)
    writers = _WRITERS
    out = bytearray()
    last_type: type | None = None
    last_version = -1
    header = b""
    enc: Any = None
    value: bytes | bytearray = b""
    i = 0
    try:
        for i, amv in enumerate(records):
            message = amv.message
            version = amv.version
            if type(message) is not last_type or version != last_version:
                entry = writers.get((type(message), version))
                if entry is None:
                    value = encode_record(amv)  # fills the table, or an UnknownRecord's bytes
                    entry = writers.get((type(message), version))
                if entry is None:
                    last_type = None
                else:
                    last_type, last_version = type(message), version
                    header, enc = entry
            if last_type is not None:
                value = bytearray(header)
                enc(message, value)
            head = heads[i]
            n = len(value)
            value_len = small[n] if n < limit else encode_varint(n)
            size = len(head) + len(value_len) + n + 1
            out += small[size] if size < limit else encode_varint(size)
            out += head
            out += value_len
            out += value
            out.append(0)  # no headers
    except Exception:
        encode_record(records[i])  # raises the error as encode_record words it
        raise
    return bytes(out)


def build_control_batch(
    base_offset: int,
    leader_epoch: int,
    timestamp_ms: int,
    control_records: Sequence[Any],
) -> bytes:
    """A KRaft control batch (Control=1, Transactional=0) of control records such as SnapshotHeaderRecord.

    Each item is a control record instance (written at version 0, as Kafka does) or an
    ApiMessageAndVersion wrapping one to pick its version.
    """
    from protocol.control_records import encode_control_record

    values = [encode_control_record(r) for r in control_records]
    return _kraft_batch(base_offset, leader_epoch, timestamp_ms, CONTROL_FLAG, values)


def metadata_records(batch: RecordBatch) -> list[ApiMessageAndVersion]:
    """The framed metadata records in a data batch (unknown types come back as UnknownRecord)."""
    from protocol.framing import decode_records

    if batch.attributes & CONTROL_FLAG:
        raise ValueError(f"batch at offset {batch.base_offset} is a control batch, not metadata records")
    values = [r.value for r in batch.records]
    if None in values:
        r = batch.records[values.index(None)]
        raise ValueError(f"record at offset {batch.base_offset + r.offset_delta} has a null value")
    return decode_records(values)  # type: ignore[arg-type]
