"""Producer-side record batches for the storage tests, built with protocol.record_batch."""

from __future__ import annotations

from protocol.record_batch import Record, RecordBatch, encode_batch


def make_batch(
    values: list[bytes],
    *,
    timestamp: int = 1_000,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    base_offset: int = 0,
    leader_epoch: int = -1,
) -> bytes:
    records = [Record(timestamp_delta=0, offset_delta=i, key=None, value=v) for i, v in enumerate(values)]
    return encode_batch(
        RecordBatch(
            base_offset=base_offset,
            partition_leader_epoch=leader_epoch,
            last_offset_delta=len(values) - 1,
            base_timestamp=timestamp,
            max_timestamp=timestamp,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            base_sequence=base_sequence,
            records=records,
        )
    )


def value_batch(n: int, size: int = 100, *, tag: int = 0, **kw: int) -> bytes:
    """A batch of `n` records of `size` bytes each, values telling record i of batch `tag` apart."""
    return make_batch([f"{tag}:{i}:".encode().ljust(size, b"x") for i in range(n)], **kw)
