"""MetadataLog: the controller's durable `__cluster_metadata-0`, synchronous and file-level.

Appends go to the page cache; `flush` fsyncs everything written since the last one, so callers
group many appends under one fsync. One thread at a time: the process runs this on a dedicated
single-thread executor (see group_commit.GroupCommitLog).

Segments, their indexes, torn-tail recovery, the leader-epoch checkpoint and the errors are
kraftpy.log's, the same as a broker's partition logs; this module adds what only the metadata log
has: snapshots, quorum-state, checks Raft needs (offsets with no gaps, epochs never going back) and
flushes grouped by the caller.

Opening recovers the log: every batch is checked (header, CRC-32C, contiguous offsets). A torn
write at the tail of the last segment is cut back to the last whole batch and reported; any other
bad batch raises CorruptLogError naming the file and position. Nothing is skipped silently.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import structlog

from kraftpy.log.batch_io import crc_matches
from kraftpy.log.epoch_cache import EpochEntry, LeaderEpochCache, OffsetAndEpoch
from kraftpy.log.errors import CorruptLogError, LogError, OffsetOutOfRangeError
from kraftpy.log.leader_epoch_checkpoint import (
    LEADER_EPOCH_CHECKPOINT_FILE,
    read_leader_epoch_checkpoint,
    write_leader_epoch_checkpoint,
)
from kraftpy.log.loader import load_segments, segment_files
from kraftpy.log.partition_metadata import PARTITION_METADATA_FILE, format_partition_metadata
from kraftpy.log.segment import LogSegment, TornTail
from kraftpy.log.segments import LogSegments
from kraftpy.metalog.checkpoints import QuorumStateData, read_quorum_state, write_quorum_state
from kraftpy.metalog.files import (
    DELETED_SUFFIX,
    PARTIAL_SUFFIX,
    QUORUM_STATE,
    SnapshotId,
    parse_snapshot_file_name,
    partition_dir,
    snapshot_file_name,
)
from kraftpy.metalog.reading import (
    EntryRun,
    LogEntry,
    decoded_run,
    iter_decoded,
    iter_record_batches,
    run_entries,
)
from kraftpy.metalog.snapshots import (
    MAX_BATCH_BYTES,
    SnapshotContents,
    build_snapshot,
    parse_snapshot,
    read_snapshot_file,
    read_snapshot_timestamp,
    write_snapshot_file,
)
from kraftpy.storage.atomic import atomic_write, fsync_dir
from protocol.framing import ApiMessageAndVersion
from protocol.metadata_batches import DecodedBatch
from protocol.record_batch import (
    BatchHeader,
    CorruptBatchError,
    build_control_batch,
    build_metadata_batch,
    read_batch_header,
)
from protocol.uuid import Uuid

_tuple_new = tuple.__new__

log = structlog.get_logger(__name__)

_READ_CHUNK = 4 << 20
# Kafka's defaults for every log (log.index.interval.bytes, log.index.size.max.bytes / 8).
_SEGMENT_ARGS = {"index_interval_bytes": 4096, "max_index_entries": 10 * 1024 * 1024 // 8}


def _now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True)
class MetadataLogConfig:
    """The metadata log settings (reference section 6), Kafka's defaults."""

    segment_bytes: int = 1024 * 1024 * 1024  # metadata.log.segment.bytes
    segment_ms: int = 7 * 24 * 3600 * 1000  # metadata.log.segment.ms
    retention_bytes: int = 100 * 1024 * 1024  # metadata.max.retention.bytes (soft)
    retention_ms: int = 7 * 24 * 3600 * 1000  # metadata.max.retention.ms (soft)
    max_batch_bytes: int = MAX_BATCH_BYTES
    # A broker writes a snapshot of its image after this many bytes of batches or this long
    # (0: never by time), as BrokerMetadataSnapshotter does.
    max_bytes_between_snapshots: int = 20971520  # metadata.log.max.record.bytes.between.snapshots
    max_snapshot_interval_ms: int = 3600000  # metadata.log.max.snapshot.interval.ms

    @classmethod
    def from_server_config(cls, config: Any) -> MetadataLogConfig:
        """From a kraftpy.config.KafkaConfig (read by attribute, so any object with them works)."""
        return cls(
            segment_bytes=config.metadata_log_segment_bytes,
            segment_ms=config.metadata_log_segment_ms,
            retention_bytes=config.metadata_max_retention_bytes,
            retention_ms=config.metadata_max_retention_ms,
            max_bytes_between_snapshots=config.metadata_log_max_record_bytes_between_snapshots,
            max_snapshot_interval_ms=config.metadata_log_max_snapshot_interval_ms,
        )


# Left in the log's dir when recovery cut a damaged whole batch, until someone settles it: only then
# does the cut stop being news (a lone voter must not start as if nothing had been lost).
DAMAGE_MARKER = "damaged-tail.json"


