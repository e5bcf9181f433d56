"""The cyclic garbage collector during the broker's large loads.

Starting with 100,000 replicas the broker replays hundreds of thousands of metadata records, lists
and classifies 100,000 partition dirs and builds the placement of every replica: millions of small
objects, none of them in a reference cycle (reference counting frees them when replaced). Each full
pass of the collector meanwhile walks every object alive, so on that heap the collector's passes
cost as much as the work itself. Those steps run with the collector paused, and once they have
loaded 10,000 records or replicas what is alive is frozen (`gc.freeze`): later passes no longer
walk it, reference counting still frees it. What that costs: cyclic garbage alive at that moment is never collected; a few objects in flight
on the loop.

The collector's switch is process-wide and these steps run on the loop and on threads: a pause
only ever restores the setting it found, so overlapping pauses end with the collector on.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

LARGE_LOAD = 10_000
"""Records or replicas loaded since the last freeze from which the objects alive are frozen."""

_loaded_since_freeze = 0


@contextmanager
def collector_paused() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def after_load(items: int) -> None:
    """`items` records or replicas were loaded (in one step, or one chunk of many). Called before
    the pause ends: frozen then, the new objects are never walked, not even by the young
    generation's pass that turning the collector back on would start."""
    global _loaded_since_freeze
    _loaded_since_freeze += items
    if _loaded_since_freeze >= LARGE_LOAD:
        _loaded_since_freeze = 0
        gc.freeze()
