"""Record batches as clients write and read them (v2, uncompressed, CreateTime)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from protocol.record_batch import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    Record,
    RecordBatch,
    encode_batch,
    iter_batches,
)

Headers = list[tuple[str, bytes | None]]


@dataclass(frozen=True, slots=True)
class ProducerRecord:
    key: bytes | None
    value: bytes | None
    timestamp_ms: int
    headers: Headers = field(default_factory=list)

    @property
    def size(self) -> int:
        """A close upper bound of its encoded size, for batching."""
        size = 21 + (len(self.key) if self.key else 0) + (len(self.value) if self.value else 0)
        for k, v in self.headers:
            size += 10 + len(k) + (len(v) if v else 0)
        return size


def build_batch(
    records: Sequence[ProducerRecord],
    *,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
) -> bytes:
    """One batch with BaseOffset 0, as a producer sends it (the leader gives it offsets)."""
    if not records:
        raise ValueError("a batch needs at least one record")
    base_ts = records[0].timestamp_ms
    batch = RecordBatch(
        base_offset=0,
        attributes=0,
        last_offset_delta=len(records) - 1,
        base_timestamp=base_ts,
        max_timestamp=max(r.timestamp_ms for r in records),
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        records=[
            Record(
                timestamp_delta=r.timestamp_ms - base_ts,
                offset_delta=i,
                key=r.key,
                value=r.value,
                headers=list(r.headers),
            )
            for i, r in enumerate(records)
        ],
    )
    return encode_batch(batch)


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
        if batch.last_offset < from_offset or batch.is_control:
            continue
        for r in batch.records:
            offset = batch.base_offset + r.offset_delta
            if offset < from_offset:
                continue
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


def next_offset_after(data: bytes, current: int) -> int:
    """Where reading continues after these batches (control batches count too)."""
    end = current
    for batch in iter_batches(data, verify_crc=False):
        end = max(end, batch.last_offset + 1)
    return end
