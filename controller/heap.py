"""The cyclic garbage collector and the controller's state.

The controller holds a dozen objects the collector tracks per partition (registrations, their
directory tuples, index entries), none of them in a reference cycle: each is freed by reference
counting when replay replaces it. Yet every full collection walks all of them (about 0.3 s per
100,000 partitions here), and the collection that follows a large operation walks all it made.

So replay runs with the collector paused, and after a large load or change the objects alive then
are frozen (`gc.freeze`): the collector no longer looks at them, reference counting still frees
them. What that costs: cyclic garbage alive at that moment is never collected; it is what was in
flight on the loop, a few objects per large change.
"""

from __future__ import annotations

import gc

LARGE_CHANGE = 10_000
"""Records in one load or operation from which its objects are frozen."""


def after_change(records: int) -> None:
    """Called once `records` records were replayed in one go."""
    if records >= LARGE_CHANGE:
        gc.freeze()
