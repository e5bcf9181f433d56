"""Long work for one large request, run off the event loop with the cyclic collector paused.

A worker thread hands the loop its turn every few milliseconds, except while one call keeps the GIL
throughout. A full garbage collection is such a call: building 100,000 response models triggers
several, each walking the whole heap (200-300 ms each here), so the loop stalled as if the work ran
on it. These models form no cycles and are freed by reference counting, so the collector can wait
until the last large job ends.
"""

from __future__ import annotations

import asyncio
import gc
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

T = TypeVar("T")

_lock = threading.Lock()
_active = 0
_resume = False


@contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic collection while any holder is inside; the collector's own state is restored after."""
    global _active, _resume
    with _lock:
        if _active == 0:
            _resume = gc.isenabled()
            gc.disable()
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0 and _resume:
                gc.enable()


def _paused(fn: Callable[..., T], args: tuple[Any, ...]) -> T:
    with collector_paused():
        return fn(*args)


async def run_large(fn: Callable[..., T], *args: Any) -> T:
    """`fn(*args)` on a worker thread, the collector paused while it runs."""
    return await asyncio.get_running_loop().run_in_executor(None, _paused, fn, args)
