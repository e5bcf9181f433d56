"""One partition this broker serves (Kafka's HostedPartition.Online): its decisions and its local log.

Shared by the replica manager, which creates and transitions them, and the fetchers, which copy
into the followers' logs; kept apart so that neither imports the other.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from broker.core.partition_state import PartitionState
from broker.dataplane.host import LocalLog
from broker.dataplane.partition import Partition
from kraftpy.image import TopicIdPartition
from protocol.uuid import Uuid

PartitionKey = tuple[Uuid, int]


def now_ms() -> int:
    return time.monotonic_ns() // 1_000_000


@dataclass(slots=True)
class HostedPartition:
    tp: TopicIdPartition
    state: Partition
    local: LocalLog | None = None
    applied: PartitionState | None = None
    """The state last applied (as the metadata had it while the log was being created, if it was)."""

    @property
    def key(self) -> PartitionKey:
        return (self.tp.topic_id, self.tp.partition)
