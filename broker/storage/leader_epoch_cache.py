"""The leader-epoch cache of a partition log (storage LeaderEpochFileCache).

An ordered list of (epoch, start offset): the first offset written in each leader epoch. It answers
OffsetsForLeaderEpoch ("where does my epoch end on the leader?") so a follower can cut back to the
point where its log and the leader's diverge after a leader change. Persisted as
`leader-epoch-checkpoint`: `0`, the count, then `<epoch> <startOffset>` lines, rewritten atomically
on every change (changes happen once per leader epoch, not per append).
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import NamedTuple

from broker.storage.checkpoint_file import parse_int, read_checkpoint, write_checkpoint
from broker.storage.errors import CorruptCheckpointError

LEADER_EPOCH_CHECKPOINT_FILE = "leader-epoch-checkpoint"
UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


class EpochEntry(NamedTuple):
    epoch: int
    start_offset: int


class LeaderEpochFileCache:
    """Entries in memory; every change is written through to the checkpoint file (sync, raises OSError)."""

    def __init__(self, path: Path, entries: list[EpochEntry] | None = None) -> None:
        self.path = path
        self._entries: list[EpochEntry] = list(entries or [])

    @classmethod
    def load(cls, partition_dir: Path) -> LeaderEpochFileCache:
        path = partition_dir / LEADER_EPOCH_CHECKPOINT_FILE
        entries = [
            EpochEntry(parse_int(path, e, "epoch"), parse_int(path, o, "start offset"))
            for e, o in read_checkpoint(path, 2)
        ]
        for prev, cur in itertools.pairwise(entries):
            if cur.epoch <= prev.epoch or cur.start_offset < prev.start_offset:
                raise CorruptCheckpointError(path, f"entries not in order: {prev} then {cur}")
        return cls(path, entries)

    @property
    def entries(self) -> list[EpochEntry]:
        return list(self._entries)

    @property
    def latest_epoch(self) -> int | None:
        return self._entries[-1].epoch if self._entries else None

    @property
    def earliest_entry(self) -> EpochEntry | None:
        return self._entries[0] if self._entries else None

    def epoch_for_offset(self, offset: int) -> int | None:
        """The epoch whose range holds `offset`, if any."""
        found = None
        for entry in self._entries:
            if entry.start_offset > offset:
                break
            found = entry.epoch
        return found

    def assign(self, epoch: int, start_offset: int, *, flush: bool = True) -> bool:
        """Record that `epoch` begins at `start_offset`; True when the cache changed.

        A new entry must not go backwards: entries with an epoch >= `epoch` or a start offset
        >= `start_offset` are dropped first, as Kafka does for non-monotonic assignments.
        """
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"cannot assign epoch {epoch} at offset {start_offset}")
        last = self._entries[-1] if self._entries else None
        if last is not None and last.epoch == epoch and start_offset >= last.start_offset:
            return False
        while self._entries and (
            self._entries[-1].epoch >= epoch or self._entries[-1].start_offset >= start_offset
        ):
            self._entries.pop()
        self._entries.append(EpochEntry(epoch, start_offset))
        if flush:
            self.flush()
        return True

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(epoch, end offset) for OffsetsForLeaderEpoch: the largest epoch <= requested and the start of
        the next epoch after it, or the log end offset for the latest epoch; (-1, -1) when unknown."""
        if requested_epoch == UNDEFINED_EPOCH or not self._entries:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if requested_epoch == self._entries[-1].epoch:
            return requested_epoch, log_end_offset
        higher = next((e for e in self._entries if e.epoch > requested_epoch), None)
        if higher is None:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        floor = None
        for e in self._entries:
            if e.epoch > requested_epoch:
                break
            floor = e
        if floor is None:
            # Older than anything we still hold: the data before `higher` is gone, so the follower
            # may keep offsets only up to where `higher` starts.
            return requested_epoch, higher.start_offset
        return floor.epoch, higher.start_offset

    def truncate_from_end(self, end_offset: int, *, flush: bool = True) -> bool:
        """Forget epochs that start at or after `end_offset` (the log was cut back to it)."""
        if end_offset < 0 or not self._entries or self._entries[-1].start_offset < end_offset:
            return False
        self._entries = [e for e in self._entries if e.start_offset < end_offset]
        if flush:
            self.flush()
        return True

    def truncate_from_start(self, start_offset: int, *, flush: bool = True) -> bool:
        """Drop epochs wholly before `start_offset`; the one that holds it now starts there."""
        if start_offset < 0 or not self._entries or self._entries[0].start_offset >= start_offset:
            return False
        kept = [e for e in self._entries if e.start_offset > start_offset]
        covering = [e for e in self._entries if e.start_offset <= start_offset][-1]
        self._entries = [EpochEntry(covering.epoch, start_offset), *kept]
        if flush:
            self.flush()
        return True

    def clear(self) -> None:
        self._entries = []
        self.flush()

    def flush(self) -> None:
        write_checkpoint(self.path, self._entries)
