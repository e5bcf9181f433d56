"""Requests parked until something happens to a partition (Kafka's DelayedProduce / DelayedFetch purgatories).

`ProducePurgatory`: an acks=all produce waits, per partition, for the high watermark to pass the
offset after its last record. Waiters sit in a heap keyed by that offset, so a moving HW completes
a prefix; an answer that is not about the HW (leadership lost, dir failed) completes them all.
The caller bounds the wait with its TimeoutMs and answers REQUEST_TIMED_OUT when it runs out.

`FetchWaiters`: a fetch that found nothing new waits up to MaxWaitMs for an append or a HW move on
any of its partitions.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Callable, Hashable, Iterable

from protocol.errors import Errors

Status = Callable[[int], Errors | None]
"""required offset -> the answer for a waiter needing it, or None to keep waiting."""


PURGE_INTERVAL = 1000
"""Waiters watched between two sweeps of timed-out ones (Kafka's purgatory.purge.interval.requests)."""


class ProducePurgatory:
    def __init__(self, purge_interval: int = PURGE_INTERVAL) -> None:
        self._waiting: dict[Hashable, list[tuple[int, int, asyncio.Future[Errors]]]] = {}
        self._seq = itertools.count()
        self._purge_interval = purge_interval
        self._since_purge = 0

    def watch(self, key: Hashable, required_offset: int) -> asyncio.Future[Errors]:
        fut: asyncio.Future[Errors] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiting.setdefault(key, []), (required_offset, next(self._seq), fut))
        self._since_purge += 1
        if self._since_purge >= self._purge_interval:
            self.purge()
        return fut

    def purge(self) -> None:
        """Drop waiters already answered elsewhere (timed out): `check` pops them only when they reach
        the head of their heap, which on a partition whose HW has stopped they never do."""
        self._since_purge = 0
        for key in list(self._waiting):
            heap = [entry for entry in self._waiting[key] if not entry[2].done()]
            if heap:
                heapq.heapify(heap)
                self._waiting[key] = heap
            else:
                del self._waiting[key]

    def check(self, key: Hashable, status: Status) -> int:
        """Complete waiters of `key` whose status is decided; returns how many completed."""
        heap = self._waiting.get(key)
        if not heap:
            return 0
        done = 0
        while heap:
            required, _, fut = heap[0]
            if fut.done():
                heapq.heappop(heap)
                continue
            answer = status(required)
            if answer is None:
                break
            heapq.heappop(heap)
            fut.set_result(answer)
            done += 1
        if not heap:
            del self._waiting[key]
        return done

    def fail_all(self, key: Hashable, code: Errors) -> int:
        heap = self._waiting.pop(key, None) or []
        n = 0
        for _, _, fut in heap:
            if not fut.done():
                fut.set_result(code)
                n += 1
        return n

    def keys(self) -> list[Hashable]:
        return list(self._waiting)

    def __len__(self) -> int:
        return sum(1 for heap in self._waiting.values() for _, _, f in heap if not f.done())


async def wait_for_status(fut: asyncio.Future[Errors], timeout_s: float) -> Errors:
    """The waiter's answer, or REQUEST_TIMED_OUT when `timeout_s` passes first."""
    try:
        return await asyncio.wait_for(fut, timeout_s)
    except TimeoutError:
        return Errors.REQUEST_TIMED_OUT


class FetchWaiters:
    def __init__(self) -> None:
        self._waiting: dict[Hashable, set[asyncio.Future[None]]] = {}

    def notify(self, key: Hashable) -> None:
        for fut in self._waiting.pop(key, ()):
            if not fut.done():
                fut.set_result(None)

    def notify_all(self) -> None:
        for key in list(self._waiting):
            self.notify(key)

    def watch(self, keys: Iterable[Hashable]) -> FetchWatch:
        """Watch `keys` from now on. A fetch watches before it reads: an append that lands
        between its read and its wait then still wakes it (Kafka's tryCompleteElseWatch tries
        again once watching, for the same reason). Close the watch when done with it."""
        return FetchWatch(self, keys)

    def _forget(self, keys: list[Hashable], fut: asyncio.Future[None]) -> None:
        for key in keys:
            waiting = self._waiting.get(key)
            if waiting is not None:
                waiting.discard(fut)
                if not waiting:
                    del self._waiting[key]


class FetchWatch:
    """One fetch's watch on its partitions: notified once any of them is."""

    def __init__(self, waiters: FetchWaiters, keys: Iterable[Hashable]) -> None:
        self._waiters = waiters
        self._keys = list(keys)
        self._fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        for key in self._keys:
            waiters._waiting.setdefault(key, set()).add(self._fut)

    @property
    def notified(self) -> bool:
        return self._fut.done()

    async def wait(self, timeout_s: float) -> bool:
        """True once notified (at once if it already was), False when `timeout_s` passes first."""
        if self._fut.done():
            return True
        if timeout_s <= 0:
            return False
        try:
            await asyncio.wait_for(asyncio.shield(self._fut), timeout_s)
            return True
        except TimeoutError:
            return False

    def close(self) -> None:
        self._waiters._forget(self._keys, self._fut)

    def __enter__(self) -> FetchWatch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
