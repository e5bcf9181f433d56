"""The fast way through a metadata log: from file bytes straight to decoded records, batch by batch.

decode_batch builds a Record object for every record, which is right for general batches but is
half the cost of reading a KRaft log. KRaft records all look alike (attributes 0, timestamp delta 0,
offset delta = index, null key, no headers), so this reader checks that shape in place and slices
out the values; any batch that differs goes through decode_batch, so nothing is ever misread.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any, NamedTuple

from crc32c import crc32c

from protocol.control_records import decode_control_record
from protocol.framing import ApiMessageAndVersion, decode_records
from protocol.message import MessageDecodeError

# the record frame tables and setters are shared with framing.decode_records, whose loop this
# one repeats with the values left in place
from protocol.framing import _FRAMES, _SHARED, _malformed, _set_message, _set_version  # isort: skip
from protocol.record_batch import (
    BATCH_OVERHEAD,
    COMPRESSION_MASK,
    CONTROL_FLAG,
    CRC_START,
    HEADER_STRUCT,
    LOG_OVERHEAD,
    MAGIC,
    BatchHeader,
    CorruptBatchError,
    decode_batch,
    read_batch_header,
)


class DecodedBatch(NamedTuple):
    """A batch's position in the buffer, its header, and its decoded records: ApiMessageAndVersion
    (or UnknownRecord inside one) for data batches, decode_control_record results for control ones."""

    position: int
    header: BatchHeader
    records: list[Any]

    @property
    def is_control(self) -> bool:
        return bool(self.header.attributes & CONTROL_FLAG)

    @property
    def base_offset(self) -> int:
        return self.header.base_offset


_tuple_new = tuple.__new__


def _decode_kraft_records(buf: bytes, pos: int, end: int, count: int) -> list[Any] | None:
    """Decode the records of a data batch in place, or None if any record is not shaped as KRaft
    writes it (the caller then takes the general path). Each value is read straight from `buf`;
    a reader that runs past its value is caught by the end-of-value check."""
    out: list[Any] = []
    append = out.append
    frames = _FRAMES
    shared = _SHARED
    new = object.__new__
    amv_cls = ApiMessageAndVersion
    set_message = _set_message
    set_version = _set_version
    for i in range(count):
        if pos >= end:
            return None
        b = buf[pos]
        if b < 0x80:
            size = (b >> 1) ^ -(b & 1)
            pos += 1
        elif buf[pos + 1] < 0x80:
            b = (b & 0x7F) | (buf[pos + 1] << 7)
            size = (b >> 1) ^ -(b & 1)
            pos += 2
        else:
            return None
        rec_end = pos + size
        # attributes 0, timestamp delta 0, then the offset delta i as a zigzag varint
        if buf[pos] or buf[pos + 1]:
            return None
        z = i << 1
        if z < 0x80:
            if buf[pos + 2] != z:
                return None
            pos += 3
        elif z < 0x4000:
            if buf[pos + 2] != (z & 0x7F) | 0x80 or buf[pos + 3] != z >> 7:
                return None
            pos += 4
        else:
            return None
        if buf[pos] != 1:  # null key
            return None
        b = buf[pos + 1]
        if b < 0x80:
            n = b >> 1
            pos += 2
        elif buf[pos + 2] < 0x80:
            b = (b & 0x7F) | (buf[pos + 2] << 7)
            n = b >> 1
            pos += 3
        else:
            return None
        value_end = pos + n
        if b & 1 or value_end + 1 != rec_end or rec_end > end or buf[value_end]:
            return None  # negative value length, headers, or lengths that do not add up
        if n == 4:
            amv = shared.get(buf[pos:value_end])
            if amv is not None:
                append(amv)
                pos = rec_end
                continue
        frame = frames.get(buf[pos : pos + 3])
        if frame is None:
            return None  # unknown type, or a frame in long varints: let decode_records handle it
        dec, version = frame
        try:
            message, stop = dec(buf, pos + 3)
        except (IndexError, struct.error, UnicodeDecodeError, ValueError) as e:
            raise _malformed(buf[pos:value_end], e) from None
        if stop != value_end:
            raise _malformed(
                buf[pos:value_end], MessageDecodeError(f"its fields take {stop - pos} of its {n} bytes")
            )
        amv = new(amv_cls)
        set_message(amv, message)
        set_version(amv, version)
        append(amv)
        pos = rec_end
    return out if pos == end else None


def read_metadata_batch(buf: bytes, pos: int = 0, verify_crc: bool = True) -> DecodedBatch:
    """Decode the batch at `pos` and its records. Raises CorruptBatchError (naming `pos`) for a bad
    batch and MessageDecodeError for a record that is not readable."""
    if len(buf) - pos < BATCH_OVERHEAD:
        read_batch_header(buf, pos)  # raises the precise error
    fields = HEADER_STRUCT.unpack_from(buf, pos)
    length = fields[1]
    end = pos + length + LOG_OVERHEAD
    if fields[3] != MAGIC or length < BATCH_OVERHEAD - LOG_OVERHEAD or end > len(buf):
        read_batch_header(buf, pos)  # raises the precise error
    h = _tuple_new(BatchHeader, fields)
    if verify_crc:
        actual = crc32c(memoryview(buf)[pos + CRC_START : end])
        if actual != h.crc:
            raise CorruptBatchError(pos, f"CRC-32C mismatch: stored {h.crc:#010x}, computed {actual:#010x}")
    attributes = h.attributes
    if attributes & CONTROL_FLAG:
        batch = decode_batch(buf, pos, verify_crc=False)
        return _tuple_new(
            DecodedBatch, (pos, h, [decode_control_record(r.key, r.value) for r in batch.records])
        )
    records = None
    if not attributes & COMPRESSION_MASK and h.records_count >= 0:
        try:
            records = _decode_kraft_records(buf, pos + BATCH_OVERHEAD, end, h.records_count)
        except IndexError:
            records = None
    if records is None:
        batch = decode_batch(buf, pos, verify_crc=False)
        if any(r.value is None for r in batch.records):
            raise CorruptBatchError(pos, "a metadata record has a null value")
        records = decode_records([r.value for r in batch.records])  # type: ignore[misc]
    return _tuple_new(DecodedBatch, (pos, h, records))


def iter_metadata_batches(buf: bytes, pos: int = 0, verify_crc: bool = True) -> Iterator[DecodedBatch]:
    """Every batch of a segment or snapshot, decoded; a torn tail raises TruncatedBatchError."""
    if type(buf) is not bytes:
        buf = bytes(buf)
    end = len(buf)
    while pos < end:
        batch = read_metadata_batch(buf, pos, verify_crc)
        pos += batch.header.length + LOG_OVERHEAD
        yield batch
