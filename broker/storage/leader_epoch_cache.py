"""The leader-epoch cache of a partition log, kept on disk as `leader-epoch-checkpoint`.

The bookkeeping (assign, truncation, endOffsetFor) is kraftpy.metalog's LeaderEpochCache and the
file format is its checkpoint (`0`, count, `<epoch> <startOffset>` lines, replaced atomically); this
wrapper writes every change through to the file. Changes come once per leader epoch, not per append.
"""

from __future__ import annotations

from pathlib import Path

from broker.storage.errors import CorruptCheckpointError
from kraftpy.metalog.checkpoints import read_leader_epoch_checkpoint, write_leader_epoch_checkpoint
from kraftpy.metalog.epoch_cache import UNDEFINED_EPOCH, UNDEFINED_OFFSET, EpochEntry, LeaderEpochCache
from kraftpy.metalog.errors import MetadataLogError

LEADER_EPOCH_CHECKPOINT_FILE = "leader-epoch-checkpoint"

__all__ = [
    "LEADER_EPOCH_CHECKPOINT_FILE",
    "UNDEFINED_EPOCH",
    "UNDEFINED_OFFSET",
    "EpochEntry",
    "LeaderEpochFileCache",
]


class LeaderEpochFileCache:
    """Entries in memory; each change is written to the checkpoint file (sync; raises OSError)."""

    def __init__(self, path: Path, entries: list[EpochEntry] | None = None) -> None:
        self.path = path
        self._cache = LeaderEpochCache(entries)

    @classmethod
    def load(cls, partition_dir: Path) -> LeaderEpochFileCache:
        path = partition_dir / LEADER_EPOCH_CHECKPOINT_FILE
        try:
            entries = read_leader_epoch_checkpoint(path)
        except (MetadataLogError, ValueError) as e:
            raise CorruptCheckpointError(path, str(e)) from None
        return cls(path, entries)

    @property
    def entries(self) -> list[EpochEntry]:
        return self._cache.entries()

    @property
    def latest_epoch(self) -> int | None:
        return self._cache.latest_epoch if len(self._cache) else None

    def epoch_for_offset(self, offset: int) -> int | None:
        return self._cache.epoch_for_offset(offset)

    def assign(self, epoch: int, start_offset: int, *, flush: bool = True) -> bool:
        """`epoch` begins at `start_offset`; later or overlapping entries give way. True when changed."""
        changed = self._cache.assign(epoch, start_offset)
        if changed and flush:
            self.flush()
        return changed

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(epoch, end offset) for OffsetsForLeaderEpoch; (-1, -1) when unknown."""
        found = self._cache.end_offset_for(requested_epoch, log_end_offset)
        return found.epoch, found.offset

    def truncate_from_end(self, end_offset: int, *, flush: bool = True) -> bool:
        """Forget epochs that start at or after `end_offset` (the log was cut back to it)."""
        changed = self._cache.truncate_from_end(end_offset)
        if changed and flush:
            self.flush()
        return changed

    def truncate_from_start(self, start_offset: int, *, flush: bool = True) -> bool:
        """Drop epochs wholly before `start_offset`; the one that holds it now starts there."""
        changed = self._cache.truncate_from_start(start_offset)
        if changed and flush:
            self.flush()
        return changed

    def clear(self) -> None:
        self._cache.clear()
        self.flush()

    def flush(self) -> None:
        write_leader_epoch_checkpoint(self.path, self._cache.entries())
