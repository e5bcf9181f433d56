"""`leader-epoch-checkpoint`: a log's leader-epoch history on disk, and the cache that writes it through.

The file is a Kafka checkpoint file (`0`, count, `<epoch> <startOffset>` lines, replaced
atomically); the bookkeeping is epoch_cache.LeaderEpochCache. The metadata log writes the file at
its group-commit flush; a partition log writes each change at once through LeaderEpochFileCache
(changes come once per leader epoch, not per append).
"""

from __future__ import annotations

from pathlib import Path

from kraftpy.log.checkpoint_file import parse_checkpoint, parse_int, read_checkpoint, write_checkpoint
from kraftpy.log.epoch_cache import UNDEFINED_EPOCH, UNDEFINED_OFFSET, EpochEntry, LeaderEpochCache

LEADER_EPOCH_CHECKPOINT_FILE = "leader-epoch-checkpoint"

__all__ = [
    "LEADER_EPOCH_CHECKPOINT_FILE",
    "UNDEFINED_EPOCH",
    "UNDEFINED_OFFSET",
    "EpochEntry",
    "LeaderEpochFileCache",
    "parse_leader_epoch_checkpoint",
    "read_leader_epoch_checkpoint",
    "write_leader_epoch_checkpoint",
]


def _entries(rows: list[list[str]], path: Path | str) -> list[EpochEntry]:
    return [EpochEntry(parse_int(path, e, "epoch"), parse_int(path, o, "start offset")) for e, o in rows]


def parse_leader_epoch_checkpoint(
    text: str, path: Path | str = LEADER_EPOCH_CHECKPOINT_FILE
) -> list[EpochEntry]:
    """The entries of a checkpoint's text; CorruptCheckpointError naming `path` when it does not parse."""
    return _entries(parse_checkpoint(text, path, 2), path)


def read_leader_epoch_checkpoint(path: Path) -> list[EpochEntry]:
    """The entries in the file; [] when it is missing or empty."""
    return _entries(read_checkpoint(path, 2), path)


def write_leader_epoch_checkpoint(path: Path, entries: list[EpochEntry]) -> None:
    write_checkpoint(path, entries)


class LeaderEpochFileCache:
    """Entries in memory; each change is written to the checkpoint file (sync; raises OSError)."""

    def __init__(self, path: Path, entries: list[EpochEntry] | None = None) -> None:
        self.path = path
        self._cache = LeaderEpochCache(entries)

    @classmethod
    def load(cls, partition_dir: Path) -> LeaderEpochFileCache:
        path = partition_dir / LEADER_EPOCH_CHECKPOINT_FILE
        return cls(path, read_leader_epoch_checkpoint(path))

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
