"""The cyclic garbage collector during large loads and changes, for the controller and the broker.

A controller or a broker holding 100,000 partitions keeps a dozen small objects per partition
(registrations, their directory tuples, index entries, placements), none of them in a reference
cycle: reference counting frees each when replay replaces it. Yet every full pass of the collector
walks all of them (about 0.3 s per 100,000 partitions here), so while replay, a start or an
operation touching many partitions allocates, the collector's passes cost as much as the work.

Those steps run with the collector paused, and after a large load or change (or smaller ones adding
up to one; NoOpRecords do not count) the objects alive then are frozen (`gc.freeze`): later
passes no longer walk them, reference counting still frees them.
What that costs: cyclic garbage alive at that moment is never collected; it is what was in flight
on the loop, a few objects per large change.

The collector's switch is process-wide and pauses run on the loop and on threads: they share the
count kept by the transport's pause for large requests (`protocol.transport.offload`), so the
collector comes back on only when the last pause of either kind ends.
"""

from __future__ import annotations

import gc
from collections.abc import Sequence
from typing import Any

from protocol.metadata_records import NoOpRecord
from protocol.transport.offload import collector_paused

LARGE = 10_000
"""Records or replicas from which the objects alive are frozen."""

__all__ = ["LARGE", "after_load", "collector_paused", "lasting"]

_loaded_since_freeze = 0


def lasting(records: Sequence[Any]) -> int:
    """How many of `records` (ApiMessageAndVersions) count towards a freeze: none for a lone
    NoOpRecord, which an idle active controller writes every 500 ms and which leaves nothing behind
    (were it counted, an idle process would freeze every hour or so, and each freeze keeps the
    cyclic garbage of its moment for good); every record otherwise."""
    if len(records) == 1 and type(getattr(records[0], "message", None)) is NoOpRecord:
        return 0
    return len(records)


def after_load(items: int) -> None:
    """`items` records or replicas were loaded or replayed (in one step, one chunk of many, or one
    change: count a change's records with `lasting`); what is alive is frozen once LARGE of them have
    come in since the last freeze. Counted across changes: a broker placing 100,000 replicas sends
    them 2,000 to a request, and each request's new registrations would otherwise stay in the
    collector's older generations, walked by every full pass. Called before the pause ends:
    frozen then, the new objects are never walked, not even by the young generation's pass that
    turning the collector back on would start."""
    global _loaded_since_freeze
    _loaded_since_freeze += items
    if _loaded_since_freeze >= LARGE:
        _loaded_since_freeze = 0
        gc.freeze()
