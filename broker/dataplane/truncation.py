"""Leader-epoch checks of fetches and the follower's truncation after a leader change, sans-IO.

The leader (reference 9, `validateOffsetAndEpoch`): a fetch from offset F whose previous batch has
epoch E is consistent when the leader's log holds E and E ends at or after F; otherwise the reply
carries DivergingEpoch = the largest epoch <= E the leader knows and where it ends there.

The follower (`truncateToEndOffset`): for a DivergingEpoch (E, O) it truncates to min(O, where E ends
locally) when its log holds E, and otherwise to where its largest epoch below E ends; in that case
it fetches again with its new last epoch, since the leader may diverge from it further back.
"""

from __future__ import annotations

from typing import NamedTuple


class EpochEnd(NamedTuple):
    epoch: int
    end_offset: int


NO_EPOCH_END = EpochEnd(-1, -1)


def diverging_epoch(
    last_fetched_epoch: int, fetch_offset: int, leader_end: EpochEnd | None
) -> EpochEnd | None:
    """What the leader answers a follower fetch with; None when the follower's log is consistent.

    `leader_end` is the leader's largest epoch <= `last_fetched_epoch` and its end offset (None when
    the leader knows no such epoch). A fetch without a last epoch (-1) is not checked.
    """
    if last_fetched_epoch < 0:
        return None
    if leader_end is None:
        return NO_EPOCH_END
    if leader_end.epoch < last_fetched_epoch or leader_end.end_offset < fetch_offset:
        return leader_end
    return None


class Truncation(NamedTuple):
    offset: int
    complete: bool
    """False: fetch again with the new last epoch, the leader may diverge from us further back."""


def truncation_for(
    diverging: EpochEnd, local_end: EpochEnd | None, log_end_offset: int, high_watermark: int
) -> Truncation:
    """Where a follower cuts its log for the leader's DivergingEpoch.

    `local_end` is the follower's largest epoch <= `diverging.epoch` and its end offset (None if none).
    """
    if diverging.end_offset < 0:
        # The leader knows none of our epochs: keep only what was committed.
        return Truncation(min(high_watermark, log_end_offset), True)
    if local_end is None:
        return Truncation(min(diverging.end_offset, log_end_offset), True)
    if local_end.epoch == diverging.epoch:
        return Truncation(min(diverging.end_offset, local_end.end_offset, log_end_offset), True)
    return Truncation(min(local_end.end_offset, log_end_offset), False)
