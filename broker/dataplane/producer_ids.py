"""Producer ids for idempotent producers: blocks from the controller, handed out one by one.

A broker answers InitProducerId (no transactional id) from its current block and asks the
controller for the next one with AllocateProducerIds when it runs out (Kafka's RPCProducerIdManager).
A new producer id always starts at epoch 0.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from protocol.errors import Errors, KafkaError

Allocator = Callable[[], Awaitable[tuple[int, int]]]
"""Asks the controller for a block: returns (first id, how many)."""


class ProducerIdManager:
    def __init__(self, allocate: Allocator) -> None:
        self._allocate = allocate
        self._next = 0
        self._end = 0  # exclusive
        self._lock = asyncio.Lock()

    async def next_producer_id(self) -> int:
        async with self._lock:
            if self._next >= self._end:
                start, length = await self._allocate()
                if length <= 0 or start < 0:
                    raise KafkaError(
                        Errors.UNKNOWN_SERVER_ERROR, f"controller gave an empty producer id block at {start}"
                    )
                self._next, self._end = start, start + length
            pid = self._next
            self._next += 1
            return pid
