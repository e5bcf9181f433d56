"""Idempotent-producer state of one partition (storage ProducerStateManager), sans-IO.

Per producer id: its epoch and the sequence/offset ranges of its last five data batches. A client
batch that repeats one of those five (same epoch, same first and last sequence) is a retry of a batch
already in the log: it is acknowledged with the offsets it got the first time and not appended.
Otherwise its first sequence must follow the last one (OUT_OF_ORDER_SEQUENCE_NUMBER), and its epoch
must not be older than the producer's (INVALID_PRODUCER_EPOCH). A producer whose batches are all gone
from the log (retention) is forgotten, after which any sequence is accepted again, as in Kafka.
Batches copied by followers update the state without these checks: the leader made them.

The state is rebuilt from batch headers when a log is opened; nothing here touches a disk. It stays
beside PartitionLog rather than in kraftpy.log: the metadata log has no producers.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Protocol

from protocol.errors import Errors, KafkaError
from protocol.record_batch import NO_PRODUCER_EPOCH

NUM_BATCHES_TO_RETAIN = 5
INT32_MAX = (1 << 31) - 1


class ProducerBatch(Protocol):
    """The header fields the state needs (protocol.record_batch.BatchHeader has them all)."""

    @property
    def producer_id(self) -> int: ...
    @property
    def producer_epoch(self) -> int: ...
    @property
    def base_sequence(self) -> int: ...
    @property
    def last_offset_delta(self) -> int: ...
    @property
    def max_timestamp(self) -> int: ...
    @property
    def is_control(self) -> bool: ...


def increment_sequence(sequence: int, increment: int) -> int:
    """Sequences wrap from INT32_MAX back to 0 (DefaultRecordBatch.incrementSequence)."""
    if sequence > INT32_MAX - increment:
        return increment - (INT32_MAX - sequence) - 1
    return sequence + increment


def in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int


@dataclass(slots=True)
class ProducerStateEntry:
    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    batches: deque[BatchMetadata] = field(default_factory=lambda: deque(maxlen=NUM_BATCHES_TO_RETAIN))
    last_timestamp: int = -1

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else -1

    @property
    def last_data_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    def find_duplicate(self, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        if epoch != self.producer_epoch:
            return None
        for b in self.batches:
            if b.first_seq == first_seq and b.last_seq == last_seq:
                return b
        return None

    def copy(self) -> ProducerStateEntry:
        return ProducerStateEntry(
            self.producer_id,
            self.producer_epoch,
            deque(self.batches, maxlen=NUM_BATCHES_TO_RETAIN),
            self.last_timestamp,
        )


class ProducerStateManager:
    def __init__(self, producers: dict[int, ProducerStateEntry] | None = None) -> None:
        self._producers: dict[int, ProducerStateEntry] = producers or {}

    def __len__(self) -> int:
        return len(self._producers)

    def last_entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self._producers.get(producer_id)

    @property
    def producer_ids(self) -> list[int]:
        return sorted(self._producers)

    def find_duplicate(self, batch: ProducerBatch) -> BatchMetadata | None:
        """The earlier append of a retried client batch, if it is among the producer's last five."""
        if batch.producer_id < 0 or batch.is_control:
            return None
        entry = self._producers.get(batch.producer_id)
        if entry is None:
            return None
        last_seq = increment_sequence(batch.base_sequence, batch.last_offset_delta)
        return entry.find_duplicate(batch.producer_epoch, batch.base_sequence, last_seq)

    def check_client_batch(self, batch: ProducerBatch, first_offset: int) -> None:
        """Raise the error Kafka gives a producer for a batch out of epoch or out of sequence."""
        if batch.producer_id < 0:
            return
        entry = self._producers.get(batch.producer_id)
        current_epoch = entry.producer_epoch if entry is not None else NO_PRODUCER_EPOCH
        pid, epoch, first_seq = batch.producer_id, batch.producer_epoch, batch.base_sequence
        if epoch < current_epoch:
            raise KafkaError(
                Errors.INVALID_PRODUCER_EPOCH,
                f"epoch {epoch} of producer {pid} at offset {first_offset} is older than its epoch {current_epoch}",
            )
        if batch.is_control:
            return
        if epoch != current_epoch:
            # A new epoch starts over at sequence 0; a producer we know nothing of may start anywhere.
            if first_seq != 0 and current_epoch != NO_PRODUCER_EPOCH:
                raise KafkaError(
                    Errors.OUT_OF_ORDER_SEQUENCE_NUMBER,
                    f"producer {pid} starts epoch {epoch} at sequence {first_seq} (offset {first_offset}), not 0",
                )
            return
        assert entry is not None
        if not in_sequence(entry.last_seq, first_seq):
            raise KafkaError(
                Errors.OUT_OF_ORDER_SEQUENCE_NUMBER,
                f"producer {pid} epoch {epoch}: sequence {first_seq} at offset {first_offset} "
                f"does not follow {entry.last_seq}",
            )

    def update(self, batch: ProducerBatch, first_offset: int) -> None:
        """Take a batch that is now in the log at `first_offset` into the state."""
        if batch.producer_id < 0:
            return
        entry = self._producers.get(batch.producer_id)
        if entry is None:
            entry = self._producers[batch.producer_id] = ProducerStateEntry(batch.producer_id)
        if batch.producer_epoch != entry.producer_epoch:
            entry.producer_epoch = batch.producer_epoch
            entry.batches.clear()
        entry.last_timestamp = batch.max_timestamp
        if batch.is_control:
            return
        entry.batches.append(
            BatchMetadata(
                first_seq=batch.base_sequence,
                last_seq=increment_sequence(batch.base_sequence, batch.last_offset_delta),
                first_offset=first_offset,
                last_offset=first_offset + batch.last_offset_delta,
                timestamp=batch.max_timestamp,
            )
        )

    def truncate_head(self, log_start_offset: int) -> None:
        """Forget producers with no data batch left at or after the log start offset."""
        self._producers = {
            pid: e
            for pid, e in self._producers.items()
            if e.batches and e.last_data_offset >= log_start_offset
        }

    def remove_expired(self, now_ms: int, expiration_ms: int) -> list[int]:
        """Forget producers idle for `producer.id.expiration.ms`; returns their ids."""
        gone = [pid for pid, e in self._producers.items() if now_ms - e.last_timestamp >= expiration_ms]
        for pid in gone:
            del self._producers[pid]
        return gone

    def copy(self) -> ProducerStateManager:
        return ProducerStateManager({pid: e.copy() for pid, e in self._producers.items()})
