"""The controller process: its parts started in order, each start paired with its teardown.

Start order (each step only once the previous one worked, so a failed start tears down only what
was started): load the storage, bootstrap metadata and metadata log, replayed, in one hop onto the
log's thread (`startup`); win the election and take over the log (`raft_client`); the snapshot
generator (`snapshots`); the event queue, then the activation records (the bootstrap transaction on
an empty log) and the controller's own registration; the timers (`timers`); RPC on the controller
listener (`handlers`).

Stop runs the teardowns in reverse, after refusing new work: stop listening, stop the timers, drain
the event queue and wait for every append to be durable, stop snapshots, let open requests finish,
close the log. Problems an operator can fix surface as StartupError; a failure while running halts.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any

import structlog
from aiohttp import web

from controller.committed_image import CommittedImage
from controller.errors import StartupError, halt
from controller.event_queue import ControllerEventQueue
from controller.handlers import ControllerApis
from controller.health import controller_stats, health
from controller.log_sink import PreparedAppend
from controller.metrics import ControllerMetrics, ControllerStats
from controller.raft_client import SingleVoterRaftClient
from controller.self_registration import register_from_config
from controller.snapshot_policy import SnapshotPolicy
from controller.snapshots import SnapshotGenerator
from controller.startup import load_metadata, log_loaded
from controller.timers import ControllerTimers
from protocol.errors import Errors, KafkaError

if TYPE_CHECKING:
    from controller.core import QuorumControllerCore
    from kraftpy.config import KafkaConfig

log = structlog.get_logger(__name__)


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class ControllerServer:
    """One active controller. `await start()`, then `await stop()` (safe after a failed start)."""

    def __init__(self, cfg: KafkaConfig) -> None:
        from prometheus_client import CollectorRegistry, ProcessCollector

        self.cfg = cfg
        self.node_id = cfg.node_id
        self.cluster_id = ""
        self.port: int | None = None
        self._teardown = AsyncExitStack()
        self._core: QuorumControllerCore | None = None
        self._raft: SingleVoterRaftClient | None = None
        self._queue: ControllerEventQueue | None = None
        self._snapshots: SnapshotGenerator | None = None
        self._runner: web.AppRunner | None = None
        self._stopping = False
        self._stopped = False
        self.registry = CollectorRegistry()
        ProcessCollector(registry=self.registry)
        self.metrics = ControllerMetrics(self.registry, self._stats)

    @property
    def leader_epoch(self) -> int:
        return self._raft.leader_epoch if self._raft is not None else 0

    # ---- start ------------------------------------------------------------------------------------------

    async def start(self) -> None:
        cfg, teardown = self.cfg, self._teardown
        # One thread owns the metadata log, so every call on it (appends, reads, snapshots) is ordered.
        log_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="metadata-log")
        teardown.callback(log_thread.shutdown, wait=True)
        loaded = await asyncio.get_running_loop().run_in_executor(log_thread, load_metadata, cfg)
        self.cluster_id = loaded.cluster_id

        raft = SingleVoterRaftClient(
            loaded.log,
            log_thread,
            node_id=self.node_id,
            cluster_id=self.cluster_id,
            on_committed=self._on_committed,
            on_failure=self._on_log_failure,
        )
        teardown.push_async_callback(raft.close)
        log_loaded(loaded)
        await raft.become_leader()
        self._raft = raft
        core = self._core = loaded.core

        snapshots = self._snapshots = SnapshotGenerator(
            CommittedImage(loaded.delta, raft.log_end_offset),
            SnapshotPolicy(
                max_bytes_between=cfg.metadata_log_max_record_bytes_between_snapshots,
                max_interval_ms=cfg.metadata_log_max_snapshot_interval_ms,
                last_snapshot_ms=_wall_clock_ms(),
                last_snapshot_end_offset=loaded.latest_snapshot.offset if loaded.latest_snapshot else 0,
            ),
            raft,
            clock_ms=_wall_clock_ms,
            on_snapshot=self.metrics.snapshots.inc,
        )
        teardown.push_async_callback(snapshots.stop)
        # Requests still open when listening stops finish here, once the queue has answered them.
        teardown.push_async_callback(self._finish_requests)

        queue = self._queue = ControllerEventQueue(
            replay=core.replay,
            sink=raft.sink,
            on_fatal=halt,
            observe=self.metrics.observe_event,
            on_records=self.metrics.count_records,
        )
        queue.on_committed(raft.high_watermark)
        core.activate(_wall_clock_ms())
        queue.start()
        teardown.push_async_callback(self._drain)
        await queue.write(
            "activate",
            lambda ctx: core.activation_records(loaded.bootstrap_records, loaded.metadata_version_level),
        )
        await queue.write("registerController", lambda ctx: register_from_config(cfg, core.metadata_version))

        timers = ControllerTimers(cfg, core, queue, clock_ms=_wall_clock_ms)
        timers.start()
        snapshots.start_time_trigger()
        teardown.push_async_callback(timers.stop)

        await self._listen(
            ControllerApis(
                core,
                queue,
                raft,
                self.metrics,
                heartbeat_deadline_s=cfg.broker_heartbeat_interval_ms / 2000,
                clock_ms=_wall_clock_ms,
            )
        )
        teardown.push_async_callback(self._stop_listening)
        log.info(
            "controller started", port=self.port, cluster_id=self.cluster_id, leader_epoch=self.leader_epoch
        )

    async def _listen(self, apis: ControllerApis) -> None:
        from protocol.transport import create_app, start_server

        listener_name = (self.cfg.controller_listener_names or ["CONTROLLER"])[0]
        endpoint = self.cfg.listener(listener_name)
        app = create_app(
            apis.handlers(),
            registry=self.registry,
            health=self._health,
            client_max_size=self.cfg.socket_request_max_bytes,
        )
        try:
            self._runner, self.port = await start_server(app, endpoint.host or "0.0.0.0", endpoint.port)
        except OSError as e:
            raise StartupError(f"cannot listen on {endpoint}: {e.strerror or e}") from None

    # ---- stop -------------------------------------------------------------------------------------------

    async def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        # Refuse new work before tearing anything down: /healthz says stopping, waiting fetches
        # answer, and no snapshot starts.
        self._stopping = True
        if self._raft is not None:
            self._raft.begin_shutdown()
        if self._snapshots is not None:
            self._snapshots.begin_shutdown()
        await self._teardown.aclose()
        if self.port is not None:
            log.info("controller stopped")

    async def _stop_listening(self) -> None:
        if self._runner is not None:
            for site in list(self._runner.sites):
                with contextlib.suppress(Exception):
                    await site.stop()

    async def _drain(self) -> None:
        assert self._queue is not None and self._raft is not None
        await self._queue.close()
        await self._raft.drain()

    async def _finish_requests(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    # ---- commits and failures ---------------------------------------------------------------------------

    def _on_committed(self, high_watermark: int, appended: PreparedAppend) -> None:
        assert self._queue is not None and self._snapshots is not None
        self._snapshots.on_committed(appended)
        self._queue.on_committed(high_watermark)
        self.metrics.commit_batches.inc()

    def _on_log_failure(self, exc: BaseException) -> None:
        if self._queue is not None:
            self._queue.fail(KafkaError(Errors.NOT_CONTROLLER, "the metadata log failed"))
        halt("a metadata log write failed", exc)

    # ---- what the controller reports ----------------------------------------------------------------------

    def _stats(self) -> ControllerStats:
        return controller_stats(
            active=not self._stopping, core=self._core, raft=self._raft, queue=self._queue
        )

    def _health(self) -> dict[str, Any]:
        return health(
            stopping=self._stopping, node_id=self.node_id, cluster_id=self.cluster_id, raft=self._raft
        )