@dataclass(frozen=True)
class RecoveryReport:
    """What opening the log found and did."""

    truncated_bytes: int = 0
    torn_tail: TornTail | None = None
    segments: int = 0
    batches: int = 0
    removed_files: tuple[str, ...] = field(default=())
    damage: dict[str, object] | None = None
    """A damaged batch cut at this open or an earlier one and not yet settled (`DAMAGE_MARKER`)."""

    @property
    def clean(self) -> bool:
        return self.torn_tail is None

    @property
    def damaged_tail(self) -> bool:
        return self.torn_tail is not None and self.torn_tail.damaged


class MetadataLog:
    """Use `MetadataLog.open(path)`; `path` is the metadata.log.dir or its `__cluster_metadata-0`."""

    def __init__(self, directory: Path, config: MetadataLogConfig, read_only: bool) -> None:
        self.dir = directory
        self.config = config
        self.read_only = read_only
        self.recovery = RecoveryReport()
        self._segments = LogSegments(directory, **_SEGMENT_ARGS)
        self._epochs = LeaderEpochCache()
        self._epochs_dirty = False
        self._snapshots: dict[SnapshotId, Path] = {}
        self._log_start = 0
        self._flushed_end = 0
        self._unflushed: set[LogSegment] = set()
        self._dir_dirty = False
        self._closed = False
        self.flush_count = 0
        self.snapshot_delete_failures = 0

    # == opening ===================================================================================

    @classmethod
    def open(
        cls,
        path: Path | str,
        config: MetadataLogConfig | None = None,
        *,
        read_only: bool = False,
        topic_id: Uuid = Uuid.METADATA_TOPIC_ID,
    ) -> MetadataLog:
        """Open (and, unless read_only, create and recover) the log.

        Read-only opening changes nothing on disk: a torn tail is reported and left alone, and the
        log is taken to end before it.
        """
        directory = partition_dir(path)
        self = cls(directory, config or MetadataLogConfig(), read_only)
        if not directory.is_dir():
            if read_only:
                raise LogError(f"{directory}: no such metadata log directory")
            directory.mkdir(parents=True)
            fsync_dir(directory.parent)
        if not read_only and not (directory / PARTITION_METADATA_FILE).exists():
            atomic_write(directory / PARTITION_METADATA_FILE, format_partition_metadata(topic_id))
        try:
            self._recover()
        except BaseException:
            self._close_segments()
            raise
        return self

    def _list_dir(self) -> tuple[list[int], list[SnapshotId], list[Path]]:
        names = [p.name for p in self.dir.iterdir()]
        bases, orphans = segment_files(names)
        snaps = sorted(sid for n in names if (sid := parse_snapshot_file_name(n)) is not None)
        partial = [n for n in names if n.endswith((PARTIAL_SUFFIX, DELETED_SUFFIX, ".tmp"))]
        return bases, snaps, [self.dir / n for n in [*partial, *orphans]]

    def _recover(self) -> None:
        bases, snaps, leftovers = self._list_dir()
        removed: list[str] = []
        if not self.read_only:
            for p in leftovers:
                p.unlink(missing_ok=True)
                removed.append(p.name)
            if leftovers:
                fsync_dir(self.dir)
        self._snapshots = {sid: self.dir / snapshot_file_name(sid) for sid in snaps}
        if not bases:
            if self.read_only:
                raise LogError(f"{self.dir}: no segment files")
            start = snaps[-1].offset if snaps else 0
            self._segments.create(start, _now_ms())

        checkpoint = read_leader_epoch_checkpoint(self.dir / LEADER_EPOCH_CHECKPOINT_FILE)
        scanned: list[EpochEntry] = []
        batches = 0

        def on_batch(pos: int, h: BatchHeader) -> None:
            nonlocal batches
            batches += 1
            # PartitionLeaderEpoch sits outside the CRC: a damaged one would pass every other check
            # and move the epoch history. In a Raft log epochs never go back.
            if scanned and h.partition_leader_epoch < scanned[-1].epoch:
                previous = scanned[-1]
                raise CorruptLogError(
                    self._segment_path(bases, h.base_offset),
                    pos,
                    f"the batch at offset {h.base_offset} has partition leader epoch "
                    f"{h.partition_leader_epoch}, after epoch {previous.epoch} began at offset "
                    f"{previous.start_offset}: epochs never go back in a Raft log, so one of them is "
                    "damaged (the field is not covered by the CRC)",
                )
            if not scanned or h.partition_leader_epoch > scanned[-1].epoch:
                scanned.append(EpochEntry(h.partition_leader_epoch, h.base_offset))

        # Every batch is checked on each open (no recovery point is kept), and a Raft log has no
        # gaps between offsets.
        segments, torn = load_segments(
            self.dir,
            bases,
            recovery_point=None,
            on_batch=on_batch,
            contiguous=True,
            read_only=self.read_only,
            now_ms=_now_ms(),
            **_SEGMENT_ARGS,
        )
        for seg in segments:
            self._segments.add(seg)
        if torn is not None:
            self._handle_torn_tail(torn)
        self._check_epochs_against_quorum_state(scanned)

        first = self._segments[0]
        self._log_start = first.base_offset
        history = LeaderEpochCache(checkpoint)
        history.truncate_from_end(self._log_start)
        entries = history.entries()
        for e in scanned:
            entries.append(e)
        self._epochs = LeaderEpochCache(entries)
        self._epochs.truncate_from_end(self.log_end_offset)
        self._epochs.truncate_from_start(self._log_start)
        if self._epochs.entries() != checkpoint:
            self._epochs_dirty = True

        latest = self.latest_snapshot()
        if latest is not None and latest.offset > self.log_end_offset and not self.read_only:
            log.warning(
                "metadata log ends before its latest snapshot; starting the log at the snapshot",
                dir=str(self.dir),
                log_end_offset=self.log_end_offset,
                snapshot=snapshot_file_name(latest),
            )
            self.truncate_fully_and_start_at(latest.offset)
        if not self.read_only:
            for sid in list(self._snapshots):
                if sid.offset < self._log_start and sid != latest:
                    self._snapshots.pop(sid).unlink(missing_ok=True)
                    removed.append(snapshot_file_name(sid))
                    self._dir_dirty = True
            if self._epochs_dirty or self._dir_dirty:
                self.flush()
        self._flushed_end = self.log_end_offset
        self.recovery = RecoveryReport(
            truncated_bytes=0 if torn is None else torn.bytes_removed,
            torn_tail=torn,
            segments=len(self._segments),
            batches=batches,
            removed_files=tuple(removed),
            damage=self._read_damage(),
        )
        log.info(
            "metadata log opened",
            dir=str(self.dir),
            log_start_offset=self._log_start,
            log_end_offset=self.log_end_offset,
            segments=len(self._segments),
            snapshots=len(self._snapshots),
            truncated_bytes=self.recovery.truncated_bytes,
            removed_files=len(removed),
        )

    def _segment_path(self, bases: Sequence[int], offset: int) -> Path:
        base = max((b for b in bases if b <= offset), default=bases[0] if bases else 0)
        return self.dir / f"{base:020d}.log"

    def _read_damage(self) -> dict[str, object] | None:
        path = self.dir / DAMAGE_MARKER
        try:
            data = json.loads(path.read_bytes())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as e:
            return {"path": str(path), "reason": f"unreadable {DAMAGE_MARKER}: {e}"}
        return (
            data if isinstance(data, dict) else {"path": str(path), "reason": f"unreadable {DAMAGE_MARKER}"}
        )

    def settle_damage(self) -> None:
        """The cut records are not needed from this copy (other voters hold them): forget the damage."""
        if self.recovery.damage is None:
            return
        (self.dir / DAMAGE_MARKER).unlink(missing_ok=True)
        fsync_dir(self.dir)
        self.recovery = replace(self.recovery, damage=None)

    def _check_epochs_against_quorum_state(self, scanned: Sequence[EpochEntry]) -> None:
        """No batch may carry an epoch newer than the one this voter last knew: that epoch was
        persisted before any batch of it was written or accepted."""
        if not scanned:
            return
        try:
            state = self.read_quorum_state()
        except LogError:
            return  # a damaged quorum-state is the Raft client's to report
        if state is None or scanned[-1].epoch <= state.leader_epoch:
            return
        bad = scanned[-1]
        raise CorruptLogError(
            self._segment_path([s.base_offset for s in self._segments], bad.start_offset),
            0,
            f"the batch at offset {bad.start_offset} has partition leader epoch {bad.epoch}, newer than "
            f"the epoch {state.leader_epoch} in quorum-state: its PartitionLeaderEpoch (outside the CRC) "
            "is damaged",
        )

    def _handle_torn_tail(self, torn: TornTail) -> None:
        """The segment has cut the tail (or, read-only, left it); make the cut durable and say so."""
        seg = self._segments.active
        if self.read_only:
            log.warning(
                "metadata log has a torn tail (left as is: opened read-only)",
                file=str(torn.path),
                position=torn.position,
                bytes=torn.bytes_removed,
                reason=torn.reason,
            )
            return
        seg.flush()
        if torn.damaged:
            damage = {**torn.describe(), "log_end_offset": seg.next_offset, "cut_at_ms": _now_ms()}
            atomic_write(self.dir / DAMAGE_MARKER, json.dumps(damage, indent=2).encode() + b"\n")
        (log.error if torn.damaged else log.warning)(
            "metadata log recovery cut a damaged whole batch from the tail; records it held may have been acknowledged"
            if torn.damaged
            else "metadata log recovery cut a torn batch from the tail",
            file=str(torn.path),
            position=torn.position,
            truncated_bytes=torn.bytes_removed,
            reason=torn.reason,
            log_end_offset=seg.next_offset,
        )

    # == state =====================================================================================

    @property
    def log_start_offset(self) -> int:
        return self._log_start

    @property
    def log_end_offset(self) -> int:
        return self._segments.active.next_offset

    @property
    def flushed_offset(self) -> int:
        """The end offset (exclusive) of what the last flush made durable."""
        return self._flushed_end

    @property
    def size_in_bytes(self) -> int:
        return self._segments.size_bytes

    @property
    def segments(self) -> list[LogSegment]:
        return list(self._segments)

    @property
    def latest_epoch(self) -> int:
        """The epoch of the last batch, or of the latest snapshot when the log holds nothing after it."""
        if self._epochs.latest_epoch >= 0:
            return self._epochs.latest_epoch
        latest = self.latest_snapshot()
        return latest.epoch if latest is not None else -1

    def _check_writable(self) -> None:
        if self._closed:
            raise LogError(f"{self.dir}: the metadata log is closed")
        if self.read_only:
            raise LogError(f"{self.dir}: the metadata log was opened read-only")

    # == appending =================================================================================

    def append(
        self, records: Sequence[ApiMessageAndVersion], leader_epoch: int, timestamp_ms: int | None = None
    ) -> tuple[int, int]:
        """Write `records` as one batch at the log end; (base offset, last offset). Not yet durable."""
        if not records:
            raise ValueError("append needs at least one record")
        ts = _now_ms() if timestamp_ms is None else timestamp_ms
        base = self.log_end_offset
        data = build_metadata_batch(base, leader_epoch, ts, records)
        self._append_one(data, base, base + len(records), leader_epoch, ts)
        return base, base + len(records) - 1

    def append_control(
        self, control_records: Sequence[Any], leader_epoch: int, timestamp_ms: int | None = None
    ) -> tuple[int, int]:
        """Write a control batch (LeaderChangeMessage and friends) at the log end."""
        if not control_records:
            raise ValueError("append_control needs at least one record")
        ts = _now_ms() if timestamp_ms is None else timestamp_ms
        base = self.log_end_offset
        data = build_control_batch(base, leader_epoch, ts, control_records)
        self._append_one(data, base, base + len(control_records), leader_epoch, ts)
        return base, base + len(control_records) - 1

    def _append_one(self, data: bytes, base: int, next_offset: int, epoch: int, ts: int) -> None:
        self._check_writable()
        if len(data) > self.config.max_batch_bytes:
            raise LogError(f"batch of {len(data)} bytes exceeds the {self.config.max_batch_bytes}-byte limit")
        if epoch < self._epochs.latest_epoch:
            raise LogError(f"leader epoch {epoch} is older than the log's latest {self._epochs.latest_epoch}")
        seg = self._maybe_roll(len(data), ts, next_offset - 1)
        seg.append_batch(data, next_offset - 1, ts)
        self._unflushed.add(seg)
        if self._epochs.assign(epoch, base):
            self._epochs_dirty = True

    def append_raw_batches(self, data: bytes) -> tuple[int, int]:
        """Append batches copied from the leader as they are (offsets and epochs kept).

        Every batch is checked first (whole, CRC-32C, offsets continuing the log, epochs not going
        back); if any fails nothing is written. Returns (first offset, last offset).
        """
        self._check_writable()
        if not data:
            raise ValueError("append_raw_batches needs at least one batch")
        batches: list[tuple[int, BatchHeader]] = []  # (position in data, header)
        expected = self.log_end_offset
        epoch = self._epochs.latest_epoch
        pos = 0
        while pos < len(data):
            try:
                h = read_batch_header(data, pos)
            except CorruptBatchError as e:
                raise LogError(f"batch at position {pos} of the appended data: {e.reason}") from None
            end = pos + h.size
            if not crc_matches(memoryview(data)[pos:end], h):
                raise LogError(f"batch at offset {h.base_offset} fails its CRC-32C check")
            if h.base_offset != expected or h.last_offset_delta < 0:
                raise LogError(
                    f"batch at offset {h.base_offset}..{h.last_offset} does not continue the log at {expected}"
                )
            if h.partition_leader_epoch < epoch:
                raise LogError(
                    f"batch at offset {h.base_offset} has epoch {h.partition_leader_epoch}, older than {epoch}"
                )
            epoch = h.partition_leader_epoch
            batches.append((pos, h))
            expected = h.next_offset
            pos = end
        i = 0
        while i < len(batches):
            first = batches[i][1]
            seg = self._maybe_roll(first.size, first.max_timestamp, first.last_offset)
            room = self.config.segment_bytes - seg.size
            j = i + 1
            used = first.size
            while j < len(batches) and used + batches[j][1].size <= room:
                used += batches[j][1].size
                j += 1
            run = batches[i:j]
            start = run[0][0]
            seg.append(data[start : start + used], [(p - start, h) for p, h in run])
            self._unflushed.add(seg)
            for _, h in run:
                if self._epochs.assign(h.partition_leader_epoch, h.base_offset):
                    self._epochs_dirty = True
            i = j
        return batches[0][1].base_offset, batches[-1][1].last_offset

    def _maybe_roll(self, batch_size: int, timestamp_ms: int, last_offset: int) -> LogSegment:
        """The segment to append to: the active one, or a new one when it is full or old enough."""
        seg = self._segments.active
        size = seg.size
        if size == 0:
            return seg
        first = seg.first_batch_timestamp
        if (
            size + batch_size > self.config.segment_bytes
            or (first is not None and first >= 0 and timestamp_ms - first >= self.config.segment_ms)
            or seg.offset_index.is_full
            or seg.time_index.is_full
            or not seg.can_hold(last_offset)
        ):
            self.roll()
            return self._segments.active
        return seg

    def roll(self) -> None:
        """Start a new segment at the log end.

        The old one is fsynced first, as a partition log's is, so only the newest segment can ever
        hold a torn write.
        """
        self._check_writable()
        old = self._segments.active
        seg = self._segments.roll(self.log_end_offset, _now_ms())
        if seg is not old:
            self._unflushed.discard(old)
            log.debug("metadata log rolled a segment", file=str(seg.path))

    def flush(self) -> int:
        """fsync everything written since the last flush; returns the durable end offset."""
        if self._closed:
            raise LogError(f"{self.dir}: the metadata log is closed")
        if self.read_only:
            return self._flushed_end
        end = self.log_end_offset
        for seg in sorted(self._unflushed, key=lambda s: s.base_offset):
            seg.flush()
        self._unflushed.clear()
        if self._dir_dirty:
            fsync_dir(self.dir)
            self._dir_dirty = False
        if self._epochs_dirty:
            write_leader_epoch_checkpoint(self.dir / LEADER_EPOCH_CHECKPOINT_FILE, self._epochs.entries())
            self._epochs_dirty = False
        self._flushed_end = end
        self.flush_count += 1
        return end

    # == reading ===================================================================================

    def read(self, from_offset: int, max_bytes: int) -> bytes:
        """Whole batches from the one holding `from_offset`, up to `max_bytes` (at least one batch).

        Empty at the log end; OffsetOutOfRangeError outside [log start, log end].
        """
        end = self.log_end_offset
        if from_offset == end:
            return b""
        if from_offset < self._log_start or from_offset > end:
            raise OffsetOutOfRangeError(from_offset, self._log_start, end, self.dir)
        out: list[bytes] = []
        budget = max_bytes
        for seg in self._segments.from_offset(from_offset):
            if budget <= 0 and out:
                break
            found = seg.translate_offset(from_offset)
            if found is None:
                continue
            pos = found[0]
            chunk, _ = seg.read(pos, budget, None, not out)
            if not chunk:
                break
            out.append(chunk)
            budget -= len(chunk)
            if pos + len(chunk) < seg.size:
                break
            from_offset = seg.next_offset
        return b"".join(out)

    def size_from(self, offset: int) -> int:
        """Bytes of the batches from the one holding `offset` to the log end."""
        start = max(offset, self._log_start)
        total = 0
        for seg in self._segments.from_offset(start):
            found = seg.translate_offset(start)
            if found is not None:
                total += seg.size - found[0]
        return total

    def _chunks(self, from_offset: int) -> Iterator[tuple[LogSegment, int, bytes]]:
        """(segment, file position, bytes of whole batches) from the batch holding `from_offset`."""
        start = max(from_offset, self._log_start)
        for seg in self._segments.from_offset(start):
            found = seg.translate_offset(start)
            if found is None:
                continue
            pos = found[0]
            while pos < seg.size:
                chunk, _ = seg.read(pos, _READ_CHUNK, None, True)
                if not chunk:
                    raise CorruptLogError(seg.path, pos, "not a whole batch where one was found at open")
                yield seg, pos, chunk
                pos += len(chunk)

    def iter_batches(self, from_offset: int | None = None) -> Iterator[tuple[LogSegment, int, Any]]:
        """(segment, position, RecordBatch) for every batch from the one holding `from_offset`."""
        for seg, pos, chunk in self._chunks(self._log_start if from_offset is None else from_offset):
            for rel, batch in iter_record_batches(chunk, seg.path):
                yield seg, pos + rel, batch

    def iter_decoded_batches(
        self, from_offset: int | None = None
    ) -> Iterator[tuple[LogSegment, int, DecodedBatch]]:
        """Like iter_batches, with the records decoded."""
        for seg, pos, chunk in self._chunks(self._log_start if from_offset is None else from_offset):
            for position, db in iter_decoded(chunk, seg.path, pos):
                yield seg, position, db

    def entries(
        self, *, from_snapshot: bool = True, include_control: bool = False, from_offset: int | None = None
    ) -> Iterator[LogEntry]:
        """Records in replay order: the latest snapshot's (their offset is the snapshot's last
        contained offset), then the log's records after it."""
        for offset, step, records, batch in self.entry_runs(
            from_snapshot=from_snapshot, include_control=include_control, from_offset=from_offset
        ):
            yield from run_entries(offset, step, records, batch)

    def entry_runs(
        self,
        *,
        from_snapshot: bool = True,
        include_control: bool = False,
        from_offset: int | None = None,
        end_offset: int | None = None,
    ) -> Iterator[EntryRun]:
        """`entries()` a batch at a time (see EntryRun), what a restart replays; with `end_offset`,
        only the records below it, and no batch past it is read."""
        start = self._log_start if from_offset is None else from_offset
        latest = self.latest_snapshot() if from_snapshot else None
        if from_snapshot and start > 0 and (latest is None or latest.offset < start):
            raise LogError(
                f"{self.dir}: the log starts at offset {start} and no snapshot covers the offsets before it"
            )
        if latest is not None:
            at = latest.offset - 1
            if end_offset is not None and at >= end_offset:
                return
            contents = self.read_snapshot(latest)
            for _, _, records, batch in contents.runs(include_control=include_control):
                yield _tuple_new(EntryRun, (at, 0, records, batch))
            start = max(start, latest.offset)
        for seg, position, db in self.iter_decoded_batches(start):
            h = db.header
            if end_offset is not None and h.base_offset >= end_offset:
                return
            run = decoded_run(db, seg.path, position, include_control=include_control, min_offset=start)
            if end_offset is None or h.base_offset + h.last_offset_delta + 1 < end_offset:
                if run is not None:
                    yield run
                continue
            # The batch that reaches the end is the last one read.
            if run is not None:
                yield run._replace(records=run.records[: end_offset - run.offset])
            return

    def replay_into(self, delta: Any, *, from_snapshot: bool = True) -> int:
        """Replay the latest snapshot, then the log, into `delta` (a kraftpy.image.MetadataDelta
        on MetadataImage.EMPTY). Returns the number of records replayed."""
        n = 0
        for offset, step, records, batch in self.entry_runs(from_snapshot=from_snapshot):
            epoch, timestamp_ms = batch.epoch, batch.timestamp_ms
            for record in records:
                delta.replay(record, offset, epoch=epoch, timestamp_ms=timestamp_ms)
                offset += step
            n += len(records)
        return n

    def load_image(self, *, strict: bool = True) -> Any:
        """The MetadataImage the log ends in (an open transaction at the end is left out)."""
        from kraftpy.image import MetadataDelta, MetadataImage

        delta = MetadataDelta(MetadataImage.EMPTY, strict=strict)
        self.replay_into(delta)
        return delta.apply()

    # == truncation ================================================================================

    def truncate_to(self, offset: int) -> None:
        """Remove every batch holding offsets >= `offset` (a batch straddling it goes whole)."""
        self._check_writable()
        if offset >= self.log_end_offset:
            return
        if offset < self._log_start:
            raise OffsetOutOfRangeError(
                offset,
                self._log_start,
                self.log_end_offset,
                self.dir,
                f"cannot truncate to {offset}, below the log start {self._log_start}",
            )
        latest = self.latest_snapshot()
        if latest is not None and offset < latest.offset:
            # snapshots hold committed data only, and committed data is never truncated
            raise OffsetOutOfRangeError(
                offset,
                self._log_start,
                self.log_end_offset,
                self.dir,
                f"cannot truncate to {offset}, below the latest snapshot {latest.offset}",
            )
        for seg in self._segments.remove_after(offset):
            self._unflushed.discard(seg)
            self._dir_dirty = True
        seg = self._segments.active
        if seg.truncate_to(offset, _ignore_batch):
            self._unflushed.add(seg)
        if self._epochs.truncate_from_end(self.log_end_offset):
            self._epochs_dirty = True
        self._flushed_end = min(self._flushed_end, self.log_end_offset)
        log.info("metadata log truncated", dir=str(self.dir), log_end_offset=self.log_end_offset)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Drop every segment and start empty at `offset` (after loading a leader's snapshot).

        Snapshots below `offset` go too, as Kafka's truncateToLatestSnapshot drops them: no log
        follows them any more, and retention only deletes what lies between the log start and the
        latest snapshot, so they would stay until the log is next opened."""
        self._check_writable()
        self._segments.start_over_at(offset, _now_ms())
        self._unflushed.clear()
        self._log_start = offset
        self._epochs.clear()
        self._epochs_dirty = True
        self._dir_dirty = True
        self._flushed_end = offset
        forgotten = {s: p for s, p in self._snapshots.items() if s.offset < offset}
        if forgotten:
            self._snapshots = {s: p for s, p in self._snapshots.items() if s.offset >= offset}
            for sid, path in forgotten.items():
                self._unlink_snapshot(sid, path)

    # == leader epochs =============================================================================

    def epoch_entries(self) -> list[EpochEntry]:
        return self._epochs.entries()

    def epoch_for_offset(self, offset: int) -> int | None:
        return self._epochs.epoch_for_offset(offset)

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        """LeaderEpochFileCache.endOffsetFor against this log's end (see epoch_cache)."""
        return self._epochs.end_offset_for(epoch, self.log_end_offset)

    # == snapshots =================================================================================

    def snapshot_ids(self) -> list[SnapshotId]:
        return sorted(self._snapshots)

    def latest_snapshot(self) -> SnapshotId | None:
        return max(self._snapshots) if self._snapshots else None

    def earliest_snapshot(self) -> SnapshotId | None:
        return min(self._snapshots) if self._snapshots else None

    def snapshot_path(self, snapshot_id: SnapshotId) -> Path:
        try:
            return self._snapshots[snapshot_id]
        except KeyError:
            raise LogError(f"{self.dir}: no snapshot {snapshot_file_name(snapshot_id)}") from None

    def snapshot_size(self, snapshot_id: SnapshotId) -> int:
        return self.snapshot_path(snapshot_id).stat().st_size

    def read_snapshot(self, snapshot_id: SnapshotId) -> SnapshotContents:
        return read_snapshot_file(self.snapshot_path(snapshot_id))

    def read_snapshot_bytes(self, snapshot_id: SnapshotId, position: int, max_bytes: int) -> bytes:
        """Raw bytes of a snapshot file, for FetchSnapshot."""
        with open(self.snapshot_path(snapshot_id), "rb") as f:
            f.seek(position)
            return f.read(max_bytes)

    def write_snapshot(
        self,
        records: Sequence[ApiMessageAndVersion],
        end_offset: int,
        epoch: int,
        last_contained_timestamp: int,
        *,
        now_ms: int | None = None,
    ) -> SnapshotId:
        """Write the snapshot `(end_offset, epoch)`: `records` (an image's write()) hold every
        offset below `end_offset`, which must be in the log and in `epoch`."""
        self._check_writable()
        sid = SnapshotId(end_offset, epoch)
        if sid in self._snapshots:
            return sid
        self._check_snapshot_id(sid)
        data = build_snapshot(
            records,
            epoch,
            last_contained_timestamp,
            _now_ms() if now_ms is None else now_ms,
            max_batch_bytes=self.config.max_batch_bytes,
        )
        return self.write_built_snapshot(sid, data, records=len(records))

    def write_built_snapshot(self, snapshot_id: SnapshotId, data: bytes, *, records: int = -1) -> SnapshotId:
        """Write a snapshot whose bytes `build_snapshot` made elsewhere (so that CPU work stays off
        the thread doing this log's disk I/O); the same checks as `write_snapshot`."""
        self._check_writable()
        if snapshot_id in self._snapshots:
            return snapshot_id
        self._check_snapshot_id(snapshot_id)
        self._add_snapshot(snapshot_id, write_snapshot_file(self.dir, snapshot_id, data))
        log.info(
            "metadata snapshot written",
            file=snapshot_file_name(snapshot_id),
            bytes=len(data),
            records=records,
        )
        return snapshot_id

    def _check_snapshot_id(self, sid: SnapshotId) -> None:
        end_offset, epoch = sid.offset, sid.epoch
        if not self._log_start <= end_offset <= self.log_end_offset:
            raise LogError(
                f"snapshot end offset {end_offset} is outside the log [{self._log_start}, {self.log_end_offset}]"
            )
        known = self.epoch_for_offset(end_offset - 1) if end_offset > self._log_start else None
        if known is not None and known != epoch:
            raise LogError(f"offset {end_offset - 1} is in epoch {known}, not {epoch}")

    def install_snapshot(self, snapshot_id: SnapshotId, data: bytes) -> SnapshotId:
        """Keep a snapshot fetched from the leader (checked first); a snapshot beyond the log end
        restarts the log at its offset."""
        self._check_writable()
        parse_snapshot(data, self.dir / snapshot_file_name(snapshot_id)).check_records()
        self._add_snapshot(snapshot_id, write_snapshot_file(self.dir, snapshot_id, data))
        if snapshot_id.offset > self.log_end_offset:
            self.truncate_fully_and_start_at(snapshot_id.offset)
            self.flush()
        return snapshot_id

    def delete_before_snapshot(self, snapshot_id: SnapshotId | None = None) -> bool:
        """Move the log start up to `snapshot_id` (default: the latest), deleting segments wholly
        below it and older snapshots. True when something was deleted."""
        self._check_writable()
        latest = self.latest_snapshot()
        sid = latest if snapshot_id is None else snapshot_id
        if sid is None or latest is None or sid not in self._snapshots:
            return False
        if not self._log_start < sid.offset <= latest.offset:
            return False
        self._log_start = min(sid.offset, self.log_end_offset)
        deleted = 0
        while len(self._segments) > 1 and self._segments[1].base_offset <= self._log_start:
            seg = self._segments[0]
            self._segments.remove(seg)
            self._unflushed.discard(seg)
            deleted += 1
        forgotten = {s: p for s, p in self._snapshots.items() if s < sid}
        if forgotten:
            # A new dict rather than edits in place: a broker reads the ids on its event loop while this
            # runs on the dir's thread.
            self._snapshots = {s: p for s, p in self._snapshots.items() if s >= sid}
        for old, path in forgotten.items():
            self._unlink_snapshot(old, path)
            deleted += 1
        if self._epochs.truncate_from_start(self._log_start):
            self._epochs_dirty = True
        if deleted:
            self._dir_dirty = True
            log.info(
                "metadata log deleted old segments and snapshots",
                dir=str(self.dir),
                log_start_offset=self._log_start,
                deleted=deleted,
            )
        return deleted > 0

    def _add_snapshot(self, snapshot_id: SnapshotId, path: Path) -> None:
        self._snapshots = {**self._snapshots, snapshot_id: path}

    def _unlink_snapshot(self, snapshot_id: SnapshotId, path: Path) -> None:
        """Delete a forgotten snapshot's file. A failure is logged and counted, not raised (as Kafka's
        snapshot deletion does): the id is already forgotten; a file left behind is found again when the
        log is next opened, and cleaned again from there."""
        try:
            path.unlink(missing_ok=True)
        except OSError as e:
            self.snapshot_delete_failures += 1
            log.error(
                "deleting an old metadata snapshot failed",
                dir=str(self.dir),
                file=snapshot_file_name(snapshot_id),
                error=repr(e),
            )

    def maybe_clean(self, now_ms: int | None = None) -> bool:
        """Apply metadata.max.retention.bytes/ms (soft limits, KafkaMetadataLog.maybeClean): while
        too much is kept, drop what lies before the next snapshot. The latest snapshot and the
        log after it always stay."""
        self._check_writable()
        cleaned = False
        if self.config.retention_bytes >= 0:
            sizes = {sid: self.snapshot_size(sid) for sid in self._snapshots}
            total = sum(sizes.values())

            def too_big(sid: SnapshotId) -> bool:
                nonlocal total
                if self.size_in_bytes + total > self.config.retention_bytes:
                    total -= sizes[sid]
                    return True
                return False

            cleaned |= self._clean_snapshots(too_big)
        if self.config.retention_ms >= 0:
            now = _now_ms() if now_ms is None else now_ms

            def too_old(sid: SnapshotId) -> bool:
                return now - read_snapshot_timestamp(self.snapshot_path(sid)) > self.config.retention_ms

            cleaned |= self._clean_snapshots(too_old)
        return cleaned

    def _clean_snapshots(self, should_clean: Any) -> bool:
        cleaned = False
        ids = self.snapshot_ids()
        for snap, next_snap in itertools.pairwise(ids):
            if not should_clean(snap):
                break
            if not self.delete_before_snapshot(next_snap):
                break
            cleaned = True
        return cleaned

    # == quorum state ==============================================================================

    def read_quorum_state(self) -> QuorumStateData | None:
        return read_quorum_state(self.dir / QUORUM_STATE)

    def write_quorum_state(self, state: QuorumStateData) -> None:
        self._check_writable()
        write_quorum_state(self.dir / QUORUM_STATE, state)

    # == closing ===================================================================================

    def close(self) -> None:
        """Flush and release the files."""
        if self._closed:
            return
        try:
            if not self.read_only:
                self.flush()
        finally:
            self._close_segments()
            self._closed = True

    def _close_segments(self) -> None:
        self._segments.close()

    def __enter__(self) -> MetadataLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _ignore_batch(_position: int, _header: BatchHeader) -> None:
    """Truncation shows the batches left to an observer; the metadata log keeps no per-batch state."""
