"""A partition's log in one log dir: `<logdir>/<topic>-<partition>/` (Kafka's UnifiedLog + LocalLog).

Segments, indexes, recovery and the files beside them are kraftpy.log's, shared with the metadata
log; what is a broker's alone stays here: producer state, retention, follower appends, and running
on a log dir's executor.

Inside the dir:
- `partition.metadata` (topic id), `leader-epoch-checkpoint`;
- segments `<20-digit base offset>.log` of record batches v2, written exactly as Kafka writes them,
  each with a sparse `.index` and a `.timeindex`.

Every method is sync file I/O meant to run on the log dir's own executor (`LogDir.run`), one call at a
time: the object has no locks. An OSError always propagates unchanged, for the dir's failure path;
after one, only `close_handles()` should be called. Bad input raises KafkaError with Kafka's code.

Durability: appends are written but not fsynced; `flush()` fsyncs and moves `recovery_point`. A
rolled segment is fsynced before the next one is created, so only the last segment can have a torn
tail. On open, segments above the recovery point are checked batch by batch (CRC included), the rest
by headers only; a torn tail of the last segment is cut back and reported (`recovery_report`).

Producer state is rebuilt from batch headers on open. A copy of it is kept for the start of each
segment, so truncating the log only replays the one segment it cuts into.
"""

from __future__ import annotations

import os
import shutil
import struct
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import structlog

from broker.storage.dir_names import TopicPartition, delete_dir_name, parse_partition_dir_name
from broker.storage.errors import InconsistentTopicIdError, LogClosedError, UnexpectedAppendOffsetError
from broker.storage.log_config import LogConfig
from broker.storage.producer_state import ProducerStateManager
from kraftpy.log.batch_io import crc_matches, iter_buffer_batches, iter_file_batches
from kraftpy.log.errors import CorruptCheckpointError, OffsetOutOfRangeError
from kraftpy.log.leader_epoch_checkpoint import (
    LEADER_EPOCH_CHECKPOINT_FILE,
    UNDEFINED_OFFSET,
    LeaderEpochFileCache,
)
from kraftpy.log.loader import load_segments, segment_files
from kraftpy.log.partition_metadata import read_partition_metadata, write_partition_metadata
from kraftpy.log.segment import LogSegment, TornTail
from kraftpy.log.segments import LogSegments
from kraftpy.storage.atomic import fsync_dir
from protocol.errors import Errors, KafkaError
from protocol.record_batch import BatchHeader, CorruptBatchError
from protocol.uuid import Uuid

log = structlog.get_logger("broker.storage")

# Kafka's INVALID_RECORD (87) where protocol.errors has it, else the nearest older code.
INVALID_RECORD = Errors.__members__.get("INVALID_RECORD", Errors.CORRUPT_MESSAGE)
_BASE_OFFSET = struct.Struct(">q")  # record batch v2: BaseOffset at byte 0
_LEADER_EPOCH = struct.Struct(">i")  # PartitionLeaderEpoch at byte 12; neither is covered by the CRC
_LEADER_EPOCH_POS = 12
_TEMP_SUFFIXES = (".tmp", ".deleted", ".cleaned")


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(frozen=True, slots=True)
class AppendResult:
    """Where an append landed. `duplicate`: a retried idempotent batch, answered with its first offsets."""

    first_offset: int
    last_offset: int
    max_timestamp: int
    valid_bytes: int
    num_batches: int
    duplicate: bool = False
    written: bytes | None = field(default=None, repr=False, compare=False)
    """A leader append: the batch as written (its offsets and leader epoch set)."""


@dataclass(frozen=True, slots=True)
class ReadResult:
    """Whole batches from the batch holding the offset asked for; `next_offset` follows the last one
    (the offset asked for when nothing was read)."""

    records: bytes
    next_offset: int


class EpochEndOffset(NamedTuple):
    leader_epoch: int
    end_offset: int


class UnreadableBatch(NamedTuple):
    """A batch of this log that a checked read found damaged: its base offset and why."""

    offset: int
    reason: str


