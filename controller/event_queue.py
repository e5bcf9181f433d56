"""The controller's single event queue: one asyncio task runs named events one at a time.

A write event runs an operation of the sans-IO core, which returns records plus a response without
touching state. The queue replays those records into the core at once (speculatively: the offsets
are assigned before the bytes reach the disk), hands them to the log for group commit, and parks the
response in an offset-ordered deferred queue until an fsync covers the last record. A write that
produced no records still waits for everything written before it, because its answer may rest on
that state. If a log write fails the process halts, so speculative state never needs undoing.

A read event needs committed state: it waits until everything already written is durable and then
runs, still on the queue, so no speculative record can slip in between.

Events may carry a deadline (a heartbeat is answered within half the heartbeat interval): an event
still queued when its deadline passes is not run, and its caller gets `EventTimeoutError`.
"""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Generic, NamedTuple, Protocol, TypeVar

import structlog

from controller.deferred import DeferredEventQueue
from kraftpy import heap

log = structlog.get_logger(__name__)

T = TypeVar("T")


class EventTimeoutError(Exception):
    """The event's deadline passed before it could run (Kafka: TimeoutException, REQUEST_TIMED_OUT)."""


class QueueClosedError(Exception):
    """The queue is shutting down and takes no more events (Kafka: NOT_CONTROLLER on a resigning controller)."""


class OperationResult(Protocol):
    """What a core operation returns (ControllerResult): records to append and the response."""

    @property
    def records(self) -> Sequence[Any]: ...

    @property
    def response(self) -> Any: ...

    @property
    def is_atomic(self) -> bool: ...


class RecordSink(Protocol):
    """The metadata log as the queue sees it.

    `next_offset` counts records accepted but not yet durable. `prepare` lays records out at the
    next offsets and may still refuse them (KafkaError, nothing changed); `schedule` writes what was
    prepared and returns its last offset. Durability comes back through the queue's `on_committed`.
    """

    @property
    def next_offset(self) -> int: ...

    def prepare(self, records: Sequence[Any], atomic: bool) -> Any: ...

    def schedule(self, prepared: Any) -> int: ...


class WriteContext(NamedTuple):
    """What an operation may depend on besides the core's state (a tuple: one per event)."""

    now_ms: int
    next_write_offset: int  # offset the first record of this operation will get (a new broker epoch)


class _Kind(Enum):
    WRITE = "write"
    READ = "read"


@dataclass(eq=False)
class _Event(Generic[T]):
    name: str
    kind: _Kind
    fn: Callable[..., Any]
    future: asyncio.Future[T]
    enqueued_ns: int = field(default_factory=time.monotonic_ns)
    deadline_ns: int | None = None
    on_timeout: Callable[[], None] | None = None


