"""The controller's Raft client: the sans-IO `RaftCore` wired to the metadata log and to its peers.

One driver task feeds the core. Inputs (ticks, peers' messages, the leader's appends, snapshots)
queue up while a step is on the metadata log's thread; the next step takes all of them at once, so
one fsync covers them (group commit). A step persists its `Ready` before it returns, and only then
does the driver send messages and hand committed batches to the controller: a vote or an epoch
change is on disk before anyone hears of it, and nothing uncommitted reaches the state machine.

The controller learns three things from this client (`RaftListener`): committed batches of other
leaders to replay; that this node now leads, once everything before its epoch is applied (Kafka's
maybeFireLeaderChange), so it can claim; and that it stopped leading, so it reverts to the committed
state. Requests from peers and brokers come in over HTTP: `handle(message)` steps the core and
returns the answer it produced. Fetches park at the leader until there is something new (long poll);
brokers, which are observers, get committed batches only.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import structlog

from controller.raft_fetch import LogState, OffsetAndEpoch, decide_fetch_snapshot
from controller.raft_log import LogView as FileView
from controller.raft_log import read_snapshot_chunk, read_view, write_snapshot
from controller.raft_store import RaftLogStore, entries_of
from kraftpy.raft.config import QuorumConfig
from kraftpy.raft.core import RaftCore
from kraftpy.raft.messages import (
    Entry,
    Envelope,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    Message,
    Request,
    Response,
    VoteRequest,
)
from kraftpy.raft.ready import Ready
from kraftpy.raft.state import Role
from protocol.errors import Errors, KafkaError
from protocol.record_batch import read_batch_header

if TYPE_CHECKING:
    from kraftpy.metalog.files import SnapshotId
    from kraftpy.metalog.log import MetadataLog

log = structlog.get_logger(__name__)

T = TypeVar("T")

TICK_INTERVAL_S = 0.01
# How long the leader parks a Fetch with nothing to send (Kafka's client asks for up to 500 ms).
FETCH_MAX_WAIT_MS = 500


class NotLeaderError(KafkaError):
    """An append of a term that ended: the records may or may not survive under the next leader."""

    def __init__(self, message: str) -> None:
        super().__init__(Errors.NOT_CONTROLLER, message)


class RaftListener(Protocol):
    """What the controller does with what the quorum decides (Kafka's RaftClient.Listener)."""

    async def handle_commit(self, entries: Sequence[Entry]) -> None: ...

    async def handle_snapshot(self, snapshot_id: SnapshotId) -> None: ...

    async def handle_claim(self, epoch: int) -> None: ...

    async def handle_renounce(self, applied_offset: int) -> None: ...


class PeerTransport(Protocol):
    """Sends a core request to a peer and returns the core response (None when nothing came back)."""

    async def send(self, destination: int, message: Request) -> Response | None: ...

    async def fetch_snapshot(
        self, destination: int, request: FetchSnapshotRequest
    ) -> FetchSnapshotResponse | None: ...

    async def close(self) -> None: ...


@dataclass
class ReplicaProgress:
    """What the leader knows of one replica (DescribeQuorum's ReplicaState)."""

    log_end_offset: int = -1
    last_fetch_ms: int = -1
    last_caught_up_ms: int = -1


@dataclass(frozen=True, slots=True)
class _CoreAfter:
    """The core as one step left it. A batch of steps runs before any is dispatched, so the dispatch
    of a step must judge leadership by this, not by the core, which is already past the later steps."""

    role: Role
    epoch: int
    leader_id: int
    applied: int
    epoch_start_offset: int


@dataclass(eq=False)
class _Input:
    call: Callable[[RaftCore, int], Ready]
    future: asyncio.Future[Any] | None = None
    # Picks, from the step's messages, the answer to an incoming request (it is returned, not sent).
    reply_to: tuple[int, type] | None = None
    append_last: int = -1  # an append: its future resolves once this offset is committed
    ready: Ready | None = field(default=None, repr=False)
    after: _CoreAfter | None = field(default=None, repr=False)


class RaftClient:
    """`await start()`, then inputs; `begin_shutdown()`, `await resign()`, `await close()`."""

    def __init__(
        self,
        mlog: MetadataLog,
        log_thread: ThreadPoolExecutor,
        *,
        config: QuorumConfig,
        node_id: int,
        listener: RaftListener,
        transport: PeerTransport,
        on_failure: Callable[[BaseException], None],
        append_linger_ms: int = 0,
        clock_ms: Callable[[], int] = lambda: time.monotonic_ns() // 1_000_000,
        wall_clock_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000,
    ) -> None:
        self.config = config
        self.node_id = node_id
        self.cluster_id = config.cluster_id
        self._log_thread = log_thread
        self._store = RaftLogStore(mlog, config.voters)
        self._listener = listener
        self._transport = transport
        self._on_failure = on_failure
        self._clock_ms = clock_ms
        self._wall_clock_ms = wall_clock_ms
        self._core: RaftCore | None = None
        self._inputs: asyncio.Queue[_Input] = asyncio.Queue()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._driver: asyncio.Task[None] | None = None
        self._ticker: asyncio.Task[None] | None = None
        # Fetches with nothing to send wait here; an append or a high watermark move wakes them all.
        self._parked: set[asyncio.Future[None]] = set()
        self._tick_pending = False
        # When the core's next timer is due (RaftCore.next_tick_ms), as the last step left it.
        self._tick_due_ms = 0
        self._linger_s = append_linger_ms / 1000
        self._lingering: list[_Input] = []
        self._appends: list[_Input] = []  # appends of this term not yet committed, in offset order
        self._claimed_epoch = -1
        self._shutting_down = False
        self._failed: BaseException | None = None
        self._file_view = FileView()
        self.replicas: dict[int, ReplicaProgress] = {}
        # Figures for metrics, health and DescribeQuorum, read on the loop.
        self.role = Role.UNATTACHED
        self.leader_id = -1
        self.leader_epoch = 0
        self.high_watermark = 0
        self.log_end_offset = 0
        self.log_start_offset = 0
        self.applied_offset = 0
        self.elections_won = 0
        self.last_election_ms: float = 0.0
        self._election_started: int | None = None
        self._last_applied_timestamp_ms = -1

    # ---- lifecycle -----------------------------------------------------------------------------

    async def start(self) -> None:
        store = self._store

        def make_core() -> RaftCore:
            return RaftCore(
                self.config,
                self.node_id,
                store.quorum_state(),
                store.view(),
                store,
                random.Random(),
                self._clock_ms(),
                leader_change=lambda offset, epoch, granting: store.leader_change(
                    offset, epoch, self.node_id, granting
                ),
            )

        self._core = await self._on_log_thread(make_core)
        self._file_view = await self._on_log_thread(read_view, store.log)
        self._publish_figures(self._core)
        loop = asyncio.get_running_loop()
        self._driver = loop.create_task(self._drive(), name="raft-driver")
        self._driver.add_done_callback(self._driver_stopped)
        self._ticker = loop.create_task(self._tick_forever(), name="raft-ticker")

    def begin_shutdown(self) -> None:
        """Fetches answer at once from now on, and the leader starts no new term work."""
        self._shutting_down = True
        self._wake_parked()

    async def resign(self, timeout_s: float = 1.0) -> None:
        """Graceful: a leader tells the voters (EndQuorumEpoch) so the most caught up runs at once."""
        if self._core is None or self._driver is None or self._driver.done():
            return
        if self.role is Role.LEADER:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._submit(lambda core, now: core.resign(now)), timeout_s)
                # Give the EndQuorumEpoch requests a moment to leave.
                await asyncio.sleep(0.05)

    async def close(self) -> None:
        for task in (self._ticker, self._driver):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._fail_appends(NotLeaderError("the controller is shutting down"))
        for item in self._lingering:
            if item.future is not None:
                _fail(item.future, NotLeaderError("the controller is shutting down"))
        self._lingering = []
        await self._transport.close()

    def _driver_stopped(self, task: asyncio.Task[None]) -> None:
        if not task.cancelled() and task.exception() is not None:
            exc = task.exception()
            assert exc is not None
            self._failed = exc
            self._on_failure(exc)

    # ---- inputs --------------------------------------------------------------------------------

    def _submit(
        self, call: Callable[[RaftCore, int], Ready], *, reply_to: tuple[int, type] | None = None
    ) -> asyncio.Future[Any]:
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._inputs.put_nowait(_Input(call, fut, reply_to))
        return fut

    def step(self, source: int, message: Message) -> None:
        self._inputs.put_nowait(
            _Input(lambda core, now: core.step(Envelope(source, self.node_id, message), now))
        )

    async def handle(self, source: int, message: Request, reply_type: type) -> Any:
        """An incoming request: step the core and return the answer it produced for `source`."""
        if self._failed is not None:
            raise KafkaError(Errors.UNKNOWN_SERVER_ERROR, "the Raft client failed")
        return await self._submit(
            lambda core, now: core.step(Envelope(source, self.node_id, message), now),
            reply_to=(source, reply_type),
        )

    def append(self, batches: Sequence[bytes], base_offset: int, last_offset: int) -> asyncio.Future[Any]:
        """Append batches as the leader of the claimed term; resolves once they are committed."""
        counts = []
        for data in batches:
            (entry,) = entries_of(data)
            counts.append(entry.count)
        epoch = self._claimed_epoch

        def call(core: RaftCore, now: int) -> Ready:
            if core.role is not Role.LEADER or core.epoch != epoch:
                raise NotLeaderError(f"no longer the leader of epoch {epoch}")
            if core.view.end_offset != base_offset:
                raise RuntimeError(
                    f"BUG: records prepared for offset {base_offset}, the log ends at {core.view.end_offset}"
                )
            return core.append(list(batches), now, counts=counts)

        loop = asyncio.get_running_loop()
        fut: asyncio.Future[Any] = loop.create_future()
        item = _Input(call, fut, append_last=last_offset)
        if self._linger_s <= 0:
            self._inputs.put_nowait(item)
            return fut
        # controller.quorum.append.linger.ms: appends gather for this long after the first, then go
        # to the core together (one step, one fsync), as Kafka's BatchAccumulator drains them.
        self._lingering.append(item)
        if len(self._lingering) == 1:
            loop.call_later(self._linger_s, self._drain_lingering)
        return fut

    def _drain_lingering(self) -> None:
        lingering, self._lingering = self._lingering, []
        for item in lingering:
            self._inputs.put_nowait(item)

    def create_snapshot(self, end_offset: int) -> None:
        """A snapshot file for `end_offset` was written: the core's log now starts there."""

        def call(core: RaftCore, now: int) -> Ready:
            if end_offset <= core.view.log_start or end_offset > core.applied:
                return Ready()
            return core.create_snapshot(end_offset, b"", now)

        self._inputs.put_nowait(_Input(call))

    async def _tick_forever(self) -> None:
        while True:
            await asyncio.sleep(TICK_INTERVAL_S)
            # A tick before the core's next timer would change nothing, and costs a trip to the log
            # thread: a lone voter leading, or a leader whose followers fetch, skips most of them.
            if not self._tick_pending and self._clock_ms() >= self._tick_due_ms:
                # One tick waits at a time, however busy the queue: timers must fire under load too.
                self._tick_pending = True
                self._inputs.put_nowait(_Input(self._tick))

    def _tick(self, core: RaftCore, now: int) -> Ready:
        self._tick_pending = False
        return core.tick(now)

    # ---- the driver ----------------------------------------------------------------------------

    async def _on_log_thread(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(
            self._log_thread, functools.partial(fn, *args)
        )

    def _run_inputs(self, inputs: list[_Input]) -> list[_Input]:
        """On the log thread: step the core once per input and persist each Ready; one fsync for all
        the log writes (quorum-state is written, and synced, on its own)."""
        core = self._core
        assert core is not None
        for item in inputs:
            try:
                ready = item.call(core, self._clock_ms())
            except KafkaError as e:
                item.ready = None
                if item.future is not None:
                    item.future.get_loop().call_soon_threadsafe(_fail, item.future, e)
                continue
            self._store.persist(ready)
            item.ready = ready
            item.after = _CoreAfter(
                core.role, core.epoch, core.leader_id, core.applied, core.epoch_start_offset
            )
        self._store.flush()
        self._publish_figures(core)
        self._tick_due_ms = core.next_tick_ms()
        return inputs

    async def _drive(self) -> None:
        while True:
            inputs = [await self._inputs.get()]
            while not self._inputs.empty():
                inputs.append(self._inputs.get_nowait())
            done = await self._on_log_thread(self._run_inputs, inputs)
            for item in done:
                if item.ready is not None:
                    await self._dispatch(item)

    def _publish_figures(self, core: RaftCore) -> None:
        # Plain attribute writes: the loop reads them for metrics without a hop.
        self.role = core.role
        self.leader_id = core.leader_id
        self.leader_epoch = core.epoch
        self.high_watermark = core.high_watermark
        self.log_end_offset = core.view.end_offset
        self.log_start_offset = core.view.log_start
        self.applied_offset = core.applied

    async def _dispatch(self, item: _Input) -> None:
        ready = item.ready
        assert ready is not None
        messages = ready.messages
        if item.reply_to is not None and item.future is not None:
            source, reply_type = item.reply_to
            answer = next(
                (e for e in messages if e.destination == source and isinstance(e.message, reply_type)), None
            )
            if answer is not None:
                messages = [e for e in messages if e is not answer]
            _settle(item.future, answer.message if answer is not None else None)
        for envelope in messages:
            self._spawn(self._send(envelope))
        if item.append_last >= 0 and item.future is not None:
            self._appends.append(item)
        changed = bool(ready.appends) or ready.truncate_to is not None or ready.install_snapshot is not None
        if ready.local_snapshot is not None or ready.install_snapshot is not None or ready.clean_log:
            self._file_view = await self._on_log_thread(read_view, self._store.log)
        if ready.apply_snapshot is not None:
            sid = ready.apply_snapshot.snapshot_id
            from kraftpy.metalog.files import SnapshotId

            await self._listener.handle_snapshot(SnapshotId(sid.EndOffset, sid.Epoch))
        if ready.committed:
            self._last_applied_timestamp_ms = read_batch_header(ready.committed[-1].data).max_timestamp
            if self._claimed_epoch >= 0:
                self._release_appends(ready.high_watermark)
            else:
                await self._listener.handle_commit(ready.committed)
            changed = True
        assert item.after is not None
        await self._check_leadership(item.after)
        if changed:
            self._wake_parked()

    async def _check_leadership(self, core: _CoreAfter) -> None:
        leading = core.role is Role.LEADER
        if self._claimed_epoch >= 0 and (not leading or core.epoch != self._claimed_epoch):
            epoch, self._claimed_epoch = self._claimed_epoch, -1
            self._fail_appends(NotLeaderError(f"lost the leadership of epoch {epoch}"))
            log.info(
                "resigned as the active controller",
                leader_epoch=epoch,
                now_following=core.leader_id,
                role=core.role.value,
                epoch=core.epoch,
            )
            await self._listener.handle_renounce(core.applied)
        if core.role is Role.CANDIDATE and self._election_started is None:
            self._election_started = self._clock_ms()
        if (
            leading
            and self._claimed_epoch < 0
            and not self._shutting_down
            and core.applied > core.epoch_start_offset
        ):
            self._claimed_epoch = core.epoch
            self.elections_won += 1
            if self._election_started is not None:
                self.last_election_ms = float(self._clock_ms() - self._election_started)
            self._election_started = None
            self.replicas = {v: ReplicaProgress() for v in self.config.voters if v != self.node_id}
            log.info("became the active controller", leader_epoch=core.epoch, node_id=self.node_id)
            await self._listener.handle_claim(core.epoch)
        if core.role in (Role.FOLLOWER, Role.LEADER):
            self._election_started = None

    def _release_appends(self, high_watermark: int) -> None:
        while self._appends and self._appends[0].append_last < high_watermark:
            item = self._appends.pop(0)
            assert item.future is not None
            _settle(item.future, high_watermark)

    def _fail_appends(self, exc: BaseException) -> None:
        appends, self._appends = self._appends, []
        for item in appends:
            if item.future is not None:
                _fail(item.future, exc)

    def applied_lag_ms(self) -> float:
        """LastAppliedRecordLagMs: how old the last applied batch is."""
        if self._last_applied_timestamp_ms < 0:
            return 0.0
        return float(max(0, self._wall_clock_ms() - self._last_applied_timestamp_ms))

    @property
    def claimed_epoch(self) -> int:
        """The epoch this node serves as the active controller, or -1."""
        return self._claimed_epoch

    @property
    def next_offset(self) -> int:
        return self.log_end_offset

    # ---- sending -------------------------------------------------------------------------------

    def _spawn(self, coro: Awaitable[None]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _send(self, envelope: Envelope) -> None:
        message = envelope.message
        try:
            if isinstance(message, FetchSnapshotRequest):
                answer: Response | None = await self._transport.fetch_snapshot(envelope.destination, message)
            else:
                answer = await self._transport.send(envelope.destination, message)  # type: ignore[arg-type]
        except Exception as e:
            log.debug("raft request failed", destination=envelope.destination, error=repr(e))
            answer = None
        if self._inputs_closed:
            return
        if answer is not None:
            self.step(envelope.destination, answer)
        elif isinstance(message, VoteRequest):
            voter = envelope.destination
            self._inputs.put_nowait(_Input(lambda core, now: core.unreachable(voter, now)))

    @property
    def _inputs_closed(self) -> bool:
        return self._driver is None or self._driver.done()

    # ---- serving Fetch and FetchSnapshot -------------------------------------------------------

    async def handle_fetch(self, request: FetchRequest, max_wait_ms: int) -> tuple[FetchResponse, bool]:
        """(answer, observer); parks while there is nothing to send. An observer gets committed
        batches only: it applies what it fetches."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(0, min(max_wait_ms, FETCH_MAX_WAIT_MS)) / 1000
        observer = request.ReplicaId not in self.config.voters
        while True:
            waiter = self._changed_waiter()
            answer: FetchResponse | None = await self.handle(request.ReplicaId, request, FetchResponse)
            if answer is None:
                raise KafkaError(Errors.UNKNOWN_SERVER_ERROR, "the Raft core gave no answer to a Fetch")
            if observer:
                answer = _committed_only(answer)
            if answer.ErrorCode == Errors.NONE:
                self._track(request, answer)
            remaining = deadline - loop.time()
            if (
                answer.ErrorCode != Errors.NONE
                or answer.Records
                or answer.DivergingEpoch is not None
                or answer.SnapshotId is not None
                or remaining <= 0
                or self._shutting_down
            ):
                waiter.cancel()
                return answer, observer
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(waiter, remaining)

    def _changed_waiter(self) -> asyncio.Future[None]:
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._parked.add(fut)
        # A fetch that answers or times out first cancels its waiter: it leaves now, not at the next commit.
        fut.add_done_callback(self._parked.discard)
        return fut

    def _wake_parked(self) -> None:
        parked, self._parked = self._parked, set()
        for fut in parked:
            if not fut.done():
                fut.set_result(None)

    def _track(self, request: FetchRequest, answer: FetchResponse) -> None:
        now = self._wall_clock_ms()
        progress = self.replicas.setdefault(request.ReplicaId, ReplicaProgress())
        progress.log_end_offset = request.FetchOffset
        progress.last_fetch_ms = now
        if request.FetchOffset >= self.log_end_offset or request.FetchOffset >= answer.HighWatermark:
            progress.last_caught_up_ms = now

    def log_state(self) -> LogState:
        return LogState(
            cluster_id=self.cluster_id,
            leader_id=self.leader_id,
            leader_epoch=self.leader_epoch,
            log_start_offset=self.log_start_offset,
            log_end_offset=self.log_end_offset,
            high_watermark=self.high_watermark,
            epochs=self._file_view.epochs,
            snapshots=self._file_view.snapshots,
            is_leader=self.role is Role.LEADER,
            shutting_down=self._shutting_down,
        )

    async def read_snapshot_chunk(
        self,
        cluster_id: str | None,
        current_leader_epoch: int,
        snapshot: OffsetAndEpoch,
        position: int,
        max_bytes: int,
    ) -> tuple[Errors, int, bytes]:
        """(error, snapshot size, bytes from `position`) for a FetchSnapshot, read from the file."""
        chunk = decide_fetch_snapshot(
            self.log_state(),
            self._file_view.snapshot_sizes,
            cluster_id=cluster_id,
            current_leader_epoch=current_leader_epoch,
            snapshot_id=snapshot,
            position=position,
            max_bytes=max_bytes,
        )
        if chunk.error is not Errors.NONE:
            return chunk.error, 0, b""
        data = await self._on_log_thread(
            read_snapshot_chunk, self._store.log, snapshot, chunk.position, chunk.length
        )
        if data is None:
            return Errors.SNAPSHOT_NOT_FOUND, 0, b""
        return Errors.NONE, chunk.size, data

    # ---- snapshots written by this controller --------------------------------------------------

    async def write_snapshot(self, records: list[Any], end_offset: int, timestamp_ms: int) -> SnapshotId:
        sid = await self._on_log_thread(write_snapshot, self._store.log, records, end_offset, timestamp_ms)
        self._file_view = await self._on_log_thread(read_view, self._store.log)
        self.create_snapshot(sid.offset)
        return sid

    @property
    def latest_snapshot_end_offset(self) -> int:
        snapshots = self._file_view.snapshots
        return snapshots[-1].offset if snapshots else -1


def _committed_only(answer: FetchResponse) -> FetchResponse:
    """Trim an answer's batches to those wholly below the high watermark."""
    if not answer.Records:
        return answer
    kept = [e for e in answer.Records if e.end <= answer.HighWatermark]
    if len(kept) == len(answer.Records):
        return answer
    from dataclasses import replace

    return replace(answer, Records=tuple(kept))


def _settle(fut: asyncio.Future[Any], value: Any) -> None:
    if not fut.done():
        fut.set_result(value)


def _fail(fut: asyncio.Future[Any], exc: BaseException) -> None:
    if not fut.done():
        fut.set_exception(exc)