class PartitionLog:
    def __init__(
        self,
        partition_dir: Path,
        topic_partition: TopicPartition,
        topic_id: Uuid | None,
        config: LogConfig,
    ) -> None:
        self.dir = partition_dir
        self.topic_partition = topic_partition
        self.topic_id = topic_id
        self.config = config
        self.epoch_cache = LeaderEpochFileCache(partition_dir / LEADER_EPOCH_CHECKPOINT_FILE)
        self.producers = ProducerStateManager()
        self._segments = LogSegments(partition_dir, **self._segment_args())
        self._snapshots: dict[int, ProducerStateManager] = {}
        self._log_start_offset = 0
        self.recovery_point = 0
        self.recovery_report: TornTail | None = None
        self._unreadable: UnreadableBatch | None = None
        self._closed = False

    # ------------------------------------------------------------------ opening

    @classmethod
    def open(
        cls,
        partition_dir: str | Path,
        *,
        topic_id: Uuid | None = None,
        config: LogConfig | None = None,
        log_start_offset: int = 0,
        recovery_point: int = 0,
        now_ms: int | None = None,
    ) -> PartitionLog:
        """Open the partition dir, creating it when absent.

        `log_start_offset` and `recovery_point` come from the log dir's checkpoints (0 when unknown:
        everything is checked). A `topic_id` is written to partition.metadata when the dir has none;
        a different one there raises InconsistentTopicIdError.
        """
        partition_dir = Path(partition_dir)
        parsed = parse_partition_dir_name(partition_dir.name)
        if parsed is None:
            raise ValueError(f"{partition_dir.name!r} is not a partition dir name (<topic>-<partition>)")
        now = _wall_clock_ms() if now_ms is None else now_ms
        created = False
        if not partition_dir.is_dir():
            partition_dir.mkdir()
            created = True
        stored_id = read_partition_metadata(partition_dir)
        if topic_id is not None and stored_id is None:
            write_partition_metadata(partition_dir, topic_id)
        elif topic_id is not None and stored_id != topic_id:
            raise InconsistentTopicIdError(partition_dir, stored_id, topic_id)
        if created:
            fsync_dir(partition_dir.parent)
        self = cls(partition_dir, parsed.topic_partition, topic_id or stored_id, config or LogConfig())
        try:
            self._load(log_start_offset, recovery_point, now)
        except BaseException:
            self.close_handles()
            raise
        return self

    def _segment_args(self) -> dict[str, int]:
        return {
            "index_interval_bytes": self.config.index_interval_bytes,
            "max_index_entries": self.config.segment_index_bytes // 8,
        }

    def _load(self, log_start_offset: int, recovery_point: int, now_ms: int) -> None:
        bases = self._scan_dir()
        try:
            cache = LeaderEpochFileCache.load(self.dir)
        except CorruptCheckpointError as e:
            log.warning("leader epoch checkpoint unreadable, rebuilding it from the log", error=str(e))
            cache = LeaderEpochFileCache(self.dir / LEADER_EPOCH_CHECKPOINT_FILE)
        self.epoch_cache = cache
        loaded_epochs = cache.entries
        producers = ProducerStateManager()

        def on_batch(_pos: int, h: BatchHeader) -> None:
            producers.update(h, h.base_offset)
            latest = cache.latest_epoch
            if h.partition_leader_epoch >= 0 and (latest is None or h.partition_leader_epoch > latest):
                cache.assign(h.partition_leader_epoch, h.base_offset, flush=False)

        def on_segment(base: int) -> None:
            self._snapshots[base] = producers.copy()

        segments, self.recovery_report = load_segments(
            self.dir,
            bases,
            recovery_point=recovery_point,
            on_batch=on_batch,
            on_segment=on_segment,
            now_ms=now_ms,
            **self._segment_args(),
        )
        for seg in segments:
            self._segments.add(seg)
        for seg in segments[:-1]:
            seg.release_handle()  # older segments are opened again when read
        if not self._segments:
            start = max(log_start_offset, 0)
            self._segments.create(start, now_ms)
            self._snapshots[start] = ProducerStateManager()
        self.producers = producers
        leo = self.log_end_offset
        self._log_start_offset = min(max(log_start_offset, self._segments[0].base_offset), leo)
        self.recovery_point = min(max(recovery_point, self._log_start_offset), leo)
        cache.truncate_from_end(leo, flush=False)
        cache.truncate_from_start(self._log_start_offset, flush=False)
        if cache.entries != loaded_epochs or not cache.path.exists():
            cache.flush()
        producers.truncate_head(self._log_start_offset)

    def _scan_dir(self) -> list[int]:
        """Base offsets of the segments; leftovers of interrupted writes and orphan indexes are removed."""
        names = os.listdir(self.dir)
        bases, orphans = segment_files(names)
        for n in [*orphans, *(n for n in names if n.endswith(_TEMP_SUFFIXES))]:
            (self.dir / n).unlink()
        return bases

    # ------------------------------------------------------------------ state

    def _check_open(self) -> None:
        if self._closed:
            raise LogClosedError(f"log {self.dir} is closed")

    @property
    def active_segment(self) -> LogSegment:
        return self._segments.active

    @property
    def log_end_offset(self) -> int:
        return self._segments.active.next_offset

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def size_bytes(self) -> int:
        return self._segments.size_bytes

    @property
    def segment_base_offsets(self) -> list[int]:
        return self._segments.bases

    @property
    def segments(self) -> list[LogSegment]:
        return list(self._segments)

    @property
    def latest_epoch(self) -> int | None:
        return self.epoch_cache.latest_epoch

    # ------------------------------------------------------------------ appends

    def append_as_leader(self, records: bytes, leader_epoch: int, now_ms: int | None = None) -> AppendResult:
        """Append a producer's batch, giving it the next offsets and `leader_epoch`.

        Kafka's checks, in its order: one whole batch v2 with BaseOffset 0, within max.message.bytes,
        CRC-32C valid, record count matching its offsets, no control batch from a client; then the
        producer state: a retried batch (same producer, epoch and sequences as one of its last five)
        returns its earlier offsets with `duplicate=True` and is not written again.
        """
        self._check_open()
        now = _wall_clock_ms() if now_ms is None else now_ms
        if not records:
            return AppendResult(-1, -1, -1, 0, 0)
        batches, valid = _parse_batches(records)
        if len(batches) != 1 or valid != len(records):
            raise KafkaError(
                INVALID_RECORD,
                f"a produce request carries exactly one whole batch for {self.topic_partition}",
            )
        _, h = batches[0]
        self._validate_client_batch(records, h)
        duplicate = self.producers.find_duplicate(h)
        if duplicate is not None:
            return AppendResult(
                duplicate.first_offset, duplicate.last_offset, duplicate.timestamp, valid, 1, duplicate=True
            )
        first = self.log_end_offset
        self.producers.check_client_batch(h, first)
        # One copy of the batch, with its offset and epoch set: the leader's tail keeps these bytes.
        view = memoryview(records)
        written = b"".join(
            (
                _BASE_OFFSET.pack(first),
                view[8:_LEADER_EPOCH_POS],
                _LEADER_EPOCH.pack(leader_epoch),
                view[_LEADER_EPOCH_POS + 4 :],
            )
        )
        h = h._replace(base_offset=first, partition_leader_epoch=leader_epoch)
        self._maybe_assign_epoch(h)
        self._write(written, [(0, h)], now)
        return AppendResult(first, h.last_offset, h.max_timestamp, valid, 1, written=written)

    def _validate_client_batch(self, records: bytes, h: BatchHeader) -> None:
        if h.base_offset != 0:
            raise KafkaError(INVALID_RECORD, f"batch BaseOffset is {h.base_offset}, a producer sends 0")
        if h.size > self.config.max_message_bytes:
            raise KafkaError(
                Errors.MESSAGE_TOO_LARGE,
                f"batch of {h.size} bytes is larger than max.message.bytes {self.config.max_message_bytes}",
            )
        if h.size > self.config.segment_bytes:
            raise KafkaError(
                Errors.RECORD_LIST_TOO_LARGE,
                f"batch of {h.size} bytes is larger than segment.bytes {self.config.segment_bytes}",
            )
        if not crc_matches(records, h):
            raise KafkaError(
                Errors.CORRUPT_MESSAGE, f"batch for {self.topic_partition} fails its CRC-32C check"
            )
        if h.last_offset_delta < 0 or h.records_count != h.last_offset_delta + 1:
            raise KafkaError(
                INVALID_RECORD,
                f"batch holds {h.records_count} records but its offsets span {h.last_offset_delta + 1}",
            )
        if h.is_control:
            raise KafkaError(INVALID_RECORD, "a producer cannot write control batches")
        if h.producer_id >= 0 and h.base_sequence < 0:
            raise KafkaError(INVALID_RECORD, f"idempotent batch of producer {h.producer_id} has no sequence")

    def append_as_follower(self, records: bytes, now_ms: int | None = None) -> AppendResult:
        """Append batches fetched from the leader, with their offsets and epochs as they are.

        A partial batch at the end is ignored (a fetch response may end with one). The first offset
        must be at least the log end offset and offsets must grow, else UnexpectedAppendOffsetError
        (the fetcher truncates and retries); a bad CRC raises CORRUPT_MESSAGE.
        """
        self._check_open()
        now = _wall_clock_ms() if now_ms is None else now_ms
        batches, valid = _parse_batches(records)
        if not batches:
            return AppendResult(-1, -1, -1, 0, 0)
        leo = self.log_end_offset
        previous_last = leo - 1
        max_ts = -1
        view = memoryview(records)
        for pos, h in batches:
            if h.base_offset <= previous_last or h.last_offset_delta < 0:
                raise UnexpectedAppendOffsetError(
                    batches[0][1].base_offset,
                    leo,
                    f"{self.topic_partition}: batch offsets {h.base_offset}..{h.last_offset} do not follow "
                    f"{previous_last} (log end offset {leo})",
                )
            if not crc_matches(view[pos : pos + h.size], h):
                raise KafkaError(
                    Errors.CORRUPT_MESSAGE, f"fetched batch at offset {h.base_offset} fails its CRC-32C check"
                )
            if h.size > self.config.segment_bytes:
                raise KafkaError(
                    Errors.RECORD_LIST_TOO_LARGE, f"batch of {h.size} bytes exceeds segment.bytes"
                )
            previous_last = h.last_offset
            max_ts = max(max_ts, h.max_timestamp)
        for _, h in batches:
            self._maybe_assign_epoch(h)
        data = records if valid == len(records) else records[:valid]
        self._write(data, batches, now)
        return AppendResult(
            batches[0][1].base_offset, batches[-1][1].last_offset, max_ts, valid, len(batches)
        )

    def _maybe_assign_epoch(self, h: BatchHeader) -> None:
        latest = self.epoch_cache.latest_epoch
        if h.partition_leader_epoch >= 0 and (latest is None or h.partition_leader_epoch > latest):
            self.epoch_cache.assign(h.partition_leader_epoch, h.base_offset)

    def _write(self, data: bytes | bytearray, batches: list[tuple[int, BatchHeader]], now_ms: int) -> None:
        first, last = batches[0][1].base_offset, batches[-1][1].last_offset
        max_ts = max(h.max_timestamp for _, h in batches)
        self._maybe_roll(len(data), first, last, max_ts, now_ms)
        self.active_segment.append(data, batches)
        for _, h in batches:
            self.producers.update(h, h.base_offset)

    def _maybe_roll(self, size: int, first_offset: int, last_offset: int, max_ts: int, now_ms: int) -> None:
        seg = self.active_segment
        if seg.size > 0:
            rolling = seg.rolling_timestamp()
            waited = max_ts - rolling if rolling is not None else now_ms - seg.created_ms
            full = (
                seg.size + size > self.config.segment_bytes
                or waited > self.config.segment_ms
                or seg.offset_index.is_full
                or seg.time_index.is_full
            )
            if full or not seg.can_hold(last_offset):
                self.roll(first_offset, now_ms)
        elif not seg.can_hold(last_offset):
            self.roll(first_offset, now_ms)

    def roll(self, new_base: int | None = None, now_ms: int | None = None) -> LogSegment:
        """Start a new active segment at `new_base` (the log end offset by default).

        The old one is fsynced first, so only the newest segment can ever hold a torn write.
        """
        self._check_open()
        now = _wall_clock_ms() if now_ms is None else now_ms
        base = self.log_end_offset if new_base is None else new_base
        old = self.active_segment
        seg = self._segments.roll(base, now)
        if seg is old:
            return seg
        old.release_handle()  # no longer written; a no-op when it was replaced (closed)
        if old.size == 0:
            self._snapshots.pop(old.base_offset, None)  # replaced, not rolled
        else:
            self.recovery_point = max(self.recovery_point, old.next_offset)
        self._snapshots[base] = self.producers.copy()
        return seg

    # ------------------------------------------------------------------ reads

    def read(
        self,
        from_offset: int,
        max_bytes: int,
        max_offset: int | None = None,
        *,
        min_one_batch: bool = True,
        verify: bool = False,
    ) -> ReadResult:
        """Whole batches starting with the one that holds `from_offset`, up to `max_bytes` (one batch
        even if larger, with `min_one_batch`), none reaching `max_offset` (e.g. the high watermark).

        With `verify`, the CRC of every batch read is checked; the first that fails is remembered
        (`unreadable`) and the bytes are still returned as they are, so the reader sees them too.
        An offset below the log start or above the log end raises OffsetOutOfRangeError.
        """
        self._check_open()
        leo = self.log_end_offset
        if from_offset < self._log_start_offset or from_offset > leo:
            raise OffsetOutOfRangeError(from_offset, self._log_start_offset, leo, str(self.topic_partition))
        if from_offset == leo or (max_offset is not None and from_offset >= max_offset):
            return ReadResult(b"", from_offset)
        for seg in self._segments.from_offset(from_offset):
            found = seg.translate_offset(from_offset)
            if found is None:
                continue  # past this segment's last batch: the next segment holds it
            data, next_offset = seg.read(found[0], max_bytes, max_offset, min_one_batch)
            if verify and data:
                self._verify(data, seg, from_offset)
            if seg is not self.active_segment:
                seg.release_handle()  # a catch-up read: the descriptor is not kept for the next one
            return ReadResult(data, next_offset if next_offset is not None else from_offset)
        return ReadResult(b"", from_offset)

    def _verify(self, data: bytes, seg: LogSegment, from_offset: int) -> None:
        try:
            batches, _ = iter_buffer_batches(data)
        except CorruptBatchError as e:
            self._mark_unreadable(from_offset, f"unreadable batch header in {seg.path.name}: {e.reason}")
            return
        view = memoryview(data)
        for pos, h in batches:
            if not crc_matches(view[pos : pos + h.size], h):
                self._mark_unreadable(
                    h.base_offset,
                    f"batch at offset {h.base_offset} in {seg.path.name} fails its CRC-32C check",
                )
                return

    def _mark_unreadable(self, offset: int, reason: str) -> None:
        if self._unreadable is None or self._unreadable.offset != offset:
            log.error(
                "partition log holds a damaged batch", partition=str(self.topic_partition), reason=reason
            )
        self._unreadable = UnreadableBatch(offset, reason)

    @property
    def unreadable(self) -> UnreadableBatch | None:
        """The damaged batch a checked read found, while the log still holds it (truncation, a new
        log start offset or retention drop it)."""
        bad = self._unreadable
        if bad is not None and not self._log_start_offset <= bad.offset < self.log_end_offset:
            return None
        return bad

    def iter_batches(self, from_offset: int | None = None) -> Iterator[tuple[int, bytes]]:
        """(base offset, batch bytes) of every batch from `from_offset` (the log start by default)."""
        offset = self._log_start_offset if from_offset is None else from_offset
        while offset < self.log_end_offset:
            result = self.read(offset, 1 << 20)
            if not result.records:
                break
            for pos, h in _parse_batches(result.records)[0]:
                yield h.base_offset, result.records[pos : pos + h.size]
            offset = result.next_offset

    # ------------------------------------------------------------------ leader epochs

    def assign_epoch_start_offset(self, leader_epoch: int, start_offset: int) -> None:
        """On becoming leader: `leader_epoch` starts at `start_offset` (the log end offset then)."""
        self._check_open()
        self.epoch_cache.assign(leader_epoch, start_offset)

    def end_offset_for_epoch(self, leader_epoch: int) -> EpochEndOffset | None:
        """OffsetsForLeaderEpoch: the largest epoch <= `leader_epoch` we know and where it ends."""
        self._check_open()
        epoch, offset = self.epoch_cache.end_offset_for(leader_epoch, self.log_end_offset)
        if offset == UNDEFINED_OFFSET:
            return None
        return EpochEndOffset(epoch, offset)

    # ------------------------------------------------------------------ truncation and retention

    def truncate_to(self, offset: int) -> bool:
        """Cut the log back so it ends at `offset` (a batch holding `offset` goes whole); True when
        anything was removed. Below the first segment the log restarts empty at `offset`."""
        self._check_open()
        if offset < 0:
            raise ValueError(f"cannot truncate to negative offset {offset}")
        if offset >= self.log_end_offset:
            return False
        if offset < self._segments[0].base_offset:
            self.truncate_fully_and_start_at(offset)
            return True
        for seg in self._segments.remove_after(offset):
            self._snapshots.pop(seg.base_offset, None)
        snapshot = self._snapshots.get(self.active_segment.base_offset)
        producers = snapshot.copy() if snapshot is not None else ProducerStateManager()
        self.active_segment.truncate_to(offset, lambda _pos, h: producers.update(h, h.base_offset))
        self.producers = producers
        if snapshot is None:
            self._rebuild_producer_state()
        leo = self.log_end_offset
        self._log_start_offset = min(self._log_start_offset, leo)
        self.producers.truncate_head(self._log_start_offset)
        self.epoch_cache.truncate_from_end(leo)
        self.recovery_point = min(self.recovery_point, leo)
        if self._unreadable is not None and self._unreadable.offset >= leo:
            self._unreadable = None  # cut away: what comes at that offset next is checked on its way in
        return True

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Drop everything; the log restarts empty at `offset` (a follower far behind the leader's log start)."""
        self._check_open()
        self._segments.start_over_at(offset, _wall_clock_ms())
        self._snapshots = {offset: ProducerStateManager()}
        self.producers = ProducerStateManager()
        self.epoch_cache.clear()
        self._log_start_offset = offset
        self.recovery_point = offset
        self._unreadable = None

    def _rebuild_producer_state(self) -> None:
        producers = ProducerStateManager()
        for seg in self._segments:
            self._snapshots[seg.base_offset] = producers.copy()
            for _pos, h, _ in iter_file_batches(seg._handle(), 0, seg.size, whole=False):
                producers.update(h, h.base_offset)
        self.producers = producers

    def increment_log_start_offset(self, new_start: int) -> bool:
        """Move the log start offset up (DeleteRecords, or a follower following its leader's);
        segments wholly below it go at the next `delete_old_segments`."""
        self._check_open()
        if new_start <= self._log_start_offset:
            return False
        if new_start > self.log_end_offset:
            raise OffsetOutOfRangeError(
                new_start, self._log_start_offset, self.log_end_offset, str(self.topic_partition)
            )
        self._log_start_offset = new_start
        self.epoch_cache.truncate_from_start(new_start)
        self.producers.truncate_head(new_start)
        return True

    def delete_old_segments(self, high_watermark: int, now_ms: int | None = None) -> int:
        """Retention: delete whole segments below the log start offset, over `retention.bytes`, or older
        than `retention.ms`, oldest first and never one holding offsets at or above `high_watermark`.
        Returns how many were deleted; the log start offset moves to the first segment left."""
        self._check_open()
        now = _wall_clock_ms() if now_ms is None else now_ms
        deleted = self._delete_segments_where(
            high_watermark,
            now,
            lambda seg, nxt: nxt is not None and nxt.base_offset <= self._log_start_offset,
        )
        if self.config.retention_bytes >= 0:
            excess = self.size_bytes - self.config.retention_bytes

            def over_size(seg: LogSegment, _next: LogSegment | None) -> bool:
                nonlocal excess
                if excess - seg.size < 0:
                    return False
                excess -= seg.size
                return True

            if excess > 0:
                deleted += self._delete_segments_where(high_watermark, now, over_size)
        if self.config.retention_ms >= 0:
            retention_ms = self.config.retention_ms
            deleted += self._delete_segments_where(
                high_watermark, now, lambda seg, _nxt: now - seg.largest_timestamp > retention_ms
            )
        return deleted

    def _delete_segments_where(
        self, high_watermark: int, now_ms: int, predicate: Callable[[LogSegment, LogSegment | None], bool]
    ) -> int:
        doomed: list[LogSegment] = []
        segs = list(self._segments)
        for i, seg in enumerate(segs):
            nxt = segs[i + 1] if i + 1 < len(segs) else None
            if nxt is None and seg.size == 0:
                break
            upper = nxt.base_offset if nxt is not None else self.log_end_offset
            if not (high_watermark >= upper and predicate(seg, nxt)):
                break
            doomed.append(seg)
        if not doomed:
            return 0
        if len(doomed) == len(segs):
            self.roll(now_ms=now_ms)
        for seg in doomed:
            self._segments.remove(seg)
            self._snapshots.pop(seg.base_offset, None)
        new_start = self._segments[0].base_offset
        if new_start > self._log_start_offset:
            self._log_start_offset = new_start
            self.epoch_cache.truncate_from_start(new_start)
            self.producers.truncate_head(new_start)
        log.info(
            "deleted old segments",
            partition=str(self.topic_partition),
            count=len(doomed),
            log_start_offset=self._log_start_offset,
        )
        return len(doomed)

    def remove_expired_producers(self, now_ms: int | None = None) -> list[int]:
        now = _wall_clock_ms() if now_ms is None else now_ms
        return self.producers.remove_expired(now, self.config.producer_id_expiration_ms)

    # ------------------------------------------------------------------ durability and lifetime

    def flush(self) -> None:
        """fsync everything written so far; the recovery point becomes the log end offset."""
        self._check_open()
        for seg in self._segments:
            seg.flush()
        self.recovery_point = self.log_end_offset

    def close(self) -> None:
        """Flush, then release every file handle. Handles are released even when the flush fails."""
        if self._closed:
            return
        try:
            self.flush()
        finally:
            self.close_handles()

    def close_handles(self) -> None:
        """Release every file handle without writing anything (the dir has failed, or open() did).

        Raises the first OSError from close(2) after all handles are released.
        """
        self._closed = True
        self._segments.close()

    def rename_dir(self, new_dir: Path) -> None:
        """Rename the partition dir (a future log promoted, a swapped-out log retired), keeping the
        log open: every path the log and its segments hold moves with it (Kafka's renameDir)."""
        self._check_open()
        os.rename(self.dir, new_dir)
        fsync_dir(new_dir.parent)
        self.dir = new_dir
        self._segments.dir = new_dir
        self.epoch_cache.path = new_dir / self.epoch_cache.path.name
        for seg in self._segments:
            seg.relocate(new_dir)

    def delete(self) -> None:
        """Close and remove the partition dir. It is first renamed to `<topic>-<p>.<uid>-delete`, so a
        crash part-way leaves a dir the log dir knows to finish deleting."""
        self.close_handles()
        parent = self.dir.parent
        doomed = parent / delete_dir_name(self.topic_partition)
        os.rename(self.dir, doomed)
        fsync_dir(parent)
        self.dir = doomed
        shutil.rmtree(doomed)
        fsync_dir(parent)


def _parse_batches(records: bytes | bytearray | memoryview) -> tuple[list[tuple[int, BatchHeader]], int]:
    try:
        return iter_buffer_batches(records)
    except CorruptBatchError as e:
        raise KafkaError(Errors.CORRUPT_MESSAGE, f"unreadable record batch: {e.reason}") from None
