"""The broker's own metadata snapshots (Kafka's BrokerMetadataSnapshotter, driven by SnapshotGenerator).

Without them a restart replays the whole local copy of `__cluster_metadata`; with them it replays
the latest snapshot (about one record per partition) and the batches after it. A snapshot is due
once `metadata.log.max.record.bytes.between.snapshots` bytes of batches were applied since the last
one, or `metadata.log.max.snapshot.interval.ms` passed (0 turns the time trigger off) with
something applied since.

Only committed offsets go into a snapshot: the broker applies what it fetched, which may run past
the high watermark, and a snapshot may never be truncated away. An image ending inside an open
metadata transaction is skipped too (it does not hold the transaction's records).

The image is immutable, so its records are built and framed on a thread of its own; the file is
written (temp file, fsync, rename) on the metadata dir's executor in one hop.

After each snapshot it writes, once at startup and once a minute (kraftpy.raft.cleaning: checked
after each fetch, skipped while a snapshot is being written), the broker applies metadata retention
to its copy as Kafka's brokers do (KafkaMetadataLog.maybeClean): while the log and its snapshots are over
`metadata.max.retention.bytes`, or a snapshot is older than `metadata.max.retention.ms`, the
segments wholly before the next snapshot and the older snapshots go; the latest snapshot and the log
after it always stay. The cleaning runs on the metadata dir's executor. A failure to delete is
logged and counted (`clean_failures`, and the log's `snapshot_delete_failures`) and never stops the
broker; an OSError is the metadata dir failing, which takes the dir's one path (LogDir.run takes it
offline, and a broker whose metadata dir is offline stops).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import structlog

from broker.storage.errors import LogDirOfflineError
from kraftpy.image import MetadataImage
from kraftpy.metalog import SnapshotId
from kraftpy.metalog.snapshot_policy import SnapshotPolicy
from kraftpy.metalog.snapshots import build_snapshot
from kraftpy.raft.cleaning import CleaningTimer

if TYPE_CHECKING:
    from broker.storage.log_dir import LogDir
    from kraftpy.metalog import MetadataLog

log = structlog.get_logger("broker.metadata")


def _now_ms() -> int:
    return int(time.time() * 1000)


def build_image_snapshot(image: MetadataImage, epoch: int, max_batch_bytes: int) -> tuple[bytes, int]:
    """The snapshot file's bytes for `image` and its record count (CPU only; safe off the loop)."""
    records = image.write()
    data = build_snapshot(
        records,
        epoch,
        image.provenance.last_contained_log_time_ms,
        _now_ms(),
        max_batch_bytes=max_batch_bytes,
    )
    return data, len(records)


def _clean(mlog: MetadataLog) -> dict[str, int | None] | None:
    """Apply retention and make the deletions durable (the dir's fsync, the epoch checkpoint); what
    is left when something was deleted, else None."""
    if not mlog.maybe_clean():
        return None
    mlog.flush()
    latest = mlog.latest_snapshot()
    return {
        "log_start_offset": mlog.log_start_offset,
        "segments": len(mlog.segments),
        "snapshots": len(mlog.snapshot_ids()),
        "latest_snapshot_end_offset": latest.offset if latest is not None else None,
    }


