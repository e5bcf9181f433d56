"""One segment file of the metadata log: `<base offset, 20 digits>.log`, a run of whole v2 batches.

A segment keeps a sparse in-memory index (one entry about every 4 KiB, like Kafka's
`log.index.interval.bytes`) built while scanning or appending, so a read seeks near its offset and
walks a few headers. Index files are not written: Kafka rebuilds missing ones, and so do we.
"""

from __future__ import annotations

import bisect
import os
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from crc32c import crc32c

from kraftpy.metalog.errors import CorruptLogError
from kraftpy.metalog.files import segment_file_name
from protocol.record_batch import (
    BATCH_OVERHEAD,
    CRC_START,
    LOG_OVERHEAD,
    BatchHeader,
    CorruptBatchError,
    read_batch_header,
)

INDEX_INTERVAL_BYTES = 4096
_SCAN_CHUNK = 8 << 20
_LENGTH = struct.Struct(">i")
_HEADER = struct.Struct(">qiibIhiqqqhii")  # the 61-byte v2 batch header
_MAGIC_AT = 16  # position of the magic byte in a batch


@dataclass(frozen=True)
class TornTail:
    """What recovery cut from the end of the last segment."""

    path: Path
    position: int
    bytes_cut: int
    reason: str


class Segment:
    def __init__(self, path: Path, base_offset: int, fd: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self.size = 0
        self.next_offset = base_offset
        self.first_timestamp: int | None = None
        self._fd = fd
        self._index_offsets: list[int] = []
        self._index_positions: list[int] = []
        self._last_indexed_position = -INDEX_INTERVAL_BYTES

    # -- lifecycle ----------------------------------------------------------------------------

    @classmethod
    def open(
        cls, directory: Path, base_offset: int, *, create: bool = False, read_only: bool = False
    ) -> Segment:
        path = directory / segment_file_name(base_offset)
        flags = os.O_RDONLY if read_only else os.O_RDWR | os.O_APPEND
        if create:
            flags |= os.O_CREAT | os.O_EXCL
        fd = os.open(path, flags, 0o644)
        return cls(path, base_offset, fd)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def delete(self) -> None:
        self.close()
        self.path.unlink(missing_ok=True)

    def sync(self) -> None:
        os.fsync(self._fd)

    @property
    def last_offset(self) -> int:
        return self.next_offset - 1

    def is_empty(self) -> bool:
        return self.size == 0

    # -- scanning (recovery) -----------------------------------------------------------------

    def scan(
        self,
        *,
        is_last: bool,
        on_batch: Callable[[BatchHeader, int], None] | None = None,
    ) -> TornTail | None:
        """Check every batch (header, CRC-32C, offsets) and build the index.

        In the last segment a damaged tail that nothing whole follows is a torn write: it is
        reported, not cut (the caller cuts). Anything else raises CorruptLogError.
        """
        size = os.fstat(self._fd).st_size
        expected = self.base_offset
        buf = b""
        start = 0  # file position of buf[0]
        pos = 0
        while pos < size:
            rel = pos - start
            avail = len(buf) - rel
            need = LOG_OVERHEAD + 5
            if avail >= LOG_OVERHEAD:
                need = max(need, _LENGTH.unpack_from(buf, rel + 8)[0] + LOG_OVERHEAD)
            need = min(need, size - pos)  # a garbage length must not make us read past the file
            if avail < need and start + len(buf) < size:
                more = os.pread(self._fd, max(_SCAN_CHUNK, need - avail), start + len(buf))
                if not more:
                    size = start + len(buf)
                buf = buf[rel:] + more
                start = pos
                continue
            try:
                h = read_batch_header(buf, rel)
            except CorruptBatchError as e:  # TruncatedBatchError included
                return self._damaged(pos, size, e.reason, is_last)
            end = rel + h.length + LOG_OVERHEAD
            crc = crc32c(buf[rel + CRC_START : end])
            if crc != h.crc:
                reason = (
                    f"CRC-32C mismatch in the batch at offset {h.base_offset}: "
                    f"stored {h.crc:#010x}, computed {crc:#010x}"
                )
                return self._damaged(pos, size, reason, is_last)
            if h.base_offset != expected:
                raise CorruptLogError(
                    self.path, pos, f"batch starts at offset {h.base_offset}, expected {expected}"
                )
            if h.last_offset_delta < 0 or h.length < BATCH_OVERHEAD - LOG_OVERHEAD:
                raise CorruptLogError(self.path, pos, f"impossible LastOffsetDelta {h.last_offset_delta}")
            if on_batch is not None:
                on_batch(h, pos)
            self._note_batch(h.base_offset, h.next_offset, pos, h.size, h.base_timestamp)
            expected = h.next_offset
            pos += h.size
        return None

    def _damaged(self, position: int, size: int, reason: str, is_last: bool) -> TornTail:
        """A bad batch at `position`: a torn tail when it is in the last segment and no whole batch
        follows it (a torn write only ever damages the end), else corruption."""
        if is_last:
            follows = self._whole_batch_after(position, size)
            if follows is None:
                return TornTail(self.path, position, size - position, reason)
            reason += f"; a whole batch follows at file position {follows}"
        raise CorruptLogError(self.path, position, reason)

    def _whole_batch_after(self, position: int, size: int) -> int | None:
        """File position of the first CRC-valid batch starting after `position`, if any."""
        data = os.pread(self._fd, size - position - 1, position + 1)
        i = data.find(b"\x02", _MAGIC_AT)
        while i >= 0:
            c = i - _MAGIC_AT
            length = _LENGTH.unpack_from(data, c + 8)[0]
            end = c + LOG_OVERHEAD + length
            sane = length >= BATCH_OVERHEAD - LOG_OVERHEAD and end <= len(data)
            if sane and crc32c(data[c + CRC_START : end]) == int.from_bytes(data[c + 17 : c + 21], "big"):
                return position + 1 + c
            i = data.find(b"\x02", i + 1)
        return None

    def _note_batch(
        self, base_offset: int, next_offset: int, position: int, size: int, timestamp: int
    ) -> None:
        if position - self._last_indexed_position >= INDEX_INTERVAL_BYTES:
            self._index_offsets.append(base_offset)
            self._index_positions.append(position)
            self._last_indexed_position = position
        if self.first_timestamp is None:
            self.first_timestamp = timestamp
        self.size = position + size
        self.next_offset = next_offset

    # -- writing ------------------------------------------------------------------------------

    def append(self, data: bytes, batches: list[tuple[int, int, int, int, int]]) -> None:
        """Write whole batches; `batches` lists each one's (position in `data`, size, base offset,
        next offset, timestamp). A failed write is cut back, so no half batch stays behind."""
        start = self.size
        view = memoryview(data)
        try:
            while view:
                n = os.write(self._fd, view)
                view = view[n:]
        except OSError:
            try:
                os.ftruncate(self._fd, start)
            except OSError:
                pass
            raise
        for rel, size, base, nxt, ts in batches:
            self._note_batch(base, nxt, start + rel, size, ts)

    def truncate_to_position(self, position: int, next_offset: int) -> None:
        os.ftruncate(self._fd, position)
        self.size = position
        self.next_offset = next_offset
        i = bisect.bisect_left(self._index_positions, position)
        del self._index_offsets[i:]
        del self._index_positions[i:]
        self._last_indexed_position = (
            self._index_positions[-1] if self._index_positions else -INDEX_INTERVAL_BYTES
        )
        if position == 0:
            self.first_timestamp = None

    # -- reading ------------------------------------------------------------------------------

    def pread(self, position: int, length: int) -> bytes:
        return os.pread(self._fd, length, position)

    def header_at(self, position: int) -> BatchHeader:
        raw = os.pread(self._fd, BATCH_OVERHEAD, position)
        if len(raw) < BATCH_OVERHEAD:
            raise CorruptLogError(self.path, position, "batch header runs past the end of the file")
        return BatchHeader._make(_HEADER.unpack(raw))

    def find(self, offset: int) -> tuple[int, BatchHeader] | None:
        """(position, header) of the batch holding `offset`, or None past the end."""
        if offset >= self.next_offset:
            return None
        i = bisect.bisect_right(self._index_offsets, offset) - 1
        pos = self._index_positions[i] if i >= 0 else 0
        while pos < self.size:
            h = self.header_at(pos)
            if h.next_offset > offset:
                return pos, h
            pos += h.size
        return None
