"""BrokerServer: the broker process, wiring the sans-IO core to the controller, the disks and HTTP.

One asyncio loop. Disk work runs on each log dir's own executor (`broker.storage.LogDir`), the
metadata log's on the metadata dir's. The pieces:

- `LogDir` per online log dir (and one for metadata.log.dir when it is separate), each probed
  every log.dir.probe.interval.ms by a small write + fsync;
- `MetadataLoader`: the local copy of `__cluster_metadata`, fetched from the controller, replayed
  into images;
- `LogManager` (+ `HostedReplicas`, the KIP-858 decisions): the partitions hosted here;
- `BrokerLifecycle` + `AssignmentsManager`, driven by one task that sends BrokerRegistration,
  BrokerHeartbeat and AssignReplicasToDirs when they are due;
- the aiohttp app on the broker's listener: /healthz, /metrics, and room for the data plane's RPC
  handlers (`add_handler(server.app, ...)`, with `server.log_manager` to find partition logs).

A log dir failure (any OSError, or a stall) takes that dir's replicas offline, closes their files
and sends a heartbeat at once. The metadata dir failing, every log dir failing, a registration that
never succeeds, or an unacknowledged dir failure under a partition this broker leads past
log.dir.failure.timeout.ms, stop the broker with exit code 1. SIGTERM runs a controlled shutdown.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import random
import time
from collections.abc import Awaitable
from typing import Any

import structlog
from aiohttp import web

from broker.core.assignments import AssignmentsManager, ImageReplicaView
from broker.core.broker_state import BrokerState
from broker.core.hosted_replicas import HostedReplicas
from broker.core.lifecycle import (
    BrokerLifecycle,
    LifecycleConfig,
    RegistrationInfo,
    SendHeartbeat,
    SendRegistration,
    Shutdown,
)
from broker.core.local_logs import DuplicateLogError, FoundLog, classify
from broker.log_manager import LogManager
from broker.metadata_loader import LocalMetadataLog, MetadataLoader
from broker.metrics import BrokerMetrics, BrokerStats, DirStat
from broker.partition_dirs import delete_partition_dir, scan
from broker.startup import BrokerDirs, StartupError
from broker.storage import LogConfig, LogDirOfflineError
from broker.storage.log_dir import LogDir
from kraftpy.config import KafkaConfig
from kraftpy.image import MetadataDelta, MetadataImage
from kraftpy.metalog import MetadataLogConfig
from kraftpy.storage.metadata_version import JBOD_LEVEL, LATEST_LEVEL
from protocol.rpc.broker_registration import BrokerRegistrationRequest
from protocol.transport import (
    NO_RETRIES,
    REGISTRY,
    RpcClient,
    RpcConnectionError,
    RpcError,
    codec,
    create_app,
    start_server,
)
from protocol.uuid import Uuid

log = structlog.get_logger("broker.server")

RPC_TIMEOUT_S = 5.0
PROBE_TIMEOUT_MIN_S = 5.0
STOP_TIMEOUT_S = 10.0

SUPPORTED_FEATURES = (
    ("metadata.version", 1, LATEST_LEVEL),
    ("kraft.version", 0, 1),
    ("group.version", 0, 1),
    ("transaction.version", 0, 2),
)


class BrokerServer:
    def __init__(self, cfg: KafkaConfig, dirs: BrokerDirs, *, rng: random.Random | None = None) -> None:
        self.cfg = cfg
        self.dirs = dirs
        self.broker_id = cfg.node_id
        self.rng = rng or random.Random()
        self.incarnation_id = Uuid.random()
        self.exit_code: int | None = None
        self.exit_reason = ""
        self.stopped = asyncio.Event()
        self.log_dirs: dict[Uuid, LogDir] = {}
        self.metadata_dir: LogDir | None = None
        self.app: web.Application | None = None
        self.port: int | None = None
        self.lifecycle: BrokerLifecycle | None = None
        self.assignments = AssignmentsManager(self.broker_id, rng=self.rng)
        self.hosted: HostedReplicas | None = None
        self.log_manager: LogManager | None = None
        self.loader: MetadataLoader | None = None
        self.metrics: BrokerMetrics | None = None
        self.published = False
        self.ready_latched = False
        self.started_at = time.monotonic()
        """Process start (set by main); the figure "seconds_to_unfence" counts from here."""
        self.server_started_at = self.started_at
        self.unfenced_at: float | None = None
        self._runner: web.AppRunner | None = None
        self._client: RpcClient | None = None
        self._fetch_client: RpcClient | None = None
        self._local: LocalMetadataLog | None = None
        self._tasks: list[asyncio.Task[Any]] = []
        self._wakeup = asyncio.Event()
        self._failed_paths: dict[str, tuple[str, str]] = {}  # path -> (directory id or "", reason)
        self._shutting_down = False
        self.assignment_bytes = 0
        """Bytes of AssignReplicasToDirs bodies sent (msgpack), for the startup benchmark."""

    # ---- clock ---------------------------------------------------------------------------------

    def now_ms(self) -> int:
        return int(asyncio.get_running_loop().time() * 1000)

    # ---- start ---------------------------------------------------------------------------------

    async def start(self) -> None:
        self.server_started_at = time.monotonic()
        cfg, dirs = self.cfg, self.dirs
        for path, reason in dirs.offline.items():
            self._failed_paths[path] = ("", reason)
        for path, dir_id in dirs.log_dirs.items():
            self.log_dirs[dir_id] = LogDir(path, dir_id, on_failure=self._on_dir_failure)
        if dirs.metadata_is_log_dir:
            self.metadata_dir = self.log_dirs[dirs.metadata_dir_id]
        else:
            self.metadata_dir = LogDir(
                dirs.metadata_dir, dirs.metadata_dir_id, on_failure=self._on_dir_failure
            )

        found = await self._scan_dirs()
        paths = {d: str(ld.path) for d, ld in self.log_dirs.items()}
        try:
            inventory = classify(found, paths)
        except DuplicateLogError as e:
            raise StartupError(str(e)) from None
        await self._finish_deletions(inventory.to_delete)

        self._local = LocalMetadataLog(self.metadata_dir, MetadataLogConfig.from_server_config(cfg))
        try:
            delta = await self._local.open()
        except LogDirOfflineError as e:
            raise StartupError(f"metadata.log.dir {dirs.metadata_dir} failed: {e.message}") from None
        except Exception as e:
            raise StartupError(f"cannot load the metadata log in {dirs.metadata_dir}: {e}") from None

        online = {d: str(ld.path) for d, ld in self.log_dirs.items() if ld.online}
        self.hosted = HostedReplicas(
            self.broker_id,
            online,
            offline_at_start=len(dirs.offline),
            multi_dir=dirs.multi_dir,
            inventory=inventory,
        )
        self.log_manager = LogManager(
            self.broker_id,
            self.log_dirs,
            self.hosted,
            self.assignments,
            LogConfig.from_kafka_config(cfg),
            now_ms=self.now_ms,
            on_change=self._on_replicas_changed,
        )
        self.lifecycle = BrokerLifecycle(
            self._registration_info(),
            sorted(online),
            LifecycleConfig.from_kafka_config(cfg),
            rng=self.rng,
            leads_partitions_in_dir=self.hosted.leads_partitions_in_dir,
        )
        for dir_id, ld in self.log_dirs.items():
            if not ld.online:  # failed while scanning
                self.lifecycle.on_dir_failure(dir_id, self.now_ms())

        controller = cfg.controller_endpoint().url
        self._client = RpcClient(controller, timeout=RPC_TIMEOUT_S, retry=NO_RETRIES)
        self._fetch_client = RpcClient(controller, timeout=RPC_TIMEOUT_S, retry=NO_RETRIES)
        self.loader = MetadataLoader(
            self._local, self._fetch_client, dirs.cluster_id, self.broker_id, self._on_image
        )
        self.loader.start_from(delta)
        self.lifecycle.set_metadata_offset(self.loader.image.offset)
        log.info(
            "local metadata log replayed",
            metadata_offset=self.loader.image.offset,
            log_end_offset=self._local.log_end_offset,
        )

        await self._serve_http()
        self.log_manager.start()
        self.lifecycle.start(self.now_ms())
        self._spawn(self._lifecycle_loop(), "lifecycle")
        self._spawn(self.loader.run(), "metadata-fetch")
        for ld in self._probed_dirs():
            self._spawn(self._probe_loop(ld), f"probe-{ld.dir_id}")
        log.info(
            "broker started",
            broker_id=self.broker_id,
            port=self.port,
            log_dirs={str(ld.path): str(d) for d, ld in self.log_dirs.items()},
            offline_log_dirs=sorted(dirs.offline),
            metadata_dir=dirs.metadata_dir,
            incarnation_id=str(self.incarnation_id),
        )

    def _registration_info(self) -> RegistrationInfo:
        cfg = self.cfg
        controller_names = set(cfg.controller_listener_names or [])
        listeners = tuple(
            BrokerRegistrationRequest.Listener(
                Name=e.name,
                Host=e.host or "127.0.0.1",
                Port=e.port,
                SecurityProtocol=cfg.security_protocol(e.name),
            )
            for e in cfg.advertised_listener_list
            if e.name not in controller_names
        )
        features = tuple(
            BrokerRegistrationRequest.Feature(Name=n, MinSupportedVersion=lo, MaxSupportedVersion=hi)
            for n, lo, hi in SUPPORTED_FEATURES
        )
        return RegistrationInfo(
            broker_id=self.broker_id,
            cluster_id=self.dirs.cluster_id,
            incarnation_id=self.incarnation_id,
            listeners=listeners,
            features=features,
            rack=cfg.broker_rack,
        )

    async def _scan_dirs(self) -> list[FoundLog]:
        async def one(ld: LogDir) -> list[FoundLog]:
            try:
                return await ld.run(scan, ld, timeout=math.inf)
            except LogDirOfflineError:
                return []

        results = await asyncio.gather(*(one(ld) for ld in self.log_dirs.values()))
        return [f for found in results for f in found]

    async def _finish_deletions(self, leftovers: list[FoundLog]) -> None:
        for f in leftovers:
            ld = self.log_dirs.get(f.dir_id)
            if ld is not None and ld.online:
                with contextlib.suppress(LogDirOfflineError):
                    await ld.run(delete_partition_dir, ld.path, f.name, timeout=math.inf)

    async def _serve_http(self) -> None:
        cfg = self.cfg
        controller_names = set(cfg.controller_listener_names or [])
        own = [e for e in cfg.listener_list if e.name not in controller_names]
        if not own:
            raise StartupError(f"{cfg.source}: listeners has no broker listener (only controller listeners)")
        endpoint = own[0]
        self.app = create_app({}, health=self._health)
        self.metrics = BrokerMetrics(self.app[REGISTRY], self.stats)
        try:
            self._runner, self.port = await start_server(self.app, endpoint.host or "0.0.0.0", endpoint.port)
        except OSError as e:
            raise StartupError(f"cannot listen on {endpoint}: {e.strerror or e}") from None

    def _spawn(self, coro: Awaitable[Any], name: str) -> None:
        task = asyncio.get_running_loop().create_task(coro, name=name)  # type: ignore[arg-type]

        def done(t: asyncio.Task[Any]) -> None:
            if t.cancelled():
                return
            exc = t.exception()
            if exc is not None:
                log.error("broker task failed", task=name, error=repr(exc), exc_info=exc)
                self.fatal(f"internal task {name} failed: {exc!r}")

        task.add_done_callback(done)
        self._tasks.append(task)

    def _probed_dirs(self) -> list[LogDir]:
        out = list(self.log_dirs.values())
        if self.metadata_dir is not None and self.metadata_dir not in out:
            out.append(self.metadata_dir)
        return out

    # ---- running -------------------------------------------------------------------------------

    async def run(self) -> int:
        """Until a shutdown completes or a fatal error; returns the exit code.

        Stopping is bounded: after a fatal error Kafka halts at once; here the broker gets
        STOP_TIMEOUT_S to close files and sockets in order, then exits anyway.
        """
        await self.stopped.wait()
        try:
            await asyncio.wait_for(self._stop(), STOP_TIMEOUT_S)
        except TimeoutError:
            log.warning("stopping took too long; exiting without finishing", timeout_s=STOP_TIMEOUT_S)
        return self.exit_code or 0

    def fatal(self, reason: str) -> None:
        if self.exit_code is not None:
            return
        log.error("broker shutting down", reason=reason)
        self.exit_code = 1
        self.exit_reason = reason
        self.stopped.set()

    def request_shutdown(self) -> None:
        """SIGTERM: controlled shutdown, bounded by broker.session.timeout.ms."""
        if self._shutting_down or self.exit_code is not None:
            return
        self._shutting_down = True
        lc = self.lifecycle
        if lc is None or not lc.registered:
            self.exit_code = 0
            self.exit_reason = "stopped before registering"
            self.stopped.set()
            return
        lc.begin_controlled_shutdown(self.now_ms())
        self._wakeup.set()

        async def deadline() -> None:
            await asyncio.sleep(self.cfg.broker_session_timeout_ms / 1000)
            if self.exit_code is None:
                log.warning("controlled shutdown did not complete in time; stopping anyway")
                self.exit_code = 0
                self.exit_reason = "controlled shutdown timed out"
                self.stopped.set()

        self._spawn(deadline(), "shutdown-deadline")

    async def _stop(self) -> None:
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self.log_manager is not None:
            await self.log_manager.stop()
        if self._local is not None:
            await self._local.close()
        if self._runner is not None:
            await self._runner.cleanup()
        for c in (self._client, self._fetch_client):
            if c is not None:
                await c.close()
        for ld in self._probed_dirs():
            ld.close()
        log.info("broker stopped", exit_code=self.exit_code, reason=self.exit_reason)

    # ---- lifecycle and assignments -------------------------------------------------------------

    async def _lifecycle_loop(self) -> None:
        lc = self.lifecycle
        assert lc is not None and self.loader is not None
        while True:
            self._wakeup.clear()
            now = self.now_ms()
            for out in lc.poll(now):
                if isinstance(out, SendRegistration):
                    self._spawn(self._send_registration(out), "broker-registration")
                elif isinstance(out, SendHeartbeat):
                    self._spawn(self._send_heartbeat(out), "broker-heartbeat")
                elif isinstance(out, Shutdown):
                    if out.clean:
                        self.exit_code = 0
                        self.exit_reason = out.reason
                        self.stopped.set()
                    else:
                        self.fatal(out.reason)
                    return
            epoch = lc.broker_epoch if lc.registered else -1
            req = self.assignments.poll(now, ImageReplicaView(self.loader.image, self.broker_id), epoch)
            if req is not None:
                self._spawn(self._send_assignments(req), "assign-replicas-to-dirs")
            wakes = [w for w in (lc.next_wakeup_ms(), self.assignments.next_wakeup_ms()) if w is not None]
            timeout = max(0, min(wakes) - now) / 1000 if wakes else None
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wakeup.wait(), timeout)

    async def _call(self, api: str, req: Any) -> tuple[Any, str | None]:
        assert self._client is not None
        try:
            return await self._client.call(api, req), None
        except (RpcConnectionError, RpcError) as e:
            return None, str(e)

    async def _send_registration(self, out: SendRegistration) -> None:
        resp, err = await self._call("BrokerRegistration", out.request)
        assert self.lifecycle is not None
        self.lifecycle.on_registration_response(self.now_ms(), resp, err)
        self._wakeup.set()

    async def _send_heartbeat(self, out: SendHeartbeat) -> None:
        resp, err = await self._call("BrokerHeartbeat", out.request)
        lc = self.lifecycle
        assert lc is not None and self.loader is not None
        lc.on_heartbeat_response(self.now_ms(), resp, err)
        if lc.state is BrokerState.RUNNING and self.unfenced_at is None:
            self.unfenced_at = time.monotonic()
            log.info(
                "broker is running (unfenced)",
                seconds_since_start=round(self.unfenced_at - self.started_at, 3),
            )
        if not self.published and lc.state in (BrokerState.RECOVERY, BrokerState.RUNNING):
            self._publish_first()
        self._wakeup.set()

    async def _send_assignments(self, req: Any) -> None:
        self.assignment_bytes += len(codec.encode(req.to_wire(0, "msgpack"), "msgpack"))
        resp, err = await self._call("AssignReplicasToDirs", req)
        self.assignments.on_response(self.now_ms(), resp, err)
        self._update_readiness()
        self._wakeup.set()

    # ---- metadata ------------------------------------------------------------------------------

    def _on_image(self, image: MetadataImage, delta: MetadataDelta | None) -> None:
        lc, rm = self.lifecycle, self.log_manager
        assert lc is not None and rm is not None
        lc.set_metadata_offset(image.offset)
        mv = image.metadata_version
        if self.dirs.multi_dir and mv is not None and mv < JBOD_LEVEL:
            self.fatal(
                f"Multiple log directories (aka JBOD) are not supported in the current metadata.version {mv}; "
                f"it must be at least {JBOD_LEVEL} (3.7-IV2)"
            )
            return
        self._maybe_reregister(image)
        if self.published:
            if delta is None:
                rm.publish(image)
            else:
                changes = delta.local_changes(self.broker_id)
                changed = {*changes.leaders, *changes.followers, *changes.directory_ids}
                if changed or changes.deletes:
                    rm.publish(image, changed, changes.deletes)
                else:
                    rm.image = image
        elif lc.state in (BrokerState.RECOVERY, BrokerState.RUNNING):
            self._publish_first()
        self._update_readiness()
        self._wakeup.set()

    def _publish_first(self) -> None:
        assert self.log_manager is not None and self.loader is not None
        self.published = True
        image = self.loader.image
        log.info("publishing the first metadata image to the replica manager", metadata_offset=image.offset)
        self.log_manager.publish(image)

    def _maybe_reregister(self, image: MetadataImage) -> None:
        lc = self.lifecycle
        assert lc is not None
        reg = image.cluster.brokers.get(self.broker_id)
        if (
            reg is not None
            and lc.registered
            and reg.incarnation_id == self.incarnation_id
            and not reg.directories
            and (image.metadata_version or 0) >= JBOD_LEVEL
        ):
            lc.request_reregistration(self.now_ms())

    def _on_replicas_changed(self) -> None:
        self._update_readiness()
        self._wakeup.set()

    def _update_readiness(self) -> None:
        """KIP-858: want to stay fenced until caught up and every hosted replica is placed where it lives.

        Only while starting: once ready the broker never asks to be fenced again (that would fence a
        running broker every time a topic is created).
        """
        lc, hosted, rm = self.lifecycle, self.hosted, self.log_manager
        if lc is None or hosted is None or rm is None or self.ready_latched:
            return
        ready = self.published and hosted.ready_to_unfence() and self.assignments.queued == 0 and rm.settled
        if ready:
            self.ready_latched = True
            log.info(
                "every hosted replica is placed in the metadata; ready to unfence",
                replicas=len(hosted.replicas),
                offline_replicas=hosted.offline_count(),
            )
            lc.set_ready_to_unfence(True, self.now_ms())

    # ---- log dirs ------------------------------------------------------------------------------

    def _on_dir_failure(self, ld: LogDir, exc: BaseException) -> None:
        """LogDir's failure channel: called once per dir, on the loop thread."""
        path = str(ld.path)
        self._failed_paths[path] = (str(ld.dir_id), repr(exc))
        if self.metrics is not None:
            self.metrics.dir_failures.labels(path).inc()
        if ld is self.metadata_dir:
            self.fatal(f"metadata.log.dir {path} failed: {exc!r}")
            return
        log.error(
            "log dir failed; its replicas are offline", path=path, dir_id=str(ld.dir_id), error=repr(exc)
        )
        if self.log_manager is not None:
            n = self.log_manager.fail_dir(ld.dir_id)
            log.warning("replicas taken offline", path=path, replicas=n)
        if self.lifecycle is not None:
            self.lifecycle.on_dir_failure(ld.dir_id, self.now_ms())
        if not any(d.online for d in self.log_dirs.values()):
            self.fatal("all log dirs are offline")
        self._wakeup.set()

    async def _probe_loop(self, ld: LogDir) -> None:
        interval = self.cfg.log_dir_probe_interval_ms / 1000
        timeout = max(PROBE_TIMEOUT_MIN_S, 10 * interval)
        while ld.online:
            await asyncio.sleep(interval)
            with contextlib.suppress(LogDirOfflineError):
                await ld.run(ld.probe, timeout=timeout)

    # ---- views ---------------------------------------------------------------------------------

    def stats(self) -> BrokerStats:
        lc, hosted = self.lifecycle, self.hosted
        dirs = [DirStat(str(ld.path), str(d), not ld.online) for d, ld in self.log_dirs.items()]
        dirs += [DirStat(p, "", True) for p in self.dirs.offline]
        return BrokerStats(
            state=int(lc.state) if lc else 0,
            fenced=lc.fenced if lc else True,
            metadata_offset=self.loader.image.offset if self.loader else -1,
            offline_replicas=hosted.offline_count() if hosted else 0,
            queued_assignments=self.assignments.queued,
            replicas=len(hosted.replicas) if hosted else 0,
            assignment_requests=self.assignments.requests_sent,
            assignments_sent=self.assignments.assignments_sent,
            dirs=tuple(sorted(dirs, key=lambda d: d.path)),
        )

    def _health(self) -> dict[str, Any]:
        lc, hosted = self.lifecycle, self.hosted
        online = {str(ld.path): str(d) for d, ld in self.log_dirs.items() if ld.online}
        offline = {p: {"directory_id": i or None, "reason": r} for p, (i, r) in self._failed_paths.items()}
        return {
            "status": "ok",
            "broker_id": self.broker_id,
            "broker_state": lc.state.name if lc else BrokerState.NOT_RUNNING.name,
            "registered": lc.registered if lc else False,
            "broker_epoch": lc.broker_epoch if lc else -1,
            "fenced": lc.fenced if lc else True,
            "ready_to_unfence": lc.ready_to_unfence if lc else False,
            "metadata_offset": self.loader.image.offset if self.loader else -1,
            "dirs": {"online": online, "offline": offline},
            "offline_log_dirs_acknowledged": {str(d): a for d, a in lc.offline_dirs.items()} if lc else {},
            "queued_replica_to_dir_assignments": self.assignments.queued,
            "assign_replicas_to_dirs_requests": self.assignments.requests_sent,
            "assignments_sent": self.assignments.assignments_sent,
            "assign_replicas_to_dirs_bytes": self.assignment_bytes,
            "replicas": hosted.summary() if hosted else {},
            "seconds_to_unfence": None
            if self.unfenced_at is None
            else round(self.unfenced_at - self.started_at, 3),
            "seconds_from_server_start_to_unfence": None
            if self.unfenced_at is None
            else round(self.unfenced_at - self.server_started_at, 3),
        }
