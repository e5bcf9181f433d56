"""The segments of one log in its dir, oldest first (Kafka's LogSegments and the segment half of LocalLog).

Rolling, cutting back, starting over and dropping old segments, the same for partition logs and the
metadata log; what each log keeps per segment (producer state, unflushed sets) it updates around
these calls. A new segment's dir entry is fsynced before anything is written to it, and a rolled
segment is fsynced whole, so only the newest segment can ever hold a torn write.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from pathlib import Path

from kraftpy.log.segment import LogSegment
from kraftpy.storage.atomic import fsync_dir


class LogSegments:
    """Never empty once a log is open: the last segment is the active one, appended to."""

    def __init__(self, directory: Path, *, index_interval_bytes: int, max_index_entries: int) -> None:
        self.dir = directory
        self.index_interval_bytes = index_interval_bytes
        self.max_index_entries = max_index_entries
        self._segments: list[LogSegment] = []
        self._bases: list[int] = []

    # ---- queries

    def __iter__(self) -> Iterator[LogSegment]:
        return iter(self._segments)

    def __len__(self) -> int:
        return len(self._segments)

    def __getitem__(self, i: int) -> LogSegment:
        return self._segments[i]

    @property
    def active(self) -> LogSegment:
        return self._segments[-1]

    @property
    def bases(self) -> list[int]:
        return list(self._bases)

    @property
    def size_bytes(self) -> int:
        return sum(s.size for s in self._segments)

    def from_offset(self, offset: int) -> list[LogSegment]:
        """The segment that would hold `offset` (the first one below it) and every later one."""
        return self._segments[max(bisect.bisect_right(self._bases, offset) - 1, 0) :]

    # ---- changes

    def add(self, seg: LogSegment) -> None:
        """Take an opened segment as the newest (when the log is loaded)."""
        self._segments.append(seg)
        self._bases.append(seg.base_offset)

    def create(self, base_offset: int, now_ms: int) -> LogSegment:
        """Create an empty segment at `base_offset` as the newest, its dir entry made durable."""
        seg = LogSegment.create(
            self.dir,
            base_offset,
            index_interval_bytes=self.index_interval_bytes,
            max_index_entries=self.max_index_entries,
            now_ms=now_ms,
        )
        self.add(seg)
        fsync_dir(self.dir)
        return seg

    def roll(self, base_offset: int, now_ms: int) -> LogSegment:
        """Start a new active segment at `base_offset`; returns it.

        An empty active segment at that offset is kept as it is; at another offset it is replaced.
        A segment with batches is fsynced with its indexes before the new one is created.
        """
        old = self.active
        if old.size == 0:
            if old.base_offset == base_offset:
                return old
            self.remove(old)
        else:
            old.on_become_inactive()
        return self.create(base_offset, now_ms)

    def remove(self, seg: LogSegment) -> None:
        """Delete a segment's files (retention, truncation)."""
        i = self._segments.index(seg)
        del self._segments[i]
        del self._bases[i]
        seg.delete()

    def remove_after(self, offset: int) -> list[LogSegment]:
        """Delete the segments that start above `offset` (truncation; the caller then cuts the active
        one), newest first, keeping at least the oldest: a crash part-way leaves a shorter log, never
        one with a hole. Returns those deleted."""
        removed = []
        while len(self._segments) > 1 and self._bases[-1] > offset:
            seg = self._segments[-1]
            self.remove(seg)
            removed.append(seg)
        return removed

    def start_over_at(self, offset: int, now_ms: int) -> LogSegment:
        """Delete every segment, newest first, and start empty at `offset`."""
        for seg in reversed(self._segments):
            seg.delete()
        self._segments.clear()
        self._bases.clear()
        return self.create(offset, now_ms)

    def close(self) -> None:
        """Release every handle; the first OSError is raised after all are released."""
        first: OSError | None = None
        for seg in self._segments:
            try:
                seg.close()
            except OSError as e:
                first = first or e
        if first is not None:
            raise first
