"""One partition this broker serves (Kafka's HostedPartition.Online): its decisions and its local log.

Shared by the replica manager, which creates and transitions them, and the fetchers, which copy
into the followers' logs; kept apart so that neither imports the other.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from dataclasses import dataclass, field

from broker.core.partition_state import PartitionState
from broker.dataplane.host import LocalLog
from broker.dataplane.partition import Partition
from kraftpy.image import TopicIdPartition
from protocol.uuid import Uuid

PartitionKey = tuple[Uuid, int]


def now_ms() -> int:
    return time.monotonic_ns() // 1_000_000


@dataclass(slots=True)
class LeaderTail:
    """The batches this leader appended last, as written, while they end the log: followers' fetches
    at the log end are answered from them, without a trip to the log dir's thread. Contiguous, of
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


@dataclass(slots=True)
class HostedPartition:
    tp: TopicIdPartition
    state: Partition
    local: LocalLog | None = None
    applied: PartitionState | None = None
    """The state last applied (as the metadata had it while the log was being created, if it was)."""
    paused: asyncio.Event | None = None
    """Set while the broker swaps this replica's log for another (an intra-broker move): appends,
    reads and follower writes wait for it, then find the new log in `local`."""
    becoming_leader: asyncio.Event | None = None
    """Set while the metadata already names this broker the partition's leader (at a new epoch) but
    the transition (the epoch written to the log) is still under way: produces and leader reads
    wait for it rather than bounce off with an error their senders retry only after a backoff."""
    tail: LeaderTail | None = None
    moved: asyncio.Event | None = None
    """Set while the partition is offline (its dir failed) and produces wait for the metadata to
    name the leader they should go to."""

    async def leading(self, timeout_s: float) -> None:
        """Once the transition to leader under way (if any) is done, or `timeout_s` has passed."""
        ev = self.becoming_leader
        if ev is not None and timeout_s > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(ev.wait(), timeout_s)

    async def usable(self) -> LocalLog | None:
        """The local log once no swap is under way."""
        while self.paused is not None:
            await self.paused.wait()
        return self.local

    @property
    def key(self) -> PartitionKey:
        return (self.tp.topic_id, self.tp.partition)
