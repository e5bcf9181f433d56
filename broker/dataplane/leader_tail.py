"""What a leader keeps in memory of the batches it just appended, to answer followers at its log end.

Kafka's leaders answer those fetches from the page cache. We keep the bytes as written instead, so a
follower's fetch at the log end needs no trip to the log dir's thread; the broker holds every
partition's tail to one budget so that leading many busy partitions cannot grow it without bound.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Protocol

from protocol.uuid import Uuid

PartitionKey = tuple[Uuid, int]


@dataclass(slots=True)
class LeaderTail:
    """The batches this leader appended last, as written, while they end the log. Contiguous, of
    one leader epoch, at most about `limit` bytes (at least the newest batch)."""

    epoch: int
    start: int
    end: int
    log_start_offset: int
    batches: deque[tuple[int, bytes]] = field(default_factory=deque)
    size: int = 0

    def add(self, base_offset: int, data: bytes, end: int, log_start_offset: int, limit: int) -> None:
        self.batches.append((base_offset, data))
        self.size += len(data)
        self.end = end
        self.log_start_offset = log_start_offset
        while self.size > limit and len(self.batches) > 1:
            _, dropped = self.batches.popleft()
            self.size -= len(dropped)
            self.start = self.batches[0][0]

    def read(self, offset: int, max_bytes: int) -> bytes | None:
        """Whole batches from the one starting at `offset` up to `max_bytes` (one at least), b"" at
        the end, None when `offset` is not a batch start held here."""
        if offset == self.end:
            return b""
        if not self.start <= offset < self.end:
            return None
        out: list[bytes] = []
        size = 0
        for base, data in self.batches:
            if base < offset:
                continue
            if not out and base != offset:
                return None  # inside a batch
            if out and size + len(data) > max_bytes:
                break
            out.append(data)
            size += len(data)
        return b"".join(out) if out else None


class HasTail(Protocol):
    tail: LeaderTail | None

    @property
    def key(self) -> PartitionKey: ...


class LeaderTails:
    """Every partition's tail on one broker, held to `budget` bytes in all: when an append takes the
    sum over it, the partitions appended to longest ago lose their tails (their followers then read
    from the log, as they would without one). The partition just appended to keeps its own."""

    def __init__(self, budget: int, per_partition: int) -> None:
        self.budget = budget
        self.per_partition = per_partition
        self.size = 0
        self._held: OrderedDict[PartitionKey, HasTail] = OrderedDict()

    def __len__(self) -> int:
        return len(self._held)

    def keep(self, hp: HasTail, epoch: int, base_offset: int, data: bytes, end: int, lso: int) -> None:
        """Add a batch just appended at `base_offset` by the leader at `epoch` (a budget of 0 keeps none)."""
        if self.budget <= 0:
            return
        tail = hp.tail
        if tail is None or tail.epoch != epoch or tail.end != base_offset:
            self.drop(hp)
            tail = hp.tail = LeaderTail(epoch, base_offset, base_offset, lso)
        before = tail.size
        tail.add(base_offset, data, end, lso, self.per_partition)
        self.size += tail.size - before
        key = hp.key
        self._held[key] = hp
        self._held.move_to_end(key)
        while self.size > self.budget and len(self._held) > 1:
            _, oldest = self._held.popitem(last=False)
            self._release(oldest)

    def drop(self, hp: HasTail) -> None:
        """Forget `hp`'s tail (it stopped leading, went offline, or left the broker)."""
        if hp.tail is not None and self._held.pop(hp.key, None) is not None:
            self._release(hp)
        hp.tail = None

    def _release(self, hp: HasTail) -> None:
        if hp.tail is not None:
            self.size -= hp.tail.size
            hp.tail = None
