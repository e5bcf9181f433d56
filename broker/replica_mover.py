"""ReplicaMover: moves replicas between this broker's log dirs (Kafka's ReplicaAlterLogDirsManager).

Each move (AlterReplicaLogDirs, or a copy found half done at startup) is one task that carries out
the `broker.core.replica_move` table:

1. a `-future` log is created in the destination dir (on that dir's executor) and filled round by
   round from the current log (read on the source dir's executor, written on the destination's), at
   most `replica.alter.log.dirs.io.max.bytes.per.second`, while the partition keeps taking writes;
2. once the future log has caught up, AssignReplicasToDirs names the destination to the controller;
3. once the controller has accepted it and the future log is caught up again, appends to the
   partition are paused (`pause_writes`, the data plane's gate), the last batches are copied, the
   future log gets the current one's leader-epoch history and log start offset (field bug 17),
   is renamed to the partition's name and served from then on; the source log is renamed
   `-delete` and deleted once appends run again.

A destination dir that fails cancels the move (the future log is dropped with its dir, and an
assignment already sent is reverted to the source: field bugs 15 and 16). A source dir that fails
takes the replica offline with it; the future log is left for the next start's decision table.

At startup the log manager hands over a future log whose copy was interrupted (`resume`), and one
the metadata already names but whose current log may hold more (`catch_up_offline`: a broker killed
after the controller accepted the move but before the swap; promoting that future as it is would
lose what was acknowledged since).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import structlog

from broker import partition_dirs
from broker.core.assignments import AssignmentsManager
from broker.core.replica_move import (
    Action,
    IoThrottle,
    LogEnds,
    MoveEvent,
    MoveState,
    Reconcile,
    ReplicaMove,
    reconcile,
)
from broker.hosted_log import HostedLog
from broker.storage import LogConfig, LogDirOfflineError, PartitionLog
from broker.storage.dir_names import MAX_NAME_LENGTH, TopicPartition, future_dir_name, log_dir_name
from broker.storage.errors import LogDirResourceError
from broker.storage.log_dir import LogDir
from kraftpy.image import MetadataImage, TopicIdPartition
from kraftpy.log.partition_metadata import write_partition_metadata
from kraftpy.storage.atomic import fsync_dir
from protocol.errors import Errors, KafkaError
from protocol.rpc.alter_replica_log_dirs import AlterReplicaLogDirsRequest, AlterReplicaLogDirsResponse
from protocol.uuid import Uuid

log = structlog.get_logger("broker.replica_mover")

PartitionKey = tuple[Uuid, int]
PauseWrites = Callable[[TopicIdPartition], AbstractAsyncContextManager[None]]

IDLE_POLL_S = 0.05
"""How often a caught-up move looks for new batches in the current log."""
SWAP_ROUNDS_MAX = 1000


@contextlib.asynccontextmanager
async def _no_pause(_tp: TopicIdPartition) -> AsyncIterator[None]:
    yield


@dataclass(eq=False)
class ActiveMove:
    core: ReplicaMove
    dest: LogDir
    future_name: str
    future: PartitionLog | None = None
    task: asyncio.Task[None] | None = None
    wake: asyncio.Event | None = None

    @property
    def key(self) -> PartitionKey:
        return (self.core.tp.topic_id, self.core.tp.partition)


class ReplicaMover:
    def __init__(
        self,
        log_manager: LogManagerView,
        assignments: AssignmentsManager,
        log_config: LogConfig,
        *,
        now_ms: Callable[[], int],
        bytes_per_second: int,
        round_bytes: int = 1 << 20,
        on_change: Callable[[], None] = lambda: None,
    ) -> None:
        self.log_manager = log_manager
        self.assignments = assignments
        self.log_config = log_config
        self.now_ms = now_ms
        self.throttle = IoThrottle(bytes_per_second)
        # A throttled copy moves at most a second's worth per round, so the rate holds from the start.
        rounds = round_bytes if self.throttle.unlimited else min(round_bytes, bytes_per_second)
        self.round_bytes = max(rounds, 1024)
        self.on_change = on_change
        self.pause_writes: PauseWrites = _no_pause
        self.moves: dict[PartitionKey, ActiveMove] = {}
        self.failed: set[PartitionKey] = set()
        """Moves that ended on an error other than a dir failure (FailedPartitionsCount)."""
        self.completed = 0

    # ---- views ---------------------------------------------------------------------------------

    def max_lag(self) -> int:
        return max((m.core.lag for m in self.moves.values() if m.core.live), default=0)

    def future_replicas(self, dir_id: Uuid) -> list[tuple[TopicIdPartition, int, int]]:
        """(partition, future log size in bytes, offsets behind the current log) of each move into `dir_id`."""
        out = []
        for m in self.moves.values():
            if m.dest.dir_id == dir_id and m.core.state not in (MoveState.DONE, MoveState.CANCELLED):
                size = m.future.size_bytes if m.future is not None else 0
                out.append((m.core.tp, size, m.core.lag))
        return out

    def moving(self, topic_id: Uuid, partition: int) -> ReplicaMove | None:
        m = self.moves.get((topic_id, partition))
        return m.core if m is not None else None

    # ---- AlterReplicaLogDirs -------------------------------------------------------------------

    async def alter_replica_log_dirs(
        self, req: AlterReplicaLogDirsRequest, version: int
    ) -> AlterReplicaLogDirsResponse:
        R = AlterReplicaLogDirsResponse
        results: dict[str, dict[int, Errors]] = {}
        for d in req.Dirs:
            for t in d.Topics:
                for p in t.Partitions:
                    results.setdefault(t.Name, {})[p] = await self.request_move(t.Name, p, d.Path)
        return R(
            Results=[
                R.AlterReplicaLogDirTopicResult(
                    TopicName=name,
                    Partitions=[
                        R.AlterReplicaLogDirPartitionResult(PartitionIndex=p, ErrorCode=int(code))
                        for p, code in sorted(parts.items())
                    ],
                )
                for name, parts in results.items()
            ]
        )

    async def request_move(self, topic: str, partition: int, path: str) -> Errors:
        """One partition of AlterReplicaLogDirs, with Kafka's error codes; nothing changes on an error."""
        if len(future_dir_name(TopicPartition(topic, partition))) > MAX_NAME_LENGTH:
            return Errors.INVALID_TOPIC_EXCEPTION
        dest = self.log_manager.dir_by_path(path)
        if dest is None:
            if not self.log_manager.is_configured(path):
                return Errors.LOG_DIR_NOT_FOUND
            return Errors.KAFKA_STORAGE_ERROR
        if not dest.online:
            return Errors.KAFKA_STORAGE_ERROR
        image = self.log_manager.image
        t = image.topics.get_topic(topic) if image is not None else None
        if t is None or partition not in t.partitions:
            return Errors.UNKNOWN_TOPIC_OR_PARTITION
        hl = self.log_manager.get_partition(t.id, partition)
        if hl is None or not hl.created.is_set():
            self.log_manager.prefer(topic, partition, dest.dir_id)
            return Errors.REPLICA_NOT_AVAILABLE
        if not hl.online or hl.log_dir is None:
            return Errors.KAFKA_STORAGE_ERROR
        key = (t.id, partition)
        running = self.moves.get(key)
        if running is not None and running.core.live and running.dest.dir_id == dest.dir_id:
            return Errors.NONE
        if running is not None and running.core.state is MoveState.SWAPPING:
            return Errors.NONE if running.dest.dir_id == dest.dir_id else Errors.REPLICA_NOT_AVAILABLE
        if running is not None:
            await self.cancel(key, "a move to another dir was asked for")
        if hl.log_dir.dir_id == dest.dir_id:
            return Errors.NONE
        tp = hl.tp
        self._start(
            ActiveMove(
                ReplicaMove(tp, hl.log_dir.dir_id, dest.dir_id),
                dest,
                future_dir_name(TopicPartition(tp.topic_name, tp.partition)),
            )
        )
        log.info(
            "replica move started",
            partition=str(tp),
            source=str(hl.log_dir.path),
            destination=str(dest.path),
        )
        return Errors.NONE

    # ---- startup -------------------------------------------------------------------------------

    def resume(self, tp: TopicIdPartition, source: Uuid, dest_id: Uuid, future_name: str) -> None:
        """A future log found at startup whose copy the metadata has not accepted yet: copy on."""
        dest = self.log_manager.log_dirs.get(dest_id)
        if dest is None or not dest.online:
            return
        log.info("replica move resumed", partition=str(tp), destination=str(dest.path), future=future_name)
        self._start(ActiveMove(ReplicaMove(tp, source, dest_id), dest, future_name), existing=True)

    async def catch_up_offline(
        self, tp: TopicIdPartition, source: LogDir, current_name: str, dest: LogDir, future_name: str
    ) -> bool:
        """Before a future log the metadata already names is promoted at startup, copy into it
        whatever the current log holds beyond it. False when that could not be done."""
        current = future = None
        try:
            current = await source.run(
                functools.partial(
                    PartitionLog.open,
                    source.path / current_name,
                    topic_id=tp.topic_id,
                    config=self.log_config,
                ),
                timeout=float("inf"),
            )
            future = await dest.run(
                functools.partial(
                    PartitionLog.open, dest.path / future_name, topic_id=tp.topic_id, config=self.log_config
                ),
                timeout=float("inf"),
            )
            ends = await dest.run(_ends, future)
            behind = None
            for _ in range(1_000_000):
                rec, data, cur = await source.run(_source_round, current, ends, self.round_bytes)
                if behind is None:
                    behind = cur.log_end - ends.log_end
                ends = await dest.run(_dest_round, future, rec, data)
                if ends.log_end == cur.log_end:
                    break
            history = await source.run(_epoch_history, current)
            await dest.run(_take_history, future, history)
            if behind:
                log.warning(
                    "future log was behind its current log at startup; caught up before promoting it",
                    partition=str(tp),
                    offsets=behind,
                )
            return True
        except (LogDirOfflineError, LogDirResourceError) as e:
            log.error("could not catch a future log up before promoting it", partition=str(tp), error=str(e))
            return False
        finally:
            for lg, ld in ((current, source), (future, dest)):
                if lg is not None:
                    with contextlib.suppress(Exception):
                        await ld.run(lg.close)

    # ---- cancelling ----------------------------------------------------------------------------

    async def cancel(self, key: PartitionKey, reason: str) -> None:
        m = self.moves.get(key)
        if m is None or not m.core.running:
            return
        action = m.core.handle(MoveEvent.CANCEL)
        if m.task is not None and m.task is not asyncio.current_task():
            m.task.cancel()
            await asyncio.gather(m.task, return_exceptions=True)
        await self._drop_future(m, action, reason)

    def on_dir_failure(self, dir_id: Uuid | None) -> None:
        """A dir failed: moves into it are cancelled, moves out of it stop (the replica is offline)."""
        for key, m in list(self.moves.items()):
            if not m.core.running:
                continue
            if m.dest.dir_id == dir_id:
                asyncio.get_running_loop().create_task(self.cancel(key, "destination log dir failed"))
            elif m.core.source == dir_id:
                if m.task is not None:
                    m.task.cancel()
                self._source_failed(m)

    def _source_failed(self, m: ActiveMove) -> None:
        tp = m.core.tp
        if m.core.handle(MoveEvent.SOURCE_FAILED) is Action.REVERT_AND_STOP:
            self._revert(m)
        self._close_future(m)
        self.log_manager.future_dropped(tp)
        log.warning("replica move stopped: its source log dir failed", partition=str(tp))
        self._finish(m)

    def _revert(self, m: ActiveMove) -> None:
        tp = m.core.tp
        log.warning("Reverting reassignment for canceled future replica", partition=str(tp))
        self.assignments.on_assignment(
            self.now_ms(),
            tp.topic_id,
            tp.partition,
            m.core.source,
            "Reverting reassignment for canceled future replica",
        )
        self.on_change()

    def on_removed(self, keys: set[PartitionKey]) -> None:
        """These replicas are no longer hosted here: their moves end and their future logs go
        (no assignment is reverted: the replica is not this broker's any more)."""
        for key in keys & set(self.moves):
            m = self.moves[key]
            if m.core.running:
                m.core.handle(MoveEvent.CANCEL)
                if m.task is not None:
                    m.task.cancel()
                asyncio.get_running_loop().create_task(
                    self._drop_future(m, Action.DELETE_FUTURE, "the replica is no longer hosted here")
                )

    async def stop(self) -> None:
        tasks = [m.task for m in self.moves.values() if m.task is not None]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for m in self.moves.values():
            if m.future is not None and m.dest.online:
                with contextlib.suppress(Exception):
                    await m.dest.run(m.future.close)
                m.future = None

    # ---- the copy ------------------------------------------------------------------------------

    def _start(self, m: ActiveMove, *, existing: bool = False) -> None:
        self.moves[m.key] = m
        self.failed.discard(m.key)
        m.wake = asyncio.Event()
        self.log_manager.future_started(m.core.tp, m.dest.dir_id)
        m.task = asyncio.get_running_loop().create_task(self._run(m, existing), name=f"move-{m.core.tp}")

    async def _run(self, m: ActiveMove, existing: bool) -> None:
        try:
            await self._open_future(m, existing)
            await self._copy(m)
        except asyncio.CancelledError:
            raise
        except LogDirResourceError as e:
            await self._give_up(m, e)  # out of descriptors: no dir failed, the move just stops
        except LogDirOfflineError as e:
            if m.core.running and not m.dest.online:
                await self._drop_future(m, m.core.handle(MoveEvent.CANCEL), f"destination failed: {e}")
            elif m.core.running:
                self._source_failed(m)
        except KafkaError as e:
            if e.code is Errors.KAFKA_STORAGE_ERROR and m.core.running:
                self._source_failed(m)  # the replica went offline (its dir failed) between two rounds
            elif m.core.running:
                await self._give_up(m, e)
        except Exception as e:
            await self._give_up(m, e)

    async def _give_up(self, m: ActiveMove, e: BaseException) -> None:
        log.error("replica move failed", partition=str(m.core.tp), error=repr(e), exc_info=e)
        self.failed.add(m.key)
        if m.core.running:
            await self._drop_future(m, m.core.handle(MoveEvent.CANCEL), "the move failed")

    async def _open_future(self, m: ActiveMove, existing: bool) -> None:
        tp = m.core.tp
        hl = self._hosted(m)
        current = await hl.log()
        assert hl.log_dir is not None
        ends = await hl.log_dir.run(_ends, current)
        if not existing:
            await m.dest.run(_create_future_dir, m.dest.path, m.future_name, tp.topic_id)
        m.future = await m.dest.run(
            functools.partial(
                PartitionLog.open,
                m.dest.path / m.future_name,
                topic_id=tp.topic_id,
                config=self.log_config,
                log_start_offset=ends.log_start,
            ),
            timeout=float("inf"),
        )

    def _hosted(self, m: ActiveMove) -> HostedLog:
        hl = self.log_manager.get_partition(m.core.tp.topic_id, m.core.tp.partition)
        if hl is None or not hl.online or hl.log_dir is None:
            raise LogDirOfflineError(str(m.core.tp), "the replica is offline")
        if hl.log_dir.dir_id != m.core.source:
            raise RuntimeError(f"{m.core.tp} is no longer in the move's source dir")
        return hl

    async def _round(self, m: ActiveMove, max_bytes: int) -> tuple[LogEnds, int]:
        """Copy one round from the current log into the future one; (current ends, bytes copied)."""
        assert m.future is not None
        hl = self._hosted(m)
        current = await hl.log()
        src = hl.log_dir
        ends = LogEnds(m.future.log_start_offset, m.future.log_end_offset, m.future.latest_epoch)
        rec, data, cur = await src.run(_source_round, current, ends, max_bytes)
        after = await m.dest.run(_dest_round, m.future, rec, data)
        m.core.future_log_end = after.log_end
        m.core.current_log_end = cur.log_end
        m.core.bytes_copied += len(data)
        return cur, len(data)

    async def _copy(self, m: ActiveMove) -> None:
        loop = asyncio.get_running_loop()
        while m.core.live:
            _cur, copied = await self._round(m, self.round_bytes)
            if m.core.caught_up:
                action = m.core.handle(MoveEvent.CAUGHT_UP)
                if action is Action.ASSIGN_DESTINATION:
                    self._assign(m)
                elif action is Action.SWAP:
                    await self._swap(m)
                    return
            delay = self.throttle.delay_s(loop.time(), copied)
            if delay > 0:
                await asyncio.sleep(delay)
            elif m.core.caught_up:
                assert m.wake is not None
                m.wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(m.wake.wait(), IDLE_POLL_S)

    def _assign(self, m: ActiveMove) -> None:
        tp, dest = m.core.tp, m.core.destination

        def accepted() -> None:
            if self.moves.get(m.key) is m and m.core.handle(MoveEvent.ACCEPTED) is Action.NONE:
                log.info("controller accepted the replica's new dir", partition=str(tp))
                if m.wake is not None:
                    m.wake.set()

        self.assignments.on_assignment(
            self.now_ms(), tp.topic_id, tp.partition, dest, "Future replica promotion", on_success=accepted
        )
        self.on_change()

    async def _swap(self, m: ActiveMove) -> None:
        tp = m.core.tp
        started = time.monotonic()
        async with self.pause_writes(tp):
            hl = self._hosted(m)
            current = await hl.log()
            src: LogDir = hl.log_dir
            for _ in range(SWAP_ROUNDS_MAX):
                await self._round(m, 1 << 30)
                if m.core.caught_up:
                    break
            else:
                raise RuntimeError(f"{tp}: the future log did not catch up while appends were paused")
            assert m.future is not None
            history = await src.run(_epoch_history, current)
            final = m.dest.path / log_dir_name(TopicPartition(tp.topic_name, tp.partition))
            await m.dest.run(_promote_future, m.future, history, final)
            future, m.future = m.future, None
            self.log_manager.swap_in(tp, future, m.dest)
            m.core.handle(MoveEvent.SWAPPED)
        paused_ms = (time.monotonic() - started) * 1000
        log.info(
            "replica moved",
            partition=str(tp),
            source=str(src.path),
            destination=str(m.dest.path),
            bytes=m.core.bytes_copied,
            appends_paused_ms=round(paused_ms, 1),
        )
        self.completed += 1
        self._finish(m)
        with contextlib.suppress(LogDirOfflineError, LogDirResourceError):
            await src.run(_retire_source, current)

    async def _drop_future(self, m: ActiveMove, action: Action, reason: str) -> None:
        tp = m.core.tp
        if action is Action.REVERT_AND_DELETE_FUTURE:
            self._revert(m)
        future, m.future = m.future, None
        if m.dest.online:
            with contextlib.suppress(LogDirOfflineError, LogDirResourceError):
                if future is not None:
                    await m.dest.run(future.close_handles)
                await m.dest.run(partition_dirs.delete_partition_dir, m.dest.path, m.future_name)
        elif future is not None:
            self._close_future(m, future)
        self.log_manager.future_dropped(tp)
        log.warning("replica move cancelled; the replica stays in its dir", partition=str(tp), reason=reason)
        self._finish(m)

    def _close_future(self, m: ActiveMove, future: PartitionLog | None = None) -> None:
        lg = future or m.future
        m.future = None
        if lg is not None:
            with contextlib.suppress(OSError):
                lg.close_handles()

    def _finish(self, m: ActiveMove) -> None:
        if self.moves.get(m.key) is m:
            del self.moves[m.key]
        self.on_change()


