"""Record batches as clients write and read them (v2, uncompressed, CreateTime)."""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from crc32c import crc32c

from protocol.record_batch import (
    BATCH_OVERHEAD,
    LOG_OVERHEAD,
    MAGIC,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    CorruptBatchError,
    RecordBatch,
    TruncatedBatchError,
    decode_batch,
    iter_batch_positions,
    iter_batches,
    read_batch_header,
)
from protocol.varint import encode_varint, encode_varlong

Headers = list[tuple[str, bytes | None]]


@dataclass(slots=True)
class ProducerRecord:
    """A record waiting in a batch (not frozen: made once per record on the hot path)."""

    key: bytes | None
    value: bytes | None
    timestamp_ms: int
    headers: Headers = field(default_factory=list)

    @property
    def size(self) -> int:
        return record_size(self.key, self.value, self.headers)


def record_size(key: bytes | None, value: bytes | None, headers: Headers | None) -> int:
    """A close upper bound of a record's encoded size, for batching."""
    size = 21 + (len(key) if key else 0) + (len(value) if value else 0)
    for k, v in headers or ():
        size += 10 + len(k) + (len(v) if v else 0)
    return size


# Zigzag varints of small values, the lengths and deltas nearly every record has.
_SMALL = [encode_varint(i) for i in range(1 << 14)]
_NULL = encode_varint(-1)
_BATCH_HEAD = struct.Struct(">qiib")  # BaseOffset, Length, PartitionLeaderEpoch, Magic
_AFTER_CRC = struct.Struct(">hiqqqhii")  # Attributes .. RecordCount
_CRC = struct.Struct(">I")


def _varint(n: int) -> bytes:
    return _SMALL[n] if 0 <= n < 16384 else encode_varint(n)


def _encode_records(records: Sequence[ProducerRecord], base_ts: int) -> bytes:
    parts: list[bytes] = []
    append = parts.append
    small, null, join = _SMALL, _NULL, b"".join
    for i, r in enumerate(records):
        key, value, headers = r.key, r.value, r.headers
        dt = r.timestamp_ms - base_ts
        body = [
            b"\x00",
            small[dt] if 0 <= dt < 16384 else encode_varlong(dt),
            small[i] if i < 16384 else encode_varint(i),
        ]
        if key is None:
            body.append(null)
        else:
            n = len(key)
            body += (small[n] if n < 16384 else encode_varint(n), key)
        if value is None:
            body.append(null)
        else:
            n = len(value)
            body += (small[n] if n < 16384 else encode_varint(n), value)
        if headers:
            body.append(_varint(len(headers)))
            for hkey, hvalue in headers:
                raw = hkey.encode()
                body += (
                    _varint(len(raw)),
                    raw,
                    null if hvalue is None else _varint(len(hvalue)),
                    hvalue or b"",
                )
        else:
            body.append(b"\x00")
        joined = join(body)
        n = len(joined)
        append(small[n] if n < 16384 else encode_varint(n))
        append(joined)
    return join(parts)


def build_batch(
    records: Sequence[ProducerRecord],
    *,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
) -> bytes:
    """One batch with BaseOffset 0, as a producer sends it (the leader gives it offsets).

    The same bytes as `protocol.record_batch.encode_batch` writes for these records (the tests
    compare them), built without a Record object per record.
    """
    if not records:
        raise ValueError("a batch needs at least one record")
    base_ts = records[0].timestamp_ms
    body = _encode_records(records, base_ts)
    tail = (
        _AFTER_CRC.pack(
            0,
            len(records) - 1,
            base_ts,
            max(r.timestamp_ms for r in records),
            producer_id,
            producer_epoch,
            base_sequence,
            len(records),
        )
        + body
    )
    head = _BATCH_HEAD.pack(0, BATCH_OVERHEAD - LOG_OVERHEAD + len(body), NO_PARTITION_LEADER_EPOCH, MAGIC)
    return head + _CRC.pack(crc32c(tail)) + tail


@dataclass(frozen=True, slots=True)
class ConsumerRecord:
    topic: str
    partition: int
    offset: int
    timestamp_ms: int
    key: bytes | None
    value: bytes | None
    headers: Headers
    leader_epoch: int
    producer_id: int = NO_PRODUCER_ID


def read_records(topic: str, partition: int, data: bytes, from_offset: int) -> Iterator[ConsumerRecord]:
    """The data records at or after `from_offset` in fetched batches (CRC checked; control batches skipped)."""
    for batch in iter_batches(data):
        if batch.last_offset >= from_offset and not batch.is_control:
            yield from _records_of(topic, partition, batch, from_offset)


def _records_of(topic: str, partition: int, batch: RecordBatch, from_offset: int) -> Iterator[ConsumerRecord]:
    for r in batch.records:
        offset = batch.base_offset + r.offset_delta
        if offset >= from_offset:
            yield ConsumerRecord(
                topic,
                partition,
                offset,
                batch.base_timestamp + r.timestamp_delta,
                r.key,
                r.value,
                r.headers,
                batch.partition_leader_epoch,
                batch.producer_id,
            )


@dataclass(frozen=True)
class Fetched:
    """What one partition's fetched bytes hold for a consumer at `from_offset`."""

    records: list[ConsumerRecord]
    next_offset: int  # where reading continues: past the last whole batch, or at the corrupt one
    corrupt: str | None = None  # why reading stopped at a batch that fails its checks


def read_fetched(topic: str, partition: int, data: bytes, from_offset: int) -> Fetched:
    """The records of every good batch before the first one that fails its CRC or does not decode, as
    Kafka's consumer returns them before raising CorruptRecordException; a batch cut short at the end
    of the response (the fetch size limit) is left for the next fetch."""
    records: list[ConsumerRecord] = []
    next_offset, pos = from_offset, 0
    while pos < len(data):
        try:
            batch = decode_batch(data, pos, True)
        except TruncatedBatchError:
            break
        except CorruptBatchError as e:
            try:
                at = max(next_offset, read_batch_header(data, pos).base_offset)
            except CorruptBatchError:
                at = next_offset
            return Fetched(records, at, f"the batch at offset {at} of {topic}-{partition} is corrupt: {e}")
        pos += batch.length + LOG_OVERHEAD
        next_offset = max(next_offset, batch.last_offset + 1)
        if batch.is_control:
            continue
        records.extend(_records_of(topic, partition, batch, from_offset))
    return Fetched(records, next_offset)


def next_offset_after(data: bytes, current: int) -> int:
    """Where reading continues after these batches (control batches count too)."""
    end = current
    for _, h in iter_batch_positions(data):
        end = max(end, h.last_offset + 1)
    return end
