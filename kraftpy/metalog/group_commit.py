"""GroupCommitLog: the asyncio face of MetadataLog, where an append returns once it is durable.

Every file operation runs on the log's own single-thread executor, in submission order, never on
the event loop. Appends are written as they come; the first one to finish asks for a flush, which
queues behind the appends already submitted, so one fsync covers all of them. Appends arriving
while that fsync runs wait for the next one. A failed write or fsync fails its callers and every
later call: the log's state on disk is then unknown, and the process is expected to stop.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from kraftpy.log.errors import LogError
from kraftpy.metalog.log import MetadataLog
from protocol.framing import ApiMessageAndVersion

T = TypeVar("T")


class GroupCommitLog:
    def __init__(self, log: MetadataLog, executor: ThreadPoolExecutor | None = None) -> None:
        """`executor` must be single-threaded and used for nothing else touching this log."""
        self.log = log
        self._own_executor = executor is None
        self._executor = executor or ThreadPoolExecutor(max_workers=1, thread_name_prefix="metadata-log")
        self._durable_end = log.flushed_offset
        self._flush_task: asyncio.Task[int] | None = None
        self._failure: BaseException | None = None
        self._closed = False

    @classmethod
    async def open(cls, path: Any, *args: Any, **kwargs: Any) -> GroupCommitLog:
        """Open a MetadataLog on a fresh executor and wrap it (opening scans, so not on the loop)."""
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="metadata-log")
        loop = asyncio.get_running_loop()
        try:
            log = await loop.run_in_executor(
                executor, functools.partial(MetadataLog.open, path, *args, **kwargs)
            )
        except BaseException:
            executor.shutdown(wait=False)
            raise
        self = cls(log, executor)
        self._own_executor = True
        return self

    @property
    def durable_end_offset(self) -> int:
        """End offset (exclusive) of what is known to be fsynced."""
        return self._durable_end

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run `fn(*args)` on the log's thread (for reads, snapshots, truncation...)."""
        self._check()
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._executor, functools.partial(fn, *args))
        except OSError as e:
            self._fail(e)
            raise

    async def append(
        self, records: Sequence[ApiMessageAndVersion], leader_epoch: int, timestamp_ms: int | None = None
    ) -> tuple[int, int]:
        """Append one batch; returns (base offset, last offset) once an fsync covers it."""
        base, last = await self.run(self.log.append, list(records), leader_epoch, timestamp_ms)
        await self.wait_durable(last)
        return base, last

    async def append_control(
        self, control_records: Sequence[Any], leader_epoch: int, timestamp_ms: int | None = None
    ) -> tuple[int, int]:
        base, last = await self.run(
            self.log.append_control, list(control_records), leader_epoch, timestamp_ms
        )
        await self.wait_durable(last)
        return base, last

    async def append_raw_batches(self, data: bytes) -> tuple[int, int]:
        first, last = await self.run(self.log.append_raw_batches, data)
        await self.wait_durable(last)
        return first, last

    async def wait_durable(self, offset: int) -> None:
        """Return once `offset` is fsynced, sharing fsyncs with concurrent callers."""
        while self._durable_end <= offset:
            self._check()
            task = self._flush_task
            if task is None:
                task = asyncio.get_running_loop().create_task(self._flush())
                self._flush_task = task
            # shield: one caller being cancelled must not cancel the fsync the others wait on;
            # the task itself stays tracked in _flush_task and close() awaits it
            await asyncio.shield(task)

    async def flush(self) -> int:
        await self.wait_durable(self.log.log_end_offset - 1)
        return self._durable_end

    async def _flush(self) -> int:
        try:
            end = await self.run(self.log.flush)
            self._durable_end = max(self._durable_end, end)
            return end
        finally:
            self._flush_task = None

    def _fail(self, e: BaseException) -> None:
        if self._failure is None:
            self._failure = e

    def _check(self) -> None:
        if self._failure is not None:
            raise LogError(f"{self.log.dir}: the metadata log failed earlier: {self._failure}")
        if self._closed:
            raise LogError(f"{self.log.dir}: the metadata log is closed")

    async def close(self) -> None:
        """Wait for a running fsync, flush and close the log, stop the executor."""
        if self._closed:
            return
        task = self._flush_task
        if task is not None:
            try:
                await task
            except Exception:
                pass
        self._closed = True
        loop = asyncio.get_running_loop()
        try:
            await loop.run_in_executor(self._executor, self.log.close)
        finally:
            if self._own_executor:
                self._executor.shutdown(wait=True)
