"""Writing metadata snapshots of the committed image (Kafka's SnapshotGenerator, driven by SnapshotPolicy).

Commits are folded into the CommittedImage; after each one, and once a second for the time trigger,
the policy says whether a snapshot is due. The image is serialized on a thread of its own (CPU, not
the loop) and written onto the log through the Raft client, on the log's thread. A failed snapshot
is logged and retried by the next trigger: the log still holds everything.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import structlog

from controller.committed_image import CommittedImage
from controller.log_sink import PreparedAppend
from kraftpy.metalog.snapshot_policy import SnapshotPolicy

if TYPE_CHECKING:
    from controller.raft_client import RaftClient

log = structlog.get_logger(__name__)

# The byte trigger is checked on every commit; this often the time trigger is checked when idle.
TIME_TRIGGER_CHECK_INTERVAL_S = 1.0


class SnapshotGenerator:
    """Fed by `on_committed`; `begin_shutdown()` before `stop()` so a stopping controller starts none."""

    def __init__(
        self,
        committed: CommittedImage,
        policy: SnapshotPolicy,
        raft: RaftClient,
        *,
        clock_ms: Callable[[], int],
        on_snapshot: Callable[[], None],
    ) -> None:
        self._committed = committed
        self._policy = policy
        self._raft = raft
        self._clock_ms = clock_ms
        self._on_snapshot = on_snapshot
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="snapshot-writer")
        self._timer: asyncio.Task[None] | None = None
        self._writing: set[asyncio.Task[None]] = set()
        self._shutting_down = False

    def start_time_trigger(self) -> None:
        self._timer = asyncio.ensure_future(self._time_trigger())

    def begin_shutdown(self) -> None:
        self._shutting_down = True

    async def stop(self) -> None:
        self._shutting_down = True
        for task in [t for t in (self._timer,) if t is not None] + list(self._writing):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        # A snapshot being serialized finishes on its thread; waiting for it keeps its files whole.
        self._executor.shutdown(wait=True)

    @property
    def committed(self) -> CommittedImage:
        return self._committed

    def reset(self, committed: CommittedImage) -> None:
        """The state was replaced by a snapshot from the leader."""
        self._committed = committed

    def on_committed(self, appended: PreparedAppend) -> None:
        self._committed.add(appended.base_offset, appended.records, appended.epoch, appended.timestamp_ms)
        self.after_commit(appended.size)

    def after_commit(self, size: int) -> None:
        """`size` bytes of batches were committed and folded into the committed image."""
        self._policy.on_appended(size)
        self.maybe_snapshot()

    def maybe_snapshot(self) -> None:
        if self._shutting_down:
            return
        reason = self._policy.due(self._clock_ms(), self._committed.end_offset)
        if reason is None:
            return
        self._policy.started()
        task = asyncio.ensure_future(self._write(reason))
        task.set_name("metadata-snapshot")
        self._writing.add(task)
        task.add_done_callback(self._writing.discard)

    async def _time_trigger(self) -> None:
        while True:
            await asyncio.sleep(TIME_TRIGGER_CHECK_INTERVAL_S)
            self.maybe_snapshot()

    async def _write(self, reason: str) -> None:
        policy = self._policy
        bytes_covered = policy.bytes_since
        try:
            image, end, in_transaction = await asyncio.get_running_loop().run_in_executor(
                self._executor, self._committed.fold
            )
            if in_transaction or image.is_empty():
                policy.failed()
                return
            records: list[Any] = await asyncio.get_running_loop().run_in_executor(self._executor, image.write)
            sid = await self._raft.write_snapshot(records, end, image.provenance.last_contained_log_time_ms)
        except Exception:
            log.exception("writing a metadata snapshot failed")
            policy.failed()
            return
        policy.finished(self._clock_ms(), end, bytes_covered)
        self._on_snapshot()
        log.info("metadata snapshot taken", reason=reason, end_offset=sid.offset, epoch=sid.epoch)
