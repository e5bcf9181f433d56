"""The broker's background tasks: one place that starts them, notices when one dies, and ends them."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

import structlog

log = structlog.get_logger("broker.tasks")


class BrokerTasks:
    def __init__(self, on_failure: Callable[[str], None]) -> None:
        """`on_failure(reason)`: a task raised; the broker cannot go on without it."""
        self._on_failure = on_failure
        self._tasks: list[asyncio.Task[Any]] = []

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> None:
        task = asyncio.get_running_loop().create_task(coro, name=name)

        def done(t: asyncio.Task[Any]) -> None:
            if t.cancelled():
                return
            exc = t.exception()
            if exc is not None:
                log.error("broker task failed", task=name, error=repr(exc), exc_info=exc)
                self._on_failure(f"internal task {name} failed: {exc!r}")

        task.add_done_callback(done)
        self._tasks = [t for t in self._tasks if not t.done()]
        self._tasks.append(task)

    async def cancel_all(self) -> None:
        tasks, self._tasks = self._tasks, []
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