class LogManagerView(Protocol):
    """What the mover needs of the log manager (see broker.log_manager.LogManager)."""

    log_dirs: dict[Uuid, LogDir]
    image: MetadataImage | None

    def get_partition(self, topic_id: Uuid, partition: int) -> HostedLog | None: ...
    def dir_by_path(self, path: str) -> LogDir | None: ...
    def is_configured(self, path: str) -> bool: ...
    def prefer(self, topic: str, partition: int, dir_id: Uuid) -> None: ...
    def future_started(self, tp: TopicIdPartition, dir_id: Uuid) -> None: ...
    def future_dropped(self, tp: TopicIdPartition) -> None: ...
    def swap_in(self, tp: TopicIdPartition, log: PartitionLog, log_dir: LogDir) -> None: ...


# ---- work done on a log dir's thread ------------------------------------------------------------


def _ends(log: PartitionLog) -> LogEnds:
    return LogEnds(log.log_start_offset, log.log_end_offset, log.latest_epoch)


def _source_round(current: PartitionLog, future: LogEnds, max_bytes: int) -> tuple[Reconcile, bytes, LogEnds]:
    cur = _ends(current)
    epoch_end = None
    if future.latest_epoch is not None:
        found = current.end_offset_for_epoch(future.latest_epoch)
        epoch_end = (found.leader_epoch, found.end_offset) if found is not None else None
    rec = reconcile(future, cur, epoch_end)
    data = b""
    if rec.copy_from < cur.log_end:
        data = bytes(current.read(rec.copy_from, max_bytes).records)
    return rec, data, cur


