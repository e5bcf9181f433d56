"""One log segment (Kafka's LogSegment): `<base>.log` of record batches v2, its `.index` and `.timeindex`.

The one segment of both logs: partition logs and the metadata log. All methods are sync and raise
OSError unchanged. Stats the log needs (next offset, largest timestamp, first batch timestamp) are
kept in memory and rebuilt by a scan when the segment is opened.

Torn-tail recovery lives here, with one rule for every log: a bad batch in the last segment that no
whole batch follows is a torn write (only ever at the end of a file) and is cut back; any other bad
batch raises CorruptLogError naming the file and position. A segment opened read-only changes
nothing on disk: its torn tail is reported, and the segment taken to end before it.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import structlog
from crc32c import crc32c

from kraftpy.log.batch_io import crc_matches, iter_file_batches, pread_exact, read_header
from kraftpy.log.errors import CorruptLogError, FilePath
from kraftpy.log.indexes import OffsetIndex, TimeIndex
from protocol.record_batch import (
    BATCH_OVERHEAD,
    CRC_START,
    LOG_OVERHEAD,
    BatchHeader,
    CorruptBatchError,
    read_batch_header,
)

log = structlog.get_logger("kraftpy.log")

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
INT32_MAX = (1 << 31) - 1
# A torn tail comes from one interrupted write (at most one fetch response or produce batch);
# more bad bytes than this at the end of a segment are damage, not a torn write.
MAX_TORN_TAIL_BYTES = 64 * 1024 * 1024

BatchObserver = Callable[[int, BatchHeader], None]


def segment_file_name(base_offset: int, suffix: str = LOG_SUFFIX) -> str:
    return f"{base_offset:020d}{suffix}"


def parse_segment_file_name(file_name: str, suffix: str = LOG_SUFFIX) -> int | None:
    """The base offset in `<20 digits><suffix>`, or None for any other name."""
    stem = file_name[: -len(suffix)] if file_name.endswith(suffix) else None
    if stem is None or len(stem) != 20 or not stem.isdigit():
        return None
    return int(stem)


CRC_MISMATCH = "CRC-32C mismatch"


@dataclass(frozen=True, slots=True)
class TornTail:
    """What recovery cut (or, read-only, would cut) from the end of the last segment."""

    path: FilePath
    position: int
    bytes_removed: int
    reason: str

    @property
    def damaged(self) -> bool:
        """A whole batch that failed its CRC: damage, not a write cut short by a crash (a torn write
        leaves a batch shorter than its length), so its records may have been acknowledged."""
        return self.reason.startswith(CRC_MISMATCH)

    def describe(self) -> dict[str, object]:
        return {
            "path": str(self.path),
            "position": self.position,
            "bytes_removed": self.bytes_removed,
            "reason": self.reason,
        }


class LogSegment:
    def __init__(
        self,
        partition_dir: Path,
        base_offset: int,
        fd: int,
        *,
        index_interval_bytes: int,
        max_index_entries: int,
        created_ms: int,
        read_only: bool = False,
    ) -> None:
        self.base_offset = base_offset
        self.read_only = read_only
        self.path = partition_dir / segment_file_name(base_offset)
        self._fd: int | None = fd
        self._closed = False
        self.size = 0
        self.created_ms = created_ms
        self.index_interval_bytes = index_interval_bytes
        self.offset_index = OffsetIndex(
            partition_dir / segment_file_name(base_offset, INDEX_SUFFIX), base_offset, max_index_entries
        )
        self.time_index = TimeIndex(
            partition_dir / segment_file_name(base_offset, TIME_INDEX_SUFFIX),
            base_offset,
            max_index_entries * OffsetIndex.ENTRY_SIZE // TimeIndex.ENTRY_SIZE,
        )
        self.dirty = False
        self._reset_stats()

    def relocate(self, partition_dir: Path) -> None:
        """The partition dir was renamed: the open descriptors stay valid, the paths move."""
        self.path = partition_dir / self.path.name
        self.offset_index.path = partition_dir / self.offset_index.path.name
        self.time_index.path = partition_dir / self.time_index.path.name

    def _reset_stats(self) -> None:
        self.next_offset = self.base_offset
        self.max_timestamp = -1
        self.offset_of_max_timestamp = -1
        self.first_batch_timestamp: int | None = None
        self._bytes_since_index_entry = 0

    # ---- opening

    @classmethod
    def create(
        cls,
        partition_dir: Path,
        base_offset: int,
        *,
        index_interval_bytes: int,
        max_index_entries: int,
        now_ms: int,
    ) -> LogSegment:
        path = partition_dir / segment_file_name(base_offset)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        seg = cls(
            partition_dir,
            base_offset,
            fd,
            index_interval_bytes=index_interval_bytes,
            max_index_entries=max_index_entries,
            created_ms=now_ms,
        )
        try:
            seg.offset_index.create()
            seg.time_index.create()
        except BaseException:
            seg.close()
            raise
        seg.dirty = True
        return seg

    @classmethod
    def open_existing(
        cls,
        partition_dir: Path,
        base_offset: int,
        *,
        index_interval_bytes: int,
        max_index_entries: int,
        now_ms: int,
        read_only: bool = False,
    ) -> LogSegment:
        """Open an existing segment; `read_only` ones never write, so `load` only reads and reports."""
        path = partition_dir / segment_file_name(base_offset)
        fd = os.open(path, os.O_RDONLY if read_only else os.O_RDWR)
        seg = cls(
            partition_dir,
            base_offset,
            fd,
            index_interval_bytes=index_interval_bytes,
            max_index_entries=max_index_entries,
            created_ms=now_ms,
            read_only=read_only,
        )
        seg.size = os.fstat(fd).st_size
        return seg

    def load(self, *, recover: bool, is_last: bool, on_batch: BatchObserver) -> TornTail | None:
        """Scan the file, rebuilding stats, and the indexes when recovering or when they do not check out.

        `recover` checks every batch's CRC (the part above the recovery point); otherwise only headers
        are read. A bad tail of the last segment is cut off (only reported when read-only) and
        returned; a bad batch anywhere else raises CorruptLogError naming the file and position.
        """
        file_size = self.size
        self._reset_stats()
        stored = None if recover else self._stored_index_entries()
        expected_positions = {pos: off for off, pos in stored} if stored is not None else {}
        matched = 0
        self.offset_index.load([])
        self.time_index.load([])
        previous_last = self.base_offset - 1
        torn = None
        try:
            for pos, h, view in iter_file_batches(self._handle(), 0, file_size, whole=recover):
                if view is not None and not crc_matches(view, h):
                    computed = crc32c(view[CRC_START:])
                    raise CorruptBatchError(
                        pos,
                        f"{CRC_MISMATCH} in the batch at offset {h.base_offset}: "
                        f"stored {h.crc:#010x}, computed {computed:#010x}",
                    )
                # A whole batch with a valid CRC in the wrong place is not a torn write.
                if h.last_offset_delta < 0 or h.base_offset <= previous_last:
                    raise CorruptLogError(
                        self.path,
                        pos,
                        f"batch offsets {h.base_offset}..{h.last_offset} do not follow {previous_last}",
                    )
                if h.last_offset - self.base_offset > INT32_MAX:
                    raise CorruptLogError(
                        self.path, pos, f"offset {h.last_offset} too far above segment base"
                    )
                previous_last = h.last_offset
                if expected_positions.get(pos) == h.last_offset:
                    matched += 1
                self._observe(pos, h, write_index=False)
                on_batch(pos, h)
        except CorruptBatchError as e:
            torn = self._torn_tail(e, file_size, is_last)
            file_size = e.offset_in_file
            if self.read_only:
                log.warning("segment has a torn tail (left as is: opened read-only)", **torn.describe())
            else:
                os.ftruncate(self._handle(), file_size)
                self.dirty = True
                log.warning("cut torn tail of segment", **torn.describe())
        self.size = file_size
        if self.read_only:
            # Indexes are only ever written by their owner; a reader keeps the rebuilt ones in memory.
            return torn
        keep_stored = (
            stored is not None
            and matched == len(stored)
            and _increasing(stored)
            and (len(stored) > 0 or len(self.offset_index) == 0)
        )
        if keep_stored:
            assert stored is not None
            # The index on disk points at real batches: keep it (Kafka may have spaced entries differently).
            self.offset_index.load([(off - self.base_offset, pos) for off, pos in stored])
            last_pos = stored[-1][1] if stored else 0
            self._bytes_since_index_entry = file_size - last_pos if stored else file_size
            times = self.time_index.read_file()
            if times is not None and self._times_fit(times):
                self.time_index.load(times)
            else:
                self.time_index.rewrite(self.time_index.relative_entries())
                self.dirty = True
        else:
            self.offset_index.rewrite(self.offset_index.relative_entries())
            self.time_index.rewrite(self.time_index.relative_entries())
            self.dirty = True
        return torn

    def _stored_index_entries(self) -> list[tuple[int, int]] | None:
        raw = self.offset_index.read_file()
        if raw is None:
            return None
        return [(self.base_offset + rel, pos) for rel, pos in raw]

    def _times_fit(self, entries: list[tuple[int, int]]) -> bool:
        last_ts, last_rel = -1, -1
        for ts, rel in entries:
            if ts <= last_ts or rel < last_rel or rel < 0 or self.base_offset + rel >= self.next_offset:
                return False
            last_ts, last_rel = ts, rel
        return True

    def _torn_tail(self, e: CorruptBatchError, file_size: int, is_last: bool) -> TornTail:
        """The bad batch `e` as a torn tail, or CorruptLogError when it cannot be one: a torn write
        only ever damages the end of the last segment, so no whole batch may follow it."""
        position = e.offset_in_file
        remaining = file_size - position
        reason = e.reason
        if is_last:
            if remaining > MAX_TORN_TAIL_BYTES:
                reason += f"; {remaining} bytes follow, more than one write could have torn"
            else:
                follows = _whole_batch_in(pread_exact(self._handle(), remaining, position), 1)
                if follows is None:
                    return TornTail(FilePath(self.path), position, remaining, reason)
                reason += f"; a whole batch follows at file position {position + follows}"
        raise CorruptLogError(self.path, position, reason) from None

    # ---- writing

    def _handle(self) -> int:
        if self._fd is None:
            if self._closed:
                raise ValueError(f"{self.path} is closed")
            # Released while idle (`release_handle`): opened again on use.
            self._fd = os.open(self.path, os.O_RDONLY if self.read_only else os.O_RDWR)
        return self._fd

    def release_handle(self) -> None:
        """Give back the log file's descriptor while the segment is not written (an older segment):
        a partition with many segments then holds one descriptor, not one per segment. Its next use
        opens the file again; written data stays in the page cache and fdatasync finds it."""
        if self._fd is not None and not self._closed:
            fd, self._fd = self._fd, None
            os.close(fd)

    def _observe(self, position: int, h: BatchHeader, *, write_index: bool) -> None:
        self._note(
            position,
            h.base_offset + h.last_offset_delta,
            h.max_timestamp,
            h.length + LOG_OVERHEAD,
            write_index,
        )

    def _note(self, position: int, last: int, max_ts: int, size: int, write_index: bool) -> None:
        # On every append of both logs, so plain ints: no header object is needed to call it.
        if self.first_batch_timestamp is None:
            self.first_batch_timestamp = max_ts
        if max_ts > self.max_timestamp:
            self.max_timestamp = max_ts
            self.offset_of_max_timestamp = last
        if self._bytes_since_index_entry > self.index_interval_bytes:
            self.offset_index.append(last, position, write=write_index)
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp, write=write_index)
            self._bytes_since_index_entry = 0
        self._bytes_since_index_entry += size
        self.next_offset = last + 1

    def append(self, data: bytes | bytearray, batches: list[tuple[int, BatchHeader]]) -> None:
        """Write `data` (whole batches with final offsets) at the end; `batches` are (position in data, header)."""
        start = self._write(data)
        for rel, h in batches:
            self._observe(start + rel, h, write_index=True)

    def append_batch(self, data: bytes | bytearray, last_offset: int, max_timestamp: int) -> None:
        """Write one whole batch with its final offsets at the end (a leader's own, just built)."""
        start = self._write(data)
        self._note(start, last_offset, max_timestamp, len(data), True)

    def _write(self, data: bytes | bytearray) -> int:
        """Write `data` at the end of the file; returns where it starts."""
        fd = self._handle()
        start = self.size
        try:
            written = os.pwrite(fd, data, start)
            if written < len(data):
                view = memoryview(data)
                while written < len(view):
                    written += os.pwrite(fd, view[written:], start + written)
        except OSError:
            # No half batch may stay behind a failed write: a later append would land after it.
            try:
                os.ftruncate(fd, start)
            except OSError:
                pass
            raise
        self.size = start + len(data)
        self.dirty = True
        return start

    def can_hold(self, last_offset: int) -> bool:
        return last_offset - self.base_offset <= INT32_MAX

    def on_become_inactive(self) -> None:
        """The segment is rolled: index its largest timestamp, fsync everything, drop index write handles.

        From here on its indexes are trusted on open (when below the recovery point), so they are
        made durable now, once, rather than with every flush.
        """
        if self.max_timestamp >= 0:
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
        os.fdatasync(self._handle())
        self.offset_index.flush()
        self.time_index.flush()
        self.dirty = False
        self.close_index_handles()

    def close_index_handles(self) -> None:
        self.offset_index.close_handle()
        self.time_index.close_handle()

    def flush(self) -> None:
        """fsync the log file. Not the indexes: the active segment's are rebuilt whenever the log is
        opened, so syncing them here would only put two more fsyncs on every flush."""
        if not self.dirty:
            return
        os.fdatasync(self._handle())
        self.dirty = False

    # ---- reading

    def translate_offset(self, offset: int) -> tuple[int, BatchHeader] | None:
        """Position and header of the first batch whose last offset is >= `offset`."""
        _, start = self.offset_index.lookup(offset)
        for pos, h, _ in iter_file_batches(self._handle(), start, self.size, whole=False, chunk_bytes=16384):
            if h.last_offset >= offset:
                return pos, h
        return None

    def read(
        self, position: int, max_bytes: int, max_offset: int | None, min_one_batch: bool
    ) -> tuple[bytes, int | None]:
        """Whole batches from `position`: at most `max_bytes` (but one batch anyway with `min_one_batch`),
        none whose last offset reaches `max_offset`. Returns the bytes and the offset after the last one."""
        fd = self._handle()
        available = self.size - position
        want = min(max(max_bytes, BATCH_OVERHEAD if min_one_batch else 0), available)
        if want <= 0:
            return b"", None
        chunk = pread_exact(fd, want, position)
        cut = 0
        next_offset = None
        while len(chunk) - cut >= BATCH_OVERHEAD:
            h = read_header(chunk, cut)
            if max_offset is not None and h.last_offset >= max_offset:
                break
            if cut + h.size > len(chunk):
                if cut == 0 and min_one_batch:
                    chunk = pread_exact(fd, h.size, position)
                    if len(chunk) == h.size:
                        cut, next_offset = h.size, h.next_offset
                break
            cut += h.size
            next_offset = h.next_offset
        return chunk[:cut] if cut < len(chunk) else chunk, next_offset

    @property
    def largest_timestamp(self) -> int:
        """The largest batch timestamp, else the file's modification time (for time-based retention)."""
        if self.max_timestamp >= 0:
            return self.max_timestamp
        return int(os.fstat(self._handle()).st_mtime * 1000)

    def rolling_timestamp(self) -> int | None:
        """What `segment.ms` counts from: the first batch's timestamp when it has one."""
        t = self.first_batch_timestamp
        return t if t is not None and t >= 0 else None

    # ---- truncation, deletion

    def truncate_to(self, offset: int, on_batch: BatchObserver) -> int:
        """Remove batches whose last offset is >= `offset`; returns the bytes removed. Stats are rebuilt
        by a header scan of what is left, each batch shown to `on_batch`."""
        found = self.translate_offset(offset)
        if found is None:
            return 0
        pos, _ = found
        fd = self._handle()
        os.ftruncate(fd, pos)
        removed = self.size - pos
        self.size = pos
        self.dirty = True
        self.offset_index.truncate_from_position(pos)
        kept_index = self.offset_index.entries
        kept_times = self.time_index.relative_entries()
        self._reset_stats()
        self.offset_index.load([])
        self.time_index.load([])
        for p, h, _ in iter_file_batches(fd, 0, pos, whole=False):
            self._observe(p, h, write_index=False)
            on_batch(p, h)
        # Keep the on-disk index as cut (it is exact), and the time entries below the cut.
        self.offset_index.load([(off - self.base_offset, p) for off, p in kept_index])
        self._bytes_since_index_entry = pos - kept_index[-1][1] if kept_index else pos
        self.time_index.load(kept_times)
        self.time_index.truncate_from_offset(self.next_offset)
        return removed

    def close(self) -> None:
        """Release every handle; the first OSError is raised after all are closed (they are released anyway)."""
        errors: list[OSError] = []
        for close in (self.offset_index.close_handle, self.time_index.close_handle, self._close_log):
            try:
                close()
            except OSError as e:
                errors.append(e)
        if errors:
            raise errors[0]

    def _close_log(self) -> None:
        self._closed = True
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)

    def delete(self) -> None:
        self.close()
        for path in (self.path, self.offset_index.path, self.time_index.path):
            try:
                path.unlink()
            except FileNotFoundError:
                pass


def _whole_batch_in(buf: bytes, start: int) -> int | None:
    """Position of the first CRC-valid batch at or after `start` in `buf`, if any."""
    magic_at = 16  # Magic is byte 16 of a v2 batch header
    i = buf.find(b"\x02", start + magic_at)
    while i >= 0:
        candidate = i - magic_at
        try:
            h = read_batch_header(buf, candidate)
        except CorruptBatchError:
            pass
        else:
            if crc_matches(memoryview(buf)[candidate : candidate + h.size], h):
                return candidate
        i = buf.find(b"\x02", i + 1)
    return None


def _increasing(entries: list[tuple[int, int]]) -> bool:
    return all(a[0] < b[0] and a[1] < b[1] for a, b in itertools.pairwise(entries))
