"""The leader-epoch history of a log: where each epoch's first batch starts (LeaderEpochFileCache).

Raft needs it to tell a follower where its log diverges (DivergingEpoch) and to check a fetch's
LastFetchedEpoch. Pure bookkeeping; MetadataLog persists it as leader-epoch-checkpoint.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import NamedTuple

UNDEFINED_EPOCH = -1
UNDEFINED_OFFSET = -1


class EpochEntry(NamedTuple):
    epoch: int
    start_offset: int


class OffsetAndEpoch(NamedTuple):
    offset: int
    epoch: int


class LeaderEpochCache:
    def __init__(self, entries: list[EpochEntry] | None = None) -> None:
        self._entries: list[EpochEntry] = []
        for e in entries or ():
            self.assign(e.epoch, e.start_offset)

    def entries(self) -> list[EpochEntry]:
        return list(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def latest_epoch(self) -> int:
        return self._entries[-1].epoch if self._entries else UNDEFINED_EPOCH

    @property
    def earliest(self) -> EpochEntry | None:
        return self._entries[0] if self._entries else None

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Note that `epoch` starts at `start_offset`; True when the history changed.

        A batch of the latest epoch (or an older one) changes nothing. An entry that would start
        at or before an existing one replaces the entries it overlaps, as after a truncation.
        """
        if epoch < 0:
            return False
        if self._entries:
            last = self._entries[-1]
            if epoch <= last.epoch and start_offset >= last.start_offset:
                return False
            while self._entries and (
                self._entries[-1].epoch >= epoch or self._entries[-1].start_offset >= start_offset
            ):
                self._entries.pop()
        self._entries.append(EpochEntry(epoch, start_offset))
        return True

    def truncate_from_end(self, end_offset: int) -> bool:
        """Forget epochs that start at or after `end_offset` (the log was truncated there)."""
        keep = [e for e in self._entries if e.start_offset < end_offset]
        changed = len(keep) != len(self._entries)
        self._entries = keep
        return changed

    def truncate_from_start(self, start_offset: int) -> bool:
        """Forget history below `start_offset`, keeping the epoch that covers it, moved to start there."""
        starts = [e.start_offset for e in self._entries]
        i = bisect.bisect_right(starts, start_offset)
        if i == 0:
            return False
        new = [EpochEntry(self._entries[i - 1].epoch, start_offset), *self._entries[i:]]
        changed = new != self._entries
        self._entries = new
        return changed

    def clear(self) -> None:
        self._entries = []

    def epoch_for_offset(self, offset: int) -> int | None:
        """The epoch the batch holding `offset` was written in, if the history reaches back that far."""
        entries = self._entries  # one list throughout: a cleaning on the dir's thread may replace it
        starts = [e.start_offset for e in entries]
        i = bisect.bisect_right(starts, offset)
        return None if i == 0 else entries[i - 1].epoch

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> OffsetAndEpoch:
        """The largest epoch <= `requested_epoch` and the offset where it ended (see `end_offset_for`)."""
        # One list throughout: the loop answers while a cleaning on the dir's thread may replace it.
        return end_offset_for(self._entries, requested_epoch, log_end_offset)


def end_offset_for(
    entries: Sequence[tuple[int, int]], requested_epoch: int, log_end_offset: int
) -> OffsetAndEpoch:
    """LeaderEpochFileCache.endOffsetFor over (epoch, start offset) entries in ascending order.

    The latest epoch ends at the log end; an epoch older than the whole history answers with
    the requested epoch and the first start offset; an unknown or newer epoch gives
    (UNDEFINED_OFFSET, UNDEFINED_EPOCH). The Raft core's LogView asks the same question.
    """
    if requested_epoch == UNDEFINED_EPOCH or not entries:
        return OffsetAndEpoch(UNDEFINED_OFFSET, UNDEFINED_EPOCH)
    if requested_epoch == entries[-1][0]:
        return OffsetAndEpoch(log_end_offset, requested_epoch)
    epochs = [e for e, _ in entries]
    higher = bisect.bisect_right(epochs, requested_epoch)
    if higher == len(entries):
        return OffsetAndEpoch(UNDEFINED_OFFSET, UNDEFINED_EPOCH)
    if higher == 0:
        return OffsetAndEpoch(entries[0][1], requested_epoch)
    return OffsetAndEpoch(entries[higher][1], entries[higher - 1][0])


def truncation_offset(diverging: OffsetAndEpoch, local: OffsetAndEpoch, log_end_offset: int) -> int:
    """ReplicatedLog.truncateToEndOffset: where a metadata-log follower cuts its log when the leader
    answers a fetch with DivergingEpoch `diverging`; `local` is our own endOffsetForEpoch of that
    epoch. The leader's end of the epoch where we have it too, else our end of the largest epoch
    below it (the next fetch narrows it further); epoch 0, which no election made, is cut at the
    leader's end. One rule for the controllers' Raft and the brokers' metadata fetch."""
    if diverging.epoch == 0:
        return min(diverging.offset, log_end_offset)
    if local.epoch == diverging.epoch:
        return min(local.offset, diverging.offset)
    return local.offset
