"""The cyclic garbage collector during large loads and changes, for the controller and the broker.

A controller or a broker holding 100,000 partitions keeps a dozen small objects per partition
(registrations, their directory tuples, index entries, placements), none of them in a reference
cycle: reference counting frees each when replay replaces it. Yet every full pass of the collector
walks all of them (about 0.3 s per 100,000 partitions here), so while replay, a start or an
operation touching many partitions allocates, the collector's passes cost as much as the work.

Those steps run with the collector paused, and after a large load or change (or several changes of
at least MEDIUM records adding up to one) the objects alive then are frozen (`gc.freeze`): later
passes no longer walk them, reference counting still frees them.
What that costs: cyclic garbage alive at that moment is never collected; it is what was in flight
on the loop, a few objects per large change.

The collector's switch is process-wide and pauses run on the loop and on threads: they share the
count kept by the transport's pause for large requests (`protocol.transport.offload`), so the
collector comes back on only when the last pause of either kind ends.
"""

from __future__ import annotations

import gc

from protocol.transport.offload import collector_paused

LARGE = 10_000
"""Records or replicas from which the objects alive are frozen."""

MEDIUM = LARGE // 20
"""The smallest change that counts towards LARGE."""

__all__ = ["LARGE", "after_change", "after_load", "collector_paused"]

_loaded_since_freeze = 0


def after_change(records: int) -> None:
    """`records` records were replayed in one go: what is alive is frozen once LARGE records have
    come in since the last freeze, counting only changes of at least MEDIUM records. A broker
    placing 100,000 replicas sends them 2,000 to a request, and each request's new registrations
    would otherwise stay in the collector's older generations, walked by every full pass; a
    controller's NoOpRecords and single ISR changes never add up to a freeze (each freeze keeps the
    cyclic garbage of that moment for good)."""
    if records >= MEDIUM:
        after_load(records)


def after_load(items: int) -> None:
    """`items` records or replicas were loaded (in one step, or one chunk of many); what is alive is
    frozen once LARGE of them have come in since the last freeze. Called before the pause ends:
    frozen then, the new objects are never walked, not even by the young generation's pass that
    turning the collector back on would start."""
    global _loaded_since_freeze
    _loaded_since_freeze += items
    if _loaded_since_freeze >= LARGE:
        _loaded_since_freeze = 0
        gc.freeze()
