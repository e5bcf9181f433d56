"""Sparse per-segment indexes, Kafka's on-disk layout without the preallocation.

- `.index` (OffsetIndex): 8-byte entries, int32 offset relative to the segment base, int32 byte
  position of the batch in the `.log`. An entry names a batch's last offset and where that batch
  starts, added about every `index.interval.bytes`; a read starts its scan at the entry for the
  largest offset <= the one asked for.
- `.timeindex` (TimeIndex): 12-byte entries, int64 timestamp, int32 relative offset: the largest
  timestamp seen so far and the batch holding it, whenever it grows.

Kafka preallocates index files (10 MiB, mmapped) and trims them on roll; here entries are appended
with pwrite, so a file is always exactly its entries and reads back the same in Kafka's tools.
Entries are also kept in memory: lookups never touch the disk. The write handle is opened lazily
and closed when the segment stops being the active one, so old segments hold one fd (their log).
"""

from __future__ import annotations

import bisect
import os
import struct
from pathlib import Path


class _Index:
    _ENTRY: struct.Struct

    def __init__(self, path: Path, base_offset: int, max_entries: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self.max_entries = max(1, max_entries)
        self._keys: list[int] = []
        self._values: list[int] = []
        self._fd: int | None = None

    # ---- file handling

    def _handle(self) -> int:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        return self._fd

    def create(self) -> None:
        """Create the file empty (a new segment)."""
        fd = self._handle()
        os.ftruncate(fd, 0)

    def read_file(self) -> list[tuple[int, int]] | None:
        """Entries stored in the file (relative form), or None when the file is missing or not whole entries."""
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return None
        if len(raw) % self._ENTRY.size:
            return None
        return [tuple(e) for e in self._ENTRY.iter_unpack(raw)]  # type: ignore[misc]

    def load(self, entries: list[tuple[int, int]]) -> None:
        """Take entries (relative form) into memory without writing them."""
        self._keys = [k for k, _ in entries]
        self._values = [v for _, v in entries]

    def rewrite(self, entries: list[tuple[int, int]]) -> None:
        """Replace the file's content with `entries` (relative form)."""
        self.load(entries)
        fd = self._handle()
        data = b"".join(self._ENTRY.pack(k, v) for k, v in entries)
        os.ftruncate(fd, 0)
        _pwrite_all(fd, data, 0)

    def _append_raw(self, key: int, value: int, write: bool) -> None:
        if write:
            n = len(self._keys)
            _pwrite_all(self._handle(), self._ENTRY.pack(key, value), n * self._ENTRY.size)
        self._keys.append(key)
        self._values.append(value)

    def _truncate_entries(self, keep: int) -> None:
        if keep >= len(self._keys):
            return
        del self._keys[keep:]
        del self._values[keep:]
        os.ftruncate(self._handle(), keep * self._ENTRY.size)

    def flush(self) -> None:
        if self._fd is not None:  # never opened since loading: nothing written
            os.fdatasync(self._fd)

    def close_handle(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)

    # ---- queries

    def __len__(self) -> int:
        return len(self._keys)

    def relative_entries(self) -> list[tuple[int, int]]:
        """Entries as stored: (relative offset, position) or (timestamp, relative offset)."""
        return list(zip(self._keys, self._values, strict=True))

    @property
    def is_full(self) -> bool:
        return len(self._keys) >= self.max_entries

    @property
    def size_bytes(self) -> int:
        return len(self._keys) * self._ENTRY.size


def _pwrite_all(fd: int, data: bytes, position: int) -> None:
    view = memoryview(data)
    while view:
        n = os.pwrite(fd, view, position)
        view = view[n:]
        position += n


class OffsetIndex(_Index):
    _ENTRY = struct.Struct(">ii")
    ENTRY_SIZE = 8

    def append(self, offset: int, position: int, *, write: bool = True) -> None:
        """Add an entry; `write=False` only in memory (a rebuild writes the file once at the end)."""
        self._append_raw(offset - self.base_offset, position, write)

    def lookup(self, offset: int) -> tuple[int, int]:
        """(offset, position) of the last entry with offset <= `offset`, else (base offset, 0)."""
        i = bisect.bisect_right(self._keys, offset - self.base_offset) - 1
        if i < 0:
            return self.base_offset, 0
        return self.base_offset + self._keys[i], self._values[i]

    def truncate_from_position(self, position: int) -> None:
        """Drop entries for batches at or after `position` (the segment was cut there)."""
        self._truncate_entries(bisect.bisect_left(self._values, position))

    @property
    def entries(self) -> list[tuple[int, int]]:
        """(absolute offset, position) pairs."""
        return [(self.base_offset + k, v) for k, v in zip(self._keys, self._values, strict=True)]


class TimeIndex(_Index):
    _ENTRY = struct.Struct(">qi")
    ENTRY_SIZE = 12

    def maybe_append(self, timestamp: int, offset: int, *, write: bool = True) -> bool:
        """Add (timestamp, offset) if the timestamp is larger than the last entry's."""
        if timestamp < 0 or (self._keys and timestamp <= self._keys[-1]):
            return False
        self._append_raw(timestamp, offset - self.base_offset, write)
        return True

    def lookup(self, timestamp: int) -> tuple[int, int]:
        """(timestamp, offset) of the last entry with timestamp <= `timestamp`, else (-1, base offset)."""
        i = bisect.bisect_right(self._keys, timestamp) - 1
        if i < 0:
            return -1, self.base_offset
        return self._keys[i], self.base_offset + self._values[i]

    def truncate_from_offset(self, offset: int) -> None:
        """Drop entries for offsets >= `offset`."""
        rel = offset - self.base_offset
        keep = len(self._values)
        while keep and self._values[keep - 1] >= rel:
            keep -= 1
        self._truncate_entries(keep)

    @property
    def last_entry(self) -> tuple[int, int] | None:
        if not self._keys:
            return None
        return self._keys[-1], self.base_offset + self._values[-1]