class ControllerEventQueue:
    def __init__(
        self,
        *,
        replay: Callable[[Any, int], None],
        sink: RecordSink,
        clock_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000,
        on_fatal: Callable[[str, BaseException], None],
        observe: Callable[[str, float, float], None] | None = None,
        on_records: Callable[[Sequence[Any]], None] | None = None,
    ) -> None:
        self._replay = replay
        self._sink = sink
        self._clock_ms = clock_ms
        self._on_fatal = on_fatal
        self._observe = observe
        self._on_records = on_records
        self._queue: asyncio.Queue[_Event[Any] | None] = asyncio.Queue()
        self._deferred = DeferredEventQueue()
        self._task: asyncio.Task[None] | None = None
        self._closed = False
        self._commit_waiters: list[tuple[int, asyncio.Future[None]]] = []
        self._last_appended = -1
        self._idle = True
        """No event is running (a read may be waiting for a commit while it runs)."""

    # ---- lifecycle ---------------------------------------------------------------------------------

    def start(self) -> None:
        self._last_appended = self._sink.next_offset - 1
        self._task = asyncio.get_running_loop().create_task(self._run(), name="controller-event-queue")
        self._task.add_done_callback(self._check_exit)

    def _check_exit(self, task: asyncio.Task[None]) -> None:
        # Without its queue the controller answers nothing: a crash of the loop itself is fatal.
        if not task.cancelled() and task.exception() is not None:
            exc = task.exception()
            assert exc is not None
            self._on_fatal("the event queue stopped", exc)

    async def close(self) -> None:
        """Refuse new events, run the ones already queued, and wait for their replies to be durable."""
        if self._closed:
            return
        self._closed = True
        self._queue.put_nowait(None)
        if self._task is not None:
            await self._task

    def abort(self, exc: BaseException) -> None:
        """The term ended (another controller leads now): refuse new events and fail every queued
        and waiting one at once, without waiting for records that may never commit."""
        self._closed = True
        if self._task is not None:
            self._task.cancel()
        while not self._queue.empty():
            ev = self._queue.get_nowait()
            if ev is not None and not ev.future.done():
                ev.future.set_exception(exc)
        self.fail(exc)

    def size(self) -> int:
        return self._queue.qsize()

    @property
    def high_watermark(self) -> int:
        return self._deferred.high_watermark

    # ---- submitting events -------------------------------------------------------------------------

    def _submit(
        self,
        name: str,
        kind: _Kind,
        fn: Callable[..., Any],
        deadline_s: float | None,
        on_timeout: Callable[[], None] | None,
    ) -> asyncio.Future[Any]:
        if self._closed:
            raise QueueClosedError(f"event queue closed; {name} not run")
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        ev = _Event(name=name, kind=kind, fn=fn, future=fut, on_timeout=on_timeout)
        if deadline_s is not None:
            ev.deadline_ns = ev.enqueued_ns + int(deadline_s * 1e9)
        self._queue.put_nowait(ev)
        return fut

    async def write(
        self,
        name: str,
        op: Callable[[WriteContext], OperationResult],
        *,
        deadline_s: float | None = None,
        on_timeout: Callable[[], None] | None = None,
    ) -> Any:
        """Run `op` on the queue; returns its response once its records are durable."""
        if not (self._idle and self._task is not None and not self._closed and self._queue.empty()):
            return await self._submit(name, _Kind.WRITE, op, deadline_s, on_timeout)
        # Nothing queued and nothing running: this event would be next anyway. Running it in the
        # caller's task saves two task switches, most of the queue's cost per heartbeat.
        start = time.monotonic_ns()
        try:
            offset, response = self._apply_paused(name, op)
        except _FatalError:
            # The queue is closed already; its task stops as it does on a queued fatal error, and
            # the caller gets no answer, as one whose event was queued gets none.
            self._task.cancel()
            never: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            return await never
        finally:
            if self._observe is not None:
                self._observe(name, 0.0, (time.monotonic_ns() - start) / 1e9)
        if offset < self._deferred.high_watermark:
            # Everything its answer rests on is durable already (a heartbeat that changed nothing,
            # the usual case): no future to wait on. No reply can be waiting then either, for every
            # waiter's offset is at most this one.
            return response
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._deferred.add(offset, fut, response)
        return await fut

    async def read(self, name: str, fn: Callable[[], T], *, deadline_s: float | None = None) -> T:
        """Run `fn` on the queue once every record written so far is durable."""
        return await self._submit(name, _Kind.READ, fn, deadline_s, None)

    # ---- commit notifications (from the log) ---------------------------------------------------------

    def on_committed(self, high_watermark: int) -> None:
        """The log is durable below `high_watermark`: release replies and read events waiting for it."""
        self._deferred.complete_up_to(high_watermark)
        if self._commit_waiters:
            still = []
            for offset, fut in self._commit_waiters:
                if offset < high_watermark:
                    if not fut.done():
                        fut.set_result(None)
                else:
                    still.append((offset, fut))
            self._commit_waiters = still

    def fail(self, exc: BaseException) -> None:
        """The log cannot commit any more: every waiting reply fails."""
        self._deferred.fail_all(exc)
        for _, fut in self._commit_waiters:
            if not fut.done():
                fut.set_exception(exc)
        self._commit_waiters = []

    async def _wait_committed(self, offset: int) -> None:
        if offset < self._deferred.high_watermark:
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._commit_waiters.append((offset, fut))
        await fut

    # ---- the loop ------------------------------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            ev = await self._queue.get()
            if ev is None:
                break
            start = time.monotonic_ns()
            if ev.deadline_ns is not None and start > ev.deadline_ns:
                self._expire(ev)
                continue
            if ev.future.cancelled():
                continue
            if ev.kind is _Kind.WRITE:
                self._idle = False
                try:
                    if not self._run_event_now(ev, start):
                        return
                finally:
                    self._idle = True
                continue
            self._idle = False
            try:
                await self._wait_committed(self._last_appended)
                _settle(ev.future, ev.fn())
            except Exception as e:
                if not ev.future.done():
                    ev.future.set_exception(e)
            finally:
                self._idle = True
                self._observed(ev, start)
        # Drain: every reply already promised waits for the records it depends on.
        await self._wait_committed(self._last_appended)

    def _run_event_now(self, ev: _Event[Any], start: int) -> bool:
        """Run a write event; False when it failed fatally (the queue must stop)."""
        try:
            offset, response = self._apply_paused(ev.name, ev.fn)
            self._deferred.add(offset, ev.future, response)
        except _FatalError:
            return False
        except Exception as e:
            # The core raises KafkaError for refusals; anything else is the caller's error too,
            # since no state changed before the core returned.
            if not ev.future.done():
                ev.future.set_exception(e)
        finally:
            self._observed(ev, start)
        return True

    def _observed(self, ev: _Event[Any], start: int) -> None:
        if self._observe is not None:
            end = time.monotonic_ns()
            self._observe(ev.name, (start - ev.enqueued_ns) / 1e9, (end - start) / 1e9)

    def _expire(self, ev: _Event[Any]) -> None:
        if ev.on_timeout is not None:
            try:
                ev.on_timeout()
            except Exception:
                log.exception("timeout handler failed", event=ev.name)
        if not ev.future.done():
            ev.future.set_exception(EventTimeoutError(f"{ev.name} waited past its deadline in the queue"))

    def _apply_paused(self, name: str, op: Callable[[WriteContext], OperationResult]) -> tuple[int, Any]:
        """`_apply` with the cyclic collector paused; a fatal error closes the queue and is reported
        before it is raised."""
        # An operation, its encoding and its replay allocate one or more objects per record and
        # free none of them before the end; a dir failure makes 100,000 records. Cyclic collections
        # meanwhile would walk the whole partition state several times over for nothing. Spelled
        # out rather than collector_paused(): every heartbeat passes here.
        enabled = gc.isenabled()
        if enabled:
            gc.disable()
        try:
            return self._apply(op)
        except _FatalError as e:
            # Inline or queued, the queue takes no more events: later writes are refused, not left
            # waiting.
            self._closed = True
            try:
                self._on_fatal(f"{name}: {e.reason}", e.__cause__ or e)
            except Exception:
                # Even when the report itself fails, the caller must see the fatal error and stop
                # the queue: the state may be half-replayed.
                log.exception("reporting a fatal error failed", operation=name)
            raise
        finally:
            if enabled:
                gc.enable()

    def _apply(self, op: Callable[[WriteContext], OperationResult]) -> tuple[int, Any]:
        """Run a write operation and append its records: (the offset its reply waits for, the reply)."""
        base = self._sink.next_offset
        result = op(_new_context(WriteContext, (self._clock_ms(), base)))
        records = result.records
        if records:
            records = list(records)
            # Refusals (a batch too large to be atomic) reach the caller before anything changed.
            prepared = self._sink.prepare(records, result.is_atomic)
            replay = self._replay
            offset = base
            try:
                # A dir failure replays 100,000 records here: nothing per record but the call.
                for record in records:
                    replay(record, offset)
                    offset += 1
            except Exception as e:
                raise _FatalError(f"replaying its own record failed: {e!r}") from e
            try:
                last = self._sink.schedule(prepared)
            except Exception as e:
                raise _FatalError(f"the metadata log refused {len(records)} records: {e!r}") from e
            if last != base + len(records) - 1:
                raise _FatalError(
                    f"BUG: records written at {last - len(records) + 1}..{last}, expected {base}"
                )
            self._last_appended = last
            heap.after_load(heap.lasting(records))
            if self._on_records is not None:
                self._on_records(records)
        return self._last_appended, result.response


_new_context = tuple.__new__
"""Builds a WriteContext without the NamedTuple's Python-level constructor (one per event)."""


class _FatalError(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _settle(fut: asyncio.Future[Any], value: Any) -> None:
    if not fut.done():
        fut.set_result(value)
