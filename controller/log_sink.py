"""Where the event queue's records go: batches for the metadata log, written with group commit.

The queue is the only writer, so this class knows every offset before the log thread does: it
encodes an operation's records into batches at the offsets they will get (`prepare`, which can
still refuse: an atomic result too big for one batch), and after the queue has replayed them,
hands the bytes to the GroupCommitLog (`schedule`). Each write finishes when an fsync covers it;
`on_committed(high_watermark, appended)` then reports the appends below the new high watermark, in
offset order, each exactly once. A failed write is fatal for the process.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import structlog

from kraftpy.metalog.group_commit import GroupCommitLog
from kraftpy.metalog.snapshots import MAX_BATCH_BYTES
from protocol.errors import Errors, KafkaError
from protocol.framing import ApiMessageAndVersion
from protocol.record_batch import build_metadata_batch

log = structlog.get_logger(__name__)

# QuorumController.MAX_RECORDS_PER_BATCH: a non-atomic result is split into batches of this many.
MAX_RECORDS_PER_BATCH = 10_000


@dataclass(frozen=True)
class PreparedAppend:
    base_offset: int
    last_offset: int
    epoch: int
    timestamp_ms: int
    records: Sequence[ApiMessageAndVersion]
    batches: tuple[bytes, ...]

    @property
    def size(self) -> int:
        return sum(len(b) for b in self.batches)


class BatchWriter(Protocol):
    """Where prepared batches go: a GroupCommitLog (durable = committed for a lone log), or the
    Raft client (committed = replicated to a majority)."""

    async def append_raw_batches(self, data: bytes) -> tuple[int, int]: ...

    @property
    def durable_end_offset(self) -> int: ...


class MetadataLogSink:
    def __init__(
        self,
        log: BatchWriter | GroupCommitLog,
        leader_epoch: int,
        *,
        next_offset: int | None = None,
        on_committed: Callable[[int, PreparedAppend], None],
        on_failure: Callable[[BaseException], None],
        max_batch_bytes: int = MAX_BATCH_BYTES,
        clock_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000,
    ) -> None:
        self._log = log
        self.leader_epoch = leader_epoch
        self._on_committed = on_committed
        self._on_failure = on_failure
        self._max_batch_bytes = max_batch_bytes
        self._clock_ms = clock_ms
        # Only valid while nothing is in flight: the sink is created before the queue starts.
        self._next = next_offset if next_offset is not None else log.log.log_end_offset  # type: ignore[union-attr]
        self._tasks: set[asyncio.Task[None]] = set()
        self._unreported: deque[PreparedAppend] = deque()
        self._failed: BaseException | None = None

    @property
    def next_offset(self) -> int:
        return self._next

    def prepare(self, records: Sequence[Any], atomic: bool) -> PreparedAppend:
        """Encode `records` as the batches they will be written in, at the next offsets."""
        if self._failed is not None:
            raise KafkaError(Errors.NOT_CONTROLLER, f"the metadata log failed: {self._failed}")
        base = self._next
        ts = self._clock_ms()
        epoch = self.leader_epoch
        if atomic:
            data = build_metadata_batch(base, epoch, ts, records)
            if len(data) > self._max_batch_bytes:
                raise KafkaError(
                    Errors.RECORD_LIST_TOO_LARGE,
                    f"{len(records)} records must be written atomically but take {len(data)} bytes, "
                    f"more than one batch may hold ({self._max_batch_bytes})",
                )
            batches = [data]
        else:
            batches = []
            for lo in range(0, len(records), MAX_RECORDS_PER_BATCH):
                batches.extend(self._fit(records[lo : lo + MAX_RECORDS_PER_BATCH], base + lo, epoch, ts))
        return PreparedAppend(base, base + len(records) - 1, epoch, ts, records, tuple(batches))

    def _fit(self, chunk: Sequence[Any], base: int, epoch: int, ts: int) -> list[bytes]:
        data = build_metadata_batch(base, epoch, ts, chunk)
        if len(data) <= self._max_batch_bytes or len(chunk) == 1:
            return [data]
        half = len(chunk) // 2
        return self._fit(chunk[:half], base, epoch, ts) + self._fit(chunk[half:], base + half, epoch, ts)

    def schedule(self, prepared: PreparedAppend) -> int:
        """Write a prepared append (its offsets must still be next); returns its last offset."""
        if prepared.base_offset != self._next:
            raise RuntimeError(f"BUG: append prepared at {prepared.base_offset}, log is at {self._next}")
        self._next = prepared.last_offset + 1
        self._unreported.append(prepared)
        task = asyncio.get_running_loop().create_task(self._write(prepared), name="metadata-log-append")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return prepared.last_offset

    async def _write(self, prepared: PreparedAppend) -> None:
        try:
            first, last = await self._log.append_raw_batches(b"".join(prepared.batches))
            if (first, last) != (prepared.base_offset, prepared.last_offset):
                raise RuntimeError(
                    f"BUG: records prepared for {prepared.base_offset}..{prepared.last_offset} "
                    f"were written at {first}..{last}"
                )
        except asyncio.CancelledError:
            raise
        except BaseException as e:
            if self._failed is None:
                self._failed = e
                self._on_failure(e)
            return
        hw = self._log.durable_end_offset
        try:
            while self._unreported and self._unreported[0].last_offset < hw:
                self._on_committed(hw, self._unreported.popleft())
        except Exception as e:
            # A bug in what follows a commit leaves replies and the image behind the log: stop.
            if self._failed is None:
                self._failed = e
                self._on_failure(e)

    async def drain(self) -> None:
        """Wait for every scheduled write to be durable (or to have failed)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
