"""Replies held back until the log is durable past their records (Kafka's DeferredEventQueue).

Each write operation parks its response here under the offset of its last record; when the high
watermark (the exclusive end of what is fsynced) moves, everything at or below it completes, in
offset order. Nothing here does I/O; the futures belong to whoever awaits the response.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass
from typing import Any


@dataclass(slots=True)
class _Waiter:
    offset: int
    future: asyncio.Future[Any]
    value: Any


class DeferredEventQueue:
    """Waiters ordered by offset; offsets are added in non-decreasing order (one writer)."""

    def __init__(self) -> None:
        self._waiters: deque[_Waiter] = deque()
        self._high_watermark = 0

    def __len__(self) -> int:
        return len(self._waiters)

    @property
    def high_watermark(self) -> int:
        return self._high_watermark

    def add(self, offset: int, future: asyncio.Future[Any], value: Any) -> None:
        """Resolve `future` with `value` once the record at `offset` is committed (at once if it is)."""
        if self._waiters and offset < self._waiters[-1].offset:
            raise ValueError(f"BUG: deferred offset {offset} after {self._waiters[-1].offset}")
        if offset < self._high_watermark:
            _resolve(future, value)
        else:
            self._waiters.append(_Waiter(offset, future, value))

    def complete_up_to(self, high_watermark: int) -> int:
        """The log is durable below `high_watermark`: resolve those waiters; returns how many."""
        if high_watermark > self._high_watermark:
            self._high_watermark = high_watermark
        done = 0
        while self._waiters and self._waiters[0].offset < self._high_watermark:
            w = self._waiters.popleft()
            _resolve(w.future, w.value)
            done += 1
        return done

    def fail_all(self, exc: BaseException) -> None:
        while self._waiters:
            w = self._waiters.popleft()
            if not w.future.done():
                w.future.set_exception(exc)


def _resolve(future: asyncio.Future[Any], value: Any) -> None:
    # The caller may have given up (request timeout, client gone); its result is then just dropped.
    if not future.done():
        future.set_result(value)
