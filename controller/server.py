"""The controller process: storage, metadata log, sans-IO core, event queue, timers and RPC, wired up.

Start order (each step only once the previous one worked, so a failed start tears down only what
was started): check the storage of metadata.log.dir; open the metadata log on its own thread and
replay it (latest snapshot, then the log) into the core and into the committed image; win the
single-voter election (bump the epoch, persist quorum-state, write a LeaderChange control batch);
start the event queue and write the activation records (the bootstrap transaction on an empty log);
then start the timers and serve RPC on the controller listener.

Stop order: refuse new work and stop listening, drain the event queue, wait for every append to be
durable, close the log.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import sys
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import structlog
from aiohttp import web

from controller.committed_image import CommittedImage
from controller.core.partition_change import Election
from controller.errors import StartupError
from controller.event_queue import ControllerEventQueue, EventTimeoutError, QueueClosedError, WriteContext
from controller.log_sink import MetadataLogSink, PreparedAppend
from controller.metrics import ControllerMetrics, ControllerStats
from controller.raft_fetch import (
    FetchKind,
    FetchRequestView,
    LogState,
    OffsetAndEpoch,
    decide_fetch,
    decide_fetch_snapshot,
)
from controller.snapshot_policy import SnapshotPolicy
from protocol.errors import Errors, KafkaError
from protocol.rpc.broker_heartbeat import BrokerHeartbeatRequest, BrokerHeartbeatResponse
from protocol.rpc.fetch import EpochEndOffset, FetchRequest, FetchResponse, LeaderIdAndEpoch, SnapshotIdData
from protocol.rpc.fetch_snapshot import FetchSnapshotRequest, FetchSnapshotResponse

if TYPE_CHECKING:
    from controller.core import QuorumControllerCore
    from kraftpy.config import KafkaConfig
    from kraftpy.metalog.group_commit import GroupCommitLog
    from kraftpy.metalog.log import MetadataLog

log = structlog.get_logger(__name__)

T = TypeVar("T")

# QuorumController's default: how often leaderless partitions of topics allowing unclean
# election are looked at again (elections on broker events happen at once regardless).
UNCLEAN_ELECTION_CHECK_INTERVAL_MS = 5 * 60 * 1000
# Upper bound on the sleep of the session-expiry timer, so new sessions are noticed.
SESSION_CHECK_MAX_INTERVAL_MS = 250
EXIT_FATAL = 70


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class ControllerServer:
    """One active controller. `await start()`, then `await stop()` (safe after a failed start)."""

    def __init__(self, cfg: KafkaConfig) -> None:
        self.cfg = cfg
        self.node_id = cfg.node_id
        self.cluster_id = ""
        self.leader_epoch = 0
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="metadata-log")
        self._snapshot_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="snapshot-writer")
        self._gcl: GroupCommitLog | None = None
        self._core: QuorumControllerCore | None = None
        self._sink: MetadataLogSink | None = None
        self._queue: ControllerEventQueue | None = None
        self._committed: CommittedImage | None = None
        self._policy: SnapshotPolicy | None = None
        self._runner: web.AppRunner | None = None
        self._timers: list[asyncio.Task[None]] = []
        self._background: set[asyncio.Task[Any]] = set()
        self._hw_changed = asyncio.Event()
        self._stopping = False
        self._stopped = False
        self.port: int | None = None
        # The parts of the log's state Fetch looks at, refreshed after every change on the log thread.
        self._log_start = 0
        self._epochs: tuple[Any, ...] = ()
        self._snapshots: tuple[Any, ...] = ()
        self._snapshot_sizes: dict[Any, int] = {}
        from prometheus_client import CollectorRegistry, ProcessCollector

        self.registry = CollectorRegistry()
        ProcessCollector(registry=self.registry)
        self.metrics = ControllerMetrics(self.registry, self._stats)

    # ---- helpers ------------------------------------------------------------------------------

    async def _on_log_thread(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._executor, functools.partial(fn, *args))

    @property
    def core(self) -> QuorumControllerCore:
        assert self._core is not None
        return self._core

    @property
    def queue(self) -> ControllerEventQueue:
        assert self._queue is not None
        return self._queue

    @property
    def high_watermark(self) -> int:
        return self._queue.high_watermark if self._queue is not None else 0

    def _spawn(self, coro: Awaitable[Any], name: str) -> asyncio.Task[Any]:
        task = asyncio.ensure_future(coro)
        task.set_name(name)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    # ---- start ----------------------------------------------------------------------------------

    async def start(self) -> None:
        from controller.core import ControllerConfig, QuorumControllerCore
        from kraftpy.image import MetadataDelta, MetadataImage
        from kraftpy.metalog.errors import MetadataLogError
        from kraftpy.metalog.group_commit import GroupCommitLog
        from kraftpy.metalog.log import MetadataLog, MetadataLogConfig
        from kraftpy.storage import EnsembleError, MetaPropertiesError

        cfg = self.cfg
        try:
            dirs = await self._on_log_thread(_check_storage, cfg)
        except (EnsembleError, MetaPropertiesError, OSError) as e:
            raise StartupError(_storage_problem(cfg, e)) from None
        self.cluster_id = dirs.cluster_id
        bootstrap_records, mv_level = await self._on_log_thread(_read_bootstrap, cfg.metadata_log_dir_path)

        core = QuorumControllerCore(
            ControllerConfig(
                node_id=self.node_id,
                cluster_id=self.cluster_id,
                broker_session_timeout_ms=cfg.broker_session_timeout_ms,
                default_num_partitions=cfg.num_partitions,
                default_replication_factor=cfg.default_replication_factor,
                unclean_leader_election_enable=cfg.unclean_leader_election_enable,
                zk_migration_enabled=cfg.zookeeper_metadata_migration_enable,
            )
        )
        delta = MetadataDelta(MetadataImage.EMPTY)
        try:
            mlog: MetadataLog = await self._on_log_thread(
                MetadataLog.open, cfg.metadata_log_dir_path, MetadataLogConfig.from_server_config(cfg)
            )
        except (MetadataLogError, OSError) as e:
            raise StartupError(f"cannot open the metadata log in {cfg.metadata_log_dir_path}: {e}") from None
        self._gcl = GroupCommitLog(mlog, self._executor)
        if not mlog.recovery.clean:
            log.warning("metadata log had a torn tail; cut back to the last whole batch", **_torn(mlog))
        try:
            replayed = await self._on_log_thread(_replay_log, mlog, core, delta)
        except Exception as e:
            raise StartupError(f"cannot replay the metadata log in {mlog.dir}: {e}") from None
        log.info(
            "metadata log replayed",
            records=replayed,
            log_start_offset=mlog.log_start_offset,
            log_end_offset=mlog.log_end_offset,
            latest_snapshot=str(mlog.latest_snapshot()),
        )

        # A single voter wins every election it runs: one epoch more than any it has seen.
        self.leader_epoch = await self._on_log_thread(_become_leader, mlog, self.node_id)
        await self._gcl.flush()
        await self._refresh_log_view()
        log.info("became the active controller", leader_epoch=self.leader_epoch, node_id=self.node_id)

        self._core = core
        self._committed = CommittedImage(delta, mlog.log_end_offset)
        self._sink = MetadataLogSink(
            self._gcl, self.leader_epoch, on_committed=self._on_committed, on_failure=self._on_log_failure
        )
        self._queue = ControllerEventQueue(
            replay=core.replay,
            sink=self._sink,
            on_fatal=self._fatal,
            observe=self.metrics.observe_event,
            on_records=self.metrics.count_records,
        )
        self._queue.on_committed(mlog.flushed_offset)
        latest = mlog.latest_snapshot()
        self._policy = SnapshotPolicy(
            max_bytes_between=cfg.metadata_log_max_record_bytes_between_snapshots,
            max_interval_ms=cfg.metadata_log_max_snapshot_interval_ms,
            last_snapshot_ms=_now_ms(),
            last_snapshot_end_offset=latest.offset if latest is not None else 0,
        )
        core.activate(_now_ms())
        self._queue.start()
        await self.queue.write("activate", lambda ctx: core.activation_records(bootstrap_records, mv_level))

        await self.queue.write("registerController", self._register_controller)

        self._start_timers()
        await self._serve_rpc()
        log.info(
            "controller started", port=self.port, cluster_id=self.cluster_id, leader_epoch=self.leader_epoch
        )

    def _register_controller(self, ctx: WriteContext) -> Any:
        from controller.self_registration import register_controller
        from kraftpy.storage.metadata_version import LATEST_LEVEL
        from protocol.uuid import Uuid

        name = (self.cfg.controller_listener_names or ["CONTROLLER"])[0]
        endpoint = self.cfg.listener(name)
        return register_controller(
            node_id=self.node_id,
            incarnation_id=Uuid.random(),
            listener_name=endpoint.name,
            host=endpoint.host or "localhost",
            port=endpoint.port,
            security_protocol=self.cfg.security_protocol(endpoint.name),
            metadata_version=self.core.metadata_version,
            supported_metadata_versions=(1, LATEST_LEVEL),  # 3.0-IV1, the first KRaft version
        )

    async def _serve_rpc(self) -> None:
        from protocol.transport import create_app, start_server

        listener_name = (self.cfg.controller_listener_names or ["CONTROLLER"])[0]
        endpoint = self.cfg.listener(listener_name)
        app = create_app(self._handlers(), registry=self.registry, health=self._health)
        try:
            self._runner, self.port = await start_server(app, endpoint.host or "0.0.0.0", endpoint.port)
        except OSError as e:
            raise StartupError(f"cannot listen on {endpoint}: {e.strerror or e}") from None

    def _start_timers(self) -> None:
        cfg = self.cfg
        if cfg.metadata_max_idle_interval_ms > 0:
            self._timers.append(asyncio.ensure_future(self._noop_timer(cfg.metadata_max_idle_interval_ms)))
        self._timers.append(asyncio.ensure_future(self._session_timer()))
        self._timers.append(asyncio.ensure_future(self._unclean_election_timer()))
        if cfg.auto_leader_rebalance_enable:
            self._timers.append(
                asyncio.ensure_future(
                    self._preferred_election_timer(cfg.leader_imbalance_check_interval_seconds)
                )
            )
        self._timers.append(asyncio.ensure_future(self._snapshot_timer()))

    # ---- stop -------------------------------------------------------------------------------------

    async def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        self._stopping = True
        self._hw_changed.set()
        for t in self._timers:
            t.cancel()
        for t in self._timers:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        if self._runner is not None:
            for site in list(self._runner.sites):
                with contextlib.suppress(Exception):
                    await site.stop()
        if self._queue is not None:
            await self._queue.close()
        if self._sink is not None:
            await self._sink.drain()
        for t in list(self._background):
            t.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        if self._runner is not None:
            await self._runner.cleanup()
        if self._gcl is not None:
            try:
                await self._gcl.close()
            except Exception:
                log.exception("closing the metadata log failed")
        self._snapshot_executor.shutdown(wait=True)
        self._executor.shutdown(wait=True)
        if self.port is not None:
            log.info("controller stopped")

    # ---- commits and failures --------------------------------------------------------------------

    def _on_committed(self, high_watermark: int, appended: PreparedAppend) -> None:
        assert self._queue is not None and self._committed is not None and self._policy is not None
        self._committed.add(appended.base_offset, appended.records, appended.epoch, appended.timestamp_ms)
        self._policy.on_committed(appended.size)
        self._queue.on_committed(high_watermark)
        self.metrics.commit_batches.inc()
        self._hw_changed.set()
        self._hw_changed.clear()
        self._maybe_snapshot()

    def _on_log_failure(self, exc: BaseException) -> None:
        if self._queue is not None:
            self._queue.fail(KafkaError(Errors.NOT_CONTROLLER, "the metadata log failed"))
        self._fatal("a metadata log write failed", exc)

    def _fatal(self, what: str, exc: BaseException) -> None:
        # Speculative state may now be ahead of the disk; only a restart from the log is safe.
        log.critical("fatal controller error; halting", error=what, exception=repr(exc))
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        os._exit(EXIT_FATAL)

    # ---- timers -----------------------------------------------------------------------------------

    async def _noop_timer(self, interval_ms: int) -> None:
        while True:
            await asyncio.sleep(interval_ms / 1000)
            await self._timer_write("maybeWriteNoOpRecord", lambda ctx: self.core.noop())

    async def _session_timer(self) -> None:
        while True:
            now = _now_ms()
            expiry = self.core.next_session_expiry_ms()
            wait_ms = SESSION_CHECK_MAX_INTERVAL_MS if expiry is None else max(1, min(expiry - now + 1, 250))
            await asyncio.sleep(wait_ms / 1000)
            # Fence stale brokers one at a time until none is left (maybeFenceOneStaleBroker).
            while True:
                fenced = await self._timer_write(
                    "maybeFenceStaleBroker", lambda ctx: self.core.maybe_fence_one_stale_broker(ctx.now_ms)
                )
                if fenced is None:
                    break
                log.info("fenced broker whose session expired", broker_id=fenced)

    async def _unclean_election_timer(self) -> None:
        while True:
            await asyncio.sleep(UNCLEAN_ELECTION_CHECK_INTERVAL_MS / 1000)
            await self._timer_write(
                "electUncleanLeaders", lambda ctx: self.core.maybe_elect_unclean_leaders()
            )

    async def _preferred_election_timer(self, interval_s: int) -> None:
        # Leadership drifts to whichever replica was placed or came back first (a multi-dir broker
        # stays fenced until its replicas are placed); like Kafka's auto leader rebalance, move it
        # back to the preferred replica wherever that one is acceptable again.
        while True:
            await asyncio.sleep(interval_s)
            await self._timer_write(
                "electPreferredLeaders", lambda ctx: self.core.elect_leaders(Election.PREFERRED)
            )

    async def _snapshot_timer(self) -> None:
        # The byte trigger is checked on every commit; this catches the time trigger when idle.
        while True:
            await asyncio.sleep(1.0)
            self._maybe_snapshot()

    async def _timer_write(self, name: str, op: Callable[[WriteContext], Any]) -> Any:
        try:
            return await self.queue.write(name, op)
        except QueueClosedError:
            raise asyncio.CancelledError() from None
        except Exception:
            # The operation changed nothing; a timer must keep running whatever one run hit.
            log.exception("timer event failed", event=name)
            return None

    # ---- snapshots -------------------------------------------------------------------------------

    def _maybe_snapshot(self) -> None:
        policy, committed = self._policy, self._committed
        if policy is None or committed is None or self._stopping:
            return
        reason = policy.due(_now_ms(), committed.end_offset)
        if reason is None:
            return
        policy.started()
        self._spawn(self._write_snapshot(reason), "metadata-snapshot")

    async def _write_snapshot(self, reason: str) -> None:
        assert self._policy is not None and self._committed is not None and self._gcl is not None
        policy = self._policy
        bytes_covered = policy.bytes_since
        try:
            image = self._committed.image()
            end = self._committed.end_offset
            if self._committed.in_transaction or image.is_empty():
                policy.failed()
                return
            records = await asyncio.get_running_loop().run_in_executor(self._snapshot_executor, image.write)
            sid = await self._on_log_thread(
                _write_snapshot, self._gcl.log, records, end, image.provenance.last_contained_log_time_ms
            )
            await self._refresh_log_view()
        except Exception:
            log.exception("writing a metadata snapshot failed")
            policy.failed()
            return
        policy.finished(_now_ms(), end, bytes_covered)
        self.metrics.snapshots.inc()
        log.info("metadata snapshot taken", reason=reason, end_offset=sid.offset, epoch=sid.epoch)

    async def _refresh_log_view(self) -> None:
        assert self._gcl is not None
        start, epochs, sizes = await self._on_log_thread(_log_view, self._gcl.log)
        self._log_start = start
        self._epochs = tuple(epochs)
        self._snapshot_sizes = sizes
        self._snapshots = tuple(sorted(sizes))

    # ---- state views -----------------------------------------------------------------------------

    def _log_state(self) -> LogState:
        end = self._sink.next_offset if self._sink is not None else 0
        return LogState(
            cluster_id=self.cluster_id,
            leader_id=self.node_id,
            leader_epoch=self.leader_epoch,
            log_start_offset=self._log_start,
            log_end_offset=end,
            high_watermark=self.high_watermark,
            epochs=self._epochs,
            snapshots=self._snapshots,
            is_leader=True,
            shutting_down=self._stopping,
        )

    def _stats(self) -> ControllerStats:
        core = self._core
        if core is None:
            return ControllerStats()
        cluster, replication = core.m.cluster, core.m.replication
        return ControllerStats(
            active=not self._stopping,
            fenced_brokers=core.fenced_broker_count(),
            active_brokers=len(cluster.registrations) - core.fenced_broker_count(),
            topics=len(replication.topics),
            partitions=sum(len(t.partitions) for t in replication.topics.values()),
            offline_partitions=core.offline_partition_count(),
            log_end_offset=self._sink.next_offset if self._sink is not None else 0,
            high_watermark=self.high_watermark,
            log_start_offset=self._log_start,
            latest_snapshot_offset=self._snapshots[-1][0] if self._snapshots else -1,
            event_queue_size=self._queue.size() if self._queue is not None else 0,
        )

    def _health(self) -> dict[str, Any]:
        return {
            "status": "ok" if not self._stopping else "stopping",
            "role": "controller",
            "node_id": self.node_id,
            "cluster_id": self.cluster_id,
            "leader_epoch": self.leader_epoch,
            "high_watermark": self.high_watermark,
            "log_end_offset": self._sink.next_offset if self._sink is not None else 0,
        }

    # ---- RPC handlers ----------------------------------------------------------------------------

    def _handlers(self) -> dict[str, Callable[[Any, int], Awaitable[Any]]]:
        core = self.core

        def write(
            name: str, op: Callable[[Any, int, WriteContext], Any]
        ) -> Callable[[Any, int], Awaitable[Any]]:
            async def handler(req: Any, version: int) -> Any:
                return await self._submit_write(name, lambda ctx: op(req, version, ctx))

            return handler

        def read(name: str, fn: Callable[[Any, int], Any]) -> Callable[[Any, int], Awaitable[Any]]:
            async def handler(req: Any, version: int) -> Any:
                try:
                    return await self.queue.read(name, lambda: fn(req, version))
                except QueueClosedError:
                    raise KafkaError(Errors.NOT_CONTROLLER, "the controller is shutting down") from None

            return handler

        return {
            "BrokerRegistration": write(
                "registerBroker",
                lambda r, v, ctx: core.register_broker(r, v, ctx.now_ms, ctx.next_write_offset),
            ),
            "BrokerHeartbeat": self._broker_heartbeat,
            "AssignReplicasToDirs": write(
                "assignReplicasToDirs", lambda r, v, ctx: core.assign_replicas_to_dirs(r, v)
            ),
            "CreateTopics": write("createTopics", lambda r, v, ctx: core.create_topics(r, v)),
            "DeleteTopics": write("deleteTopics", lambda r, v, ctx: core.delete_topics(r, v)),
            "AlterPartition": write("alterPartition", lambda r, v, ctx: core.alter_partition(r, v)),
            "AllocateProducerIds": write(
                "allocateProducerIds", lambda r, v, ctx: core.allocate_producer_ids(r, v)
            ),
            "DescribeCluster": read("describeCluster", lambda r, v: core.describe_cluster(r, v)),
            "Metadata": read("metadata", lambda r, v: core.metadata(r, v)),
            "Fetch": self._fetch,
            "FetchSnapshot": self._fetch_snapshot,
        }

    async def _submit_write(self, name: str, op: Callable[[WriteContext], Any], **kw: Any) -> Any:
        try:
            return await self.queue.write(name, op, **kw)
        except QueueClosedError:
            raise KafkaError(Errors.NOT_CONTROLLER, "the controller is shutting down") from None
        except EventTimeoutError as e:
            raise KafkaError(Errors.REQUEST_TIMED_OUT, str(e)) from None

    async def _broker_heartbeat(self, req: BrokerHeartbeatRequest, version: int) -> BrokerHeartbeatResponse:
        core = self.core

        def on_timeout() -> None:
            # processExpiredBrokerHeartbeat: the broker is alive even if the queue is overloaded.
            self.metrics.timed_out_heartbeats.inc()
            reg = core.m.cluster.registration(req.BrokerId)
            if reg is not None and reg.epoch == req.BrokerEpoch:
                core.m.heartbeats.touch(req.BrokerId, _now_ms(), req.CurrentMetadataOffset)
            log.warning("heartbeat timed out in the event queue", broker_id=req.BrokerId)

        try:
            return await self.queue.write(
                "processBrokerHeartbeat",
                lambda ctx: core.process_broker_heartbeat(req, version, ctx.now_ms, ctx.next_write_offset),
                deadline_s=self.cfg.broker_heartbeat_interval_ms / 2000,
                on_timeout=on_timeout,
            )
        except EventTimeoutError:
            return BrokerHeartbeatResponse(ErrorCode=int(Errors.REQUEST_TIMED_OUT))
        except QueueClosedError:
            raise KafkaError(Errors.NOT_CONTROLLER, "the controller is shutting down") from None

    def _current_leader(self) -> LeaderIdAndEpoch:
        return LeaderIdAndEpoch(LeaderId=self.node_id, LeaderEpoch=self.leader_epoch)

    async def _fetch(self, req: FetchRequest, version: int) -> FetchResponse:
        view = FetchRequestView(
            cluster_id=req.ClusterId,
            replica_id=req.ReplicaId,
            current_leader_epoch=req.CurrentLeaderEpoch,
            fetch_offset=req.FetchOffset,
            last_fetched_epoch=req.LastFetchedEpoch,
            max_wait_ms=req.MaxWaitMs,
        )
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(0, req.MaxWaitMs) / 1000
        while True:
            state = self._log_state()
            decision = decide_fetch(state, view)
            remaining = deadline - loop.time()
            if remaining <= 0 or not decision.should_wait(state, int(remaining * 1000) + 1):
                break
            # Long-poll: any commit (or shutdown) wakes every waiting fetch to look again.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._hw_changed.wait(), remaining)
        resp = FetchResponse(
            ErrorCode=int(decision.error),
            HighWatermark=state.high_watermark,
            LogStartOffset=state.log_start_offset,
            CurrentLeader=self._current_leader(),
        )
        if decision.kind is FetchKind.DIVERGING and decision.diverging is not None:
            resp.DivergingEpoch = EpochEndOffset(
                Epoch=decision.diverging.epoch, EndOffset=decision.diverging.offset
            )
        elif decision.kind is FetchKind.SNAPSHOT and decision.snapshot_id is not None:
            resp.SnapshotId = SnapshotIdData(
                EndOffset=decision.snapshot_id.offset, Epoch=decision.snapshot_id.epoch
            )
        elif decision.records_available(state):
            assert self._gcl is not None
            resp.Records = await self._on_log_thread(
                _read_committed, self._gcl.log, decision.read_offset, req.MaxBytes, state.high_watermark
            )
        return resp

    async def _fetch_snapshot(self, req: FetchSnapshotRequest, version: int) -> FetchSnapshotResponse:
        wanted = OffsetAndEpoch(req.SnapshotId.EndOffset, req.SnapshotId.Epoch)
        chunk = decide_fetch_snapshot(
            self._log_state(),
            self._snapshot_sizes,
            cluster_id=req.ClusterId,
            current_leader_epoch=req.CurrentLeaderEpoch,
            snapshot_id=wanted,
            position=req.Position,
            max_bytes=req.MaxBytes,
        )
        resp = FetchSnapshotResponse(
            ErrorCode=int(chunk.error), SnapshotId=req.SnapshotId, CurrentLeader=self._current_leader()
        )
        if chunk.error is not Errors.NONE:
            return resp
        assert self._gcl is not None
        data = await self._on_log_thread(
            _read_snapshot_chunk, self._gcl.log, wanted, chunk.position, chunk.length
        )
        if data is None:
            resp.ErrorCode = int(Errors.SNAPSHOT_NOT_FOUND)
            return resp
        resp.Size = chunk.size
        resp.Position = chunk.position
        resp.UnalignedRecords = data
        return resp


# ---- work done on the metadata log's thread ---------------------------------------------------------


def _check_storage(cfg: KafkaConfig) -> Any:
    from kraftpy.storage import initialize_log_dirs

    return initialize_log_dirs(cfg)


def _storage_problem(cfg: KafkaConfig, e: BaseException) -> str:
    from kraftpy.storage import META_PROPERTIES

    metadata_dir = cfg.metadata_log_dir_path
    if not (Path(metadata_dir) / META_PROPERTIES).exists():
        source = cfg.source or "CONFIG"
        return (
            f"metadata.log.dir {metadata_dir} is not formatted ({e}); "
            f"run `kraftpy storage format -c {source} -t CLUSTER_ID` first"
        )
    return f"storage of {metadata_dir}: {e}"


def _read_bootstrap(metadata_dir: str) -> tuple[list[Any], int]:
    from kraftpy.storage.bootstrap import BootstrapError, bootstrap_records, read_bootstrap_checkpoint
    from kraftpy.storage.metadata_version import LATEST_PRODUCTION_LEVEL

    try:
        boot = read_bootstrap_checkpoint(metadata_dir)
    except FileNotFoundError:
        # BootstrapDirectory's fallback when the file is missing: the latest production version.
        log.warning("no bootstrap.checkpoint; using the latest production metadata.version", dir=metadata_dir)
        return bootstrap_records(LATEST_PRODUCTION_LEVEL), LATEST_PRODUCTION_LEVEL
    except BootstrapError as e:
        raise StartupError(str(e)) from None
    return list(boot.records), boot.metadata_version_level


def _replay_log(mlog: MetadataLog, core: QuorumControllerCore, delta: Any) -> int:
    n = 0
    for offset, record, batch in mlog.entries():
        core.replay(record, offset)
        delta.replay(record, offset, epoch=batch.epoch, timestamp_ms=batch.timestamp_ms)
        n += 1
    return n


def _become_leader(mlog: MetadataLog, node_id: int) -> int:
    from kraftpy.metalog.checkpoints import QuorumStateData
    from protocol.control_records import LeaderChangeMessage

    previous = mlog.read_quorum_state()
    epoch = max(previous.leader_epoch if previous is not None else 0, mlog.latest_epoch, 0) + 1
    # The vote and the leadership are on disk before anything is written in the new epoch.
    mlog.write_quorum_state(
        QuorumStateData(leader_id=node_id, leader_epoch=epoch, voted_id=node_id, current_voters=(node_id,))
    )
    me = LeaderChangeMessage.Voter(VoterId=node_id)
    mlog.append_control(
        [LeaderChangeMessage(Version=0, LeaderId=node_id, Voters=[me], GrantingVoters=[me])], epoch
    )
    return epoch


def _log_view(mlog: MetadataLog) -> tuple[int, list[Any], dict[Any, int]]:
    sizes = {}
    for sid in mlog.snapshot_ids():
        with contextlib.suppress(OSError):
            sizes[OffsetAndEpoch(sid.offset, sid.epoch)] = mlog.snapshot_size(sid)
    return mlog.log_start_offset, mlog.epoch_entries(), sizes


def _read_committed(mlog: MetadataLog, offset: int, max_bytes: int, high_watermark: int) -> bytes:
    """Whole batches from the one holding `offset`, none reaching the high watermark."""
    from protocol.record_batch import read_batch_header

    if offset >= high_watermark:
        return b""
    data = mlog.read(offset, max(0, max_bytes))
    pos = 0
    while pos < len(data):
        h = read_batch_header(data, pos)
        if h.last_offset >= high_watermark:
            break
        pos += h.size
    return data[:pos]


def _read_snapshot_chunk(mlog: MetadataLog, sid: OffsetAndEpoch, position: int, length: int) -> bytes | None:
    from kraftpy.metalog.errors import MetadataLogError
    from kraftpy.metalog.files import SnapshotId

    try:
        return mlog.read_snapshot_bytes(SnapshotId(sid.offset, sid.epoch), position, length)
    except (OSError, MetadataLogError):
        # Deleted by retention meanwhile: the follower asks again from the latest snapshot.
        return None


def _write_snapshot(mlog: MetadataLog, records: list[Any], end_offset: int, timestamp_ms: int) -> Any:
    epoch = mlog.epoch_for_offset(end_offset - 1)
    if epoch is None:
        latest = mlog.latest_snapshot()
        epoch = latest.epoch if latest is not None else 0
    sid = mlog.write_snapshot(records, end_offset, epoch, timestamp_ms)
    mlog.maybe_clean()
    return sid


def _torn(mlog: MetadataLog) -> dict[str, Any]:
    torn = mlog.recovery.torn_tail
    return {"truncated_bytes": mlog.recovery.truncated_bytes, "reason": getattr(torn, "reason", None)}