def _dest_round(future: PartitionLog, rec: Reconcile, data: bytes) -> LogEnds:
    if rec.start_over_at is not None:
        future.truncate_fully_and_start_at(rec.start_over_at)
    elif rec.truncate_to is not None:
        future.truncate_to(rec.truncate_to)
    if data:
        future.append_as_follower(data)
    return _ends(future)


def _epoch_history(current: PartitionLog) -> tuple[list[tuple[int, int]], int]:
    return [(e.epoch, e.start_offset) for e in current.epoch_cache.entries], current.log_start_offset


def _take_history(future: PartitionLog, history: tuple[list[tuple[int, int]], int]) -> None:
    """The current log's leader-epoch history and log start, which the batches alone do not carry
    (an epoch begun with no append, a start moved by retention): field bug 17."""
    entries, log_start = history
    cache = future.epoch_cache
    cache.clear()
    for epoch, start in entries:
        cache.assign(epoch, start, flush=False)
    cache.truncate_from_end(future.log_end_offset, flush=False)
    cache.flush()
    if log_start > future.log_start_offset:
        future.increment_log_start_offset(log_start)


def _create_future_dir(root: Path, name: str, topic_id: Uuid) -> None:
    path = root / name
    path.mkdir()
    write_partition_metadata(path, topic_id)
    fsync_dir(root)


def _promote_future(future: PartitionLog, history: tuple[list[tuple[int, int]], int], final: Path) -> None:
    if final.exists():
        raise RuntimeError(f"{final} already exists; the future log cannot take its place")
    _take_history(future, history)
    future.flush()
    future.rename_dir(final)


def _retire_source(current: PartitionLog) -> None:
    current.close_handles()
    root = current.dir.parent
    if current.dir.exists():
        partition_dirs.delete_partition_dir(root, current.dir.name)
