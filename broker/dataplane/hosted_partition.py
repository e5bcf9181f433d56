"""One partition this broker serves (Kafka's HostedPartition.Online): its decisions and its local log.

Shared by the replica manager, which creates and transitions them, and the fetchers, which copy
into the followers' logs; kept apart so that neither imports the other.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass

from broker.core.partition_state import PartitionState
from broker.dataplane.host import LocalLog
from broker.dataplane.leader_tail import LeaderTail, PartitionKey
from broker.dataplane.partition import Partition
from kraftpy.image import TopicIdPartition


def now_ms() -> int:
    return time.monotonic_ns() // 1_000_000


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