class BrokerSnapshotter:
    """Fed by the loader: `on_applied(bytes)` per appended fetch, `maybe_snapshot(...)` after each fetch."""

    def __init__(
        self,
        log_dir: LogDir,
        mlog: MetadataLog,
        *,
        clock_ms: Callable[[], int] = _now_ms,
    ) -> None:
        self.log_dir = log_dir
        self.mlog = mlog
        self.clock_ms = clock_ms
        latest = mlog.latest_snapshot()
        self.policy = SnapshotPolicy(
            mlog.config.max_bytes_between_snapshots,
            mlog.config.max_snapshot_interval_ms,
            last_snapshot_ms=clock_ms(),
            last_snapshot_end_offset=latest.offset if latest is not None else 0,
        )
        self.cleaning = CleaningTimer.starting(clock_ms())
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="metadata-snapshot")
        self._task: asyncio.Task[SnapshotId | None] | None = None
        self.written = 0
        self.cleanings = 0
        self.clean_failures = 0

    def on_applied(self, batch_bytes: int) -> None:
        self.policy.on_appended(batch_bytes)

    def maybe_snapshot(
        self, image: MetadataImage, high_watermark: int, in_transaction: bool
    ) -> asyncio.Task[SnapshotId | None] | None:
        """Start writing a snapshot of `image` when one is due and it is safe to; the task or None."""
        end = image.offset + 1
        if in_transaction or end <= 0 or end > high_watermark or image.features.metadata_version is None:
            return None
        if end > self.mlog.log_end_offset or end <= self.mlog.log_start_offset:
            return None
        reason = self.policy.due(self.clock_ms(), end)
        if reason is None or self._busy():
            return None  # when cleaning: due again at the next fetch
        # Read between the loader's appends (it awaits each one), so the epoch history is settled.
        epoch = self.mlog.epoch_for_offset(end - 1)
        if epoch is None:
            return None
        self.policy.started()
        self._task = asyncio.ensure_future(self._write(image, SnapshotId(end, epoch), reason))
        self._task.set_name("metadata-snapshot")
        return self._task

    def maybe_clean(self) -> asyncio.Task[SnapshotId | None] | None:
        """Apply retention when the minute is up; the task or None. A snapshot being written is
        left alone: it cleans after itself, and the minute starts again."""
        if not self.cleaning.due(self.clock_ms()) or self._busy():
            return None
        self._task = asyncio.ensure_future(self._clean_on_timer())
        self._task.set_name("metadata-log-cleaning")
        return self._task

    async def _clean_on_timer(self) -> SnapshotId | None:
        with contextlib.suppress(LogDirOfflineError):  # the dir's failure path has it
            await self.clean()
        return None

    def _busy(self) -> bool:
        return self._task is not None and not self._task.done()

    async def _write(self, image: MetadataImage, sid: SnapshotId, reason: str) -> SnapshotId | None:
        covered = self.policy.bytes_since
        try:
            data, n = await asyncio.get_running_loop().run_in_executor(
                self._executor, build_image_snapshot, image, sid.epoch, self.mlog.config.max_batch_bytes
            )
            await self.log_dir.run(self.mlog.write_built_snapshot, sid, data, timeout=math.inf)
        except Exception:
            # The log still holds everything; the next trigger tries again.
            log.exception("writing the broker's metadata snapshot failed", end_offset=sid.offset)
            self.policy.failed()
            return None
        log.info(
            "broker metadata snapshot taken",
            reason=reason,
            end_offset=sid.offset,
            epoch=sid.epoch,
            records=n,
            bytes=len(data),
        )
        # Still "in progress" for the policy while cleaning: no other snapshot reads the log's epochs
        # on the loop while the dir's thread moves its start.
        with contextlib.suppress(LogDirOfflineError):
            await self.clean()
        self.policy.finished(self.clock_ms(), sid.offset, covered)
        self.written += 1
        return sid

    async def clean(self) -> bool:
        """Apply metadata retention to the log on the dir's executor; True when something was deleted.

        A failure is logged and counted and returns False, except the dir failing: LogDirOfflineError
        (the dir already offline, its failure handled as any other) is raised for the caller to stop.
        """
        failures_before = self.mlog.snapshot_delete_failures
        try:
            left = await self.log_dir.run(_clean, self.mlog, timeout=math.inf)
        except LogDirOfflineError as e:
            self.clean_failures += 1
            log.error("the metadata dir failed while its log was being cleaned", error=str(e))
            raise
        except Exception:
            self.clean_failures += 1
            log.exception("cleaning the broker's metadata log failed")
            return False
        self.clean_failures += self.mlog.snapshot_delete_failures - failures_before
        if left is None:
            return False
        self.cleanings += 1
        log.info("broker metadata log cleaned", **left)
        return True

    async def wait_idle(self) -> None:
        """Wait out a snapshot being written and the cleaning after it, so the log's snapshots and
        segments hold still while it is rebuilt."""
        task = self._task
        if task is not None and not task.done():
            with contextlib.suppress(Exception):
                await asyncio.shield(task)

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._executor.shutdown(wait=False, cancel_futures=True)
