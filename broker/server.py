"""BrokerServer: the broker process, wired. Each part does one job in a module of its own:

- `log_dirs`: the `LogDir`s (one I/O executor each), the startup inventory, the probes;
- `log_dir_failure.LogDirFailureChannel`: a dir's failure, recorded once and delivered in order;
- `metadata_loader.MetadataLoader`: the local copy of `__cluster_metadata`, fetched and replayed;
- `metadata_publisher.BrokerMetadataPublisher`: each image to the log manager and the data plane;
- `log_manager.LogManager` (+ `core.log_placement`, the KIP-858 table): which log lives where;
- `dataplane.DataPlane` (its `ReplicaManager`): produce, fetch, replication, ISR;
- `lifecycle_manager.BrokerLifecycleManager`: registration, heartbeats, AssignReplicasToDirs;
- `readiness.BrokerReadiness`: when to ask to be unfenced, /healthz and /metrics.

`start` builds them in dependency order and `_stop` ends them in the reverse one. The metadata dir
failing, every log dir failing, a registration that never succeeds, or an unacknowledged dir failure
under a partition this broker leads past log.dir.failure.timeout.ms, stop the broker with exit
code 1. SIGTERM runs a controlled shutdown.
"""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any

import structlog
from aiohttp import web

from broker.controller_channel import ControllerChannel
from broker.core.assignments import AssignmentsManager, ImageReplicaView
from broker.core.controller_leader import ControllerLeader
from broker.core.lifecycle import BrokerLifecycle, LifecycleConfig
from broker.core.log_placement import LogPlacement
from broker.dataplane import CLIENT_APIS, DataPlane
from broker.dataplane_host import CONTROLLER_TIMEOUT_S, BrokerDataPlaneHost
from broker.kafka_listeners import kafka_listener
from broker.lifecycle_manager import BrokerLifecycleManager, registration_info
from broker.log_dir_failure import LogDirFailure, LogDirFailureChannel, Subscriber
from broker.log_dirs import check_open_file_limit, open_log_dirs, start_probes, take_inventory
from broker.log_manager import LogManager
from broker.metadata_loader import LocalMetadataLog, MetadataLoader
from broker.metadata_publisher import BrokerMetadataPublisher
from broker.metrics import BrokerMetrics
from broker.process_state import BrokerProcess
from broker.readiness import BrokerReadiness
from broker.replica_mover import ReplicaMover
from broker.startup import BrokerDirs, StartupError
from broker.storage import LogConfig, LogDirOfflineError
from broker.storage.log_dir import LogDir
from kraftpy.config import ConfigError, KafkaConfig
from kraftpy.image import MetadataDelta, MetadataImage, TopicIdPartition
from kraftpy.metalog import MetadataLogConfig
from kraftpy.security.listeners import RpcListener, connection_quotas, rpc_listener, start_rpc_listener
from kraftpy.security.tls import controller_peer_context
from protocol.transport import REGISTRY, add_handler, create_app
from protocol.transport.kafka_server import KafkaListener
from protocol.uuid import Uuid

log = structlog.get_logger("broker.server")

RPC_TIMEOUT_S = 5.0
DATAPLANE_STOP_TIMEOUT_S = 5.0
ASSIGNMENT_REQUESTS_IN_FLIGHT = 2
"""A starting broker reports every replica it creates before it may be unfenced: with one
AssignReplicasToDirs in flight the controller sat idle while each answer travelled back and the
broker built the next request."""


def dir_failure_subscribers(
    *,
    log_manager: Subscriber,
    fetchers: Subscriber | None,
    replica_manager: Subscriber | None,
    lifecycle: Subscriber,
    metrics: Subscriber,
    broker: Subscriber,
) -> list[tuple[str, Subscriber]]:
    """Who reacts to a log dir failure, in the order they must:

    1. the log manager: the dir's replicas go offline and their files are closed, so from here on
       nothing can open a log in the dead dir (a lookup answers KAFKA_STORAGE_ERROR);
    2. the fetchers: they stop copying into those logs;
    3. the replica manager: the partitions stop serving, parked produces are answered
       KAFKA_STORAGE_ERROR (fetchers before it, so none is restarted by the transition);
    4. the lifecycle: OfflineLogDirs goes to the controller in a heartbeat sent at once, after the
       local parts, so the new leaders it elects find this broker no longer serving them;
    5. the metrics;
    6. the broker itself, last: it stops when the metadata dir or every log dir is gone, and
       stopping must find every other part already through with the failure.

    The data plane's parts are absent when it does not run (--control-plane-only).
    """
    order: list[tuple[str, Subscriber | None]] = [
        ("log manager", log_manager),
        ("fetchers", fetchers),
        ("replica manager", replica_manager),
        ("lifecycle", lifecycle),
        ("metrics", metrics),
        ("broker", broker),
    ]
    return [(name, s) for name, s in order if s is not None]


def _rpc_listener_of(cfg: KafkaConfig) -> RpcListener:
    """The HTTP RPC listener's settings, and the controller listener's TLS files read once: a bad
    keystore or truststore stops the start before anything is opened."""
    endpoint = cfg.rpc_listener
    if endpoint is None:
        raise StartupError(f"{cfg.source}: listeners has no broker listener (only controller listeners)")
    try:
        listener = rpc_listener(cfg, endpoint.name)
        controller_peer_context(cfg)
    except ConfigError as e:
        raise StartupError(str(e)) from None
    return listener


class BrokerServer(BrokerProcess):
    def __init__(
        self, cfg: KafkaConfig, dirs: BrokerDirs, *, rng: random.Random | None = None, dataplane: bool = True
    ) -> None:
        super().__init__()
        self.cfg = cfg
        self.dirs = dirs
        self.broker_id = cfg.node_id
        self.rng = rng or random.Random()
        self.incarnation_id = Uuid.random()
        # Who the active controller is, as the fetcher, the lifecycle and the data plane learn it.
        self.controller_leader = ControllerLeader([v.id for v in cfg.quorum_voters])
        self.with_dataplane = dataplane
        self.started_at = time.monotonic()
        """Process start (set by main); the figure "seconds_to_unfence" counts from here."""
        self.failures = LogDirFailureChannel()
        self.assignments = AssignmentsManager(
            self.broker_id, rng=self.rng, max_in_flight=ASSIGNMENT_REQUESTS_IN_FLIGHT
        )
        self.log_dirs: dict[Uuid, LogDir] = {}
        self.metadata_dir: LogDir | None = None
        self.log_manager: LogManager | None = None
        self.dataplane: DataPlane | None = None
        self.lifecycle: BrokerLifecycle | None = None
        self.driver: BrokerLifecycleManager | None = None
        self.loader: MetadataLoader | None = None
        self.publisher: BrokerMetadataPublisher | None = None
        self.readiness: BrokerReadiness | None = None
        self.metrics: BrokerMetrics | None = None
        self.app: web.Application | None = None
        self.port: int | None = None
        self._runner: web.AppRunner | None = None
        self.kafka_ports: dict[str, int] = {}
        self._kafka_listeners: list[KafkaListener] = []
        self._client: ControllerChannel | None = None
        self._fetch_client: ControllerChannel | None = None
        self._local: LocalMetadataLog | None = None
        self._shutting_down = False
        self._rpc_listener: RpcListener | None = None
        self.connection_quotas = connection_quotas(cfg)
        """The bounds of max.connections and max.connections.per.ip over this broker's listeners."""

    def now_ms(self) -> int:
        return int(asyncio.get_running_loop().time() * 1000)

    # ---- start ---------------------------------------------------------------------------------

    async def start(self) -> None:
        server_started_at = time.monotonic()
        cfg, dirs = self.cfg, self.dirs
        self._rpc_listener = _rpc_listener_of(cfg)
        self.log_dirs, self.metadata_dir = open_log_dirs(dirs, self.failures)
        inventory = await take_inventory(self.log_dirs)
        check_open_file_limit(len(inventory.partitions))
        delta = await self._open_metadata_log()

        online = {d: str(ld.path) for d, ld in self.log_dirs.items() if ld.online}
        placement = LogPlacement(
            self.broker_id,
            online,
            offline_at_start=len(dirs.offline),
            multi_dir=dirs.multi_dir,
            inventory=inventory,
        )
        self.log_manager = LogManager(
            self.broker_id,
            self.log_dirs,
            placement,
            self.assignments,
            LogConfig.from_kafka_config(cfg),
            now_ms=self.now_ms,
            on_change=self._placement_changed,
            on_logs_changed=self._logs_changed,
        )
        self.log_manager.configured_paths = set(cfg.log_dir_list)
        self.log_manager.mover = ReplicaMover(
            self.log_manager,
            self.assignments,
            LogConfig.from_kafka_config(cfg),
            now_ms=self.now_ms,
            bytes_per_second=cfg.replica_alter_log_dirs_io_max_bytes_per_second,
            round_bytes=cfg.replica_fetch_max_bytes,
            on_change=self._placement_changed,
        )
        self.lifecycle = BrokerLifecycle(
            registration_info(cfg, dirs.cluster_id, self.incarnation_id),
            sorted(online),
            LifecycleConfig.from_kafka_config(cfg),
            rng=self.rng,
            leads_partitions_in_dir=placement.leads_partitions_in_dir,
        )
        self.dataplane = await self._start_dataplane()

        self._client = ControllerChannel.for_config(cfg, timeout=RPC_TIMEOUT_S, leader=self.controller_leader)
        self._fetch_client = ControllerChannel.for_config(
            cfg, timeout=RPC_TIMEOUT_S, leader=self.controller_leader
        )
        self.driver = BrokerLifecycleManager(
            self.lifecycle,
            self.assignments,
            self._client,
            self.tasks,
            now_ms=self.now_ms,
            replica_view=self._replica_view,
            on_heartbeat=self._heartbeat_answered,
            on_assignments=self._placement_changed,
            on_shutdown=self._lifecycle_over,
            started_at=self.started_at,
        )
        assert self._local is not None
        loader = self.loader = MetadataLoader(
            self._local, self._fetch_client, dirs.cluster_id, self.broker_id, self._on_image
        )
        self.publisher = BrokerMetadataPublisher(
            self.broker_id,
            self.incarnation_id,
            multi_dir=dirs.multi_dir,
            lifecycle=self.lifecycle,
            log_manager=self.log_manager,
            dataplane=self.dataplane,
            image=lambda: loader.image,
            now_ms=self.now_ms,
            fatal=self.fatal,
            on_published=self._placement_changed,
        )
        self.readiness = BrokerReadiness(
            self.broker_id,
            log_dirs=self.log_dirs,
            failures=self.failures,
            placement=placement,
            log_manager=self.log_manager,
            assignments=self.assignments,
            lifecycle=self.lifecycle,
            driver=self.driver,
            publisher=self.publisher,
            loader=self.loader,
            server_started_at=server_started_at,
            failed_partitions=self._failed_partitions,
            now_ms=self.now_ms,
        )
        self.app = create_app({}, health=self._health, client_max_size=cfg.socket_request_max_bytes)
        self.metrics = BrokerMetrics(self.app[REGISTRY], self.readiness.stats)
        if self.dataplane is not None:
            self.dataplane.install(self.app)
            self.log_manager.mover.pause_writes = self.dataplane.replicas.paused
        add_handler(self.app, "AlterReplicaLogDirs", self.log_manager.mover.alter_replica_log_dirs)
        self._install_guard(cfg)
        self._subscribe_to_dir_failures()

        self.loader.start_from(delta)
        self.lifecycle.set_metadata_offset(self.loader.image.offset)
        log.info(
            "local metadata log replayed",
            metadata_offset=self.loader.image.offset,
            log_end_offset=self._local.log_end_offset,
        )
        await self._serve_http()
        self.log_manager.start()
        self.driver.start()
        self.tasks.spawn(self.loader.run(), "metadata-fetch")
        start_probes(self._probed_dirs(), cfg.log_dir_probe_interval_ms, self.tasks)
        log.info(
            "broker started",
            broker_id=self.broker_id,
            port=self.port,
            log_dirs={str(ld.path): str(d) for d, ld in self.log_dirs.items()},
            offline_log_dirs=sorted(dirs.offline),
            metadata_dir=dirs.metadata_dir,
            incarnation_id=str(self.incarnation_id),
            dataplane=self.dataplane is not None,
        )

    async def _open_metadata_log(self) -> MetadataDelta:
        assert self.metadata_dir is not None
        self._local = LocalMetadataLog(self.metadata_dir, MetadataLogConfig.from_server_config(self.cfg))
        try:
            return await self._local.open()
        except LogDirOfflineError as e:
            raise StartupError(f"metadata.log.dir {self.dirs.metadata_dir} failed: {e.message}") from None
        except Exception as e:
            raise StartupError(f"cannot load the metadata log in {self.dirs.metadata_dir}: {e}") from None

    async def _start_dataplane(self) -> DataPlane | None:
        """Produce/Fetch/replication, when asked for and when it can start.

        A data plane that fails to start is logged and left out: the control plane (registration,
        heartbeats, dir failures) must keep working whatever happens to the data path.
        """
        if not self.with_dataplane:
            return None
        assert self.log_manager is not None and self.lifecycle is not None
        lc = self.lifecycle
        host = BrokerDataPlaneHost(
            self.cfg,
            self.dirs,
            self.log_dirs,
            self.log_manager,
            broker_epoch=lambda: lc.broker_epoch if lc.registered else -1,
            controller=ControllerChannel.for_config(
                self.cfg, timeout=CONTROLLER_TIMEOUT_S, leader=self.controller_leader
            ),
        )
        dataplane = DataPlane(host)
        try:
            await dataplane.start()
        except Exception:
            log.exception("data plane failed to start; serving the control plane only")
            await host.close()
            return None
        return dataplane

    def _install_guard(self, cfg: KafkaConfig) -> None:
        """ACL checks (authorizer.class.name) and the node binding, on the HTTP RPC and every Kafka listener."""
        from kraftpy.security.guard import process_guard
        from protocol.transport import set_guard
        from protocol.transport.server import SPECS

        loader = self.loader
        assert loader is not None

        def topic_name(topic_id: Any) -> str | None:
            topic = loader.image.topics.get_topic(topic_id)
            return topic.name if topic is not None else None

        def acls() -> tuple[object, Any]:
            store = loader.image.acls
            return store, store.records

        set_guard(self.app, process_guard(cfg, acls, topic_name, self.app[SPECS]))

    def _subscribe_to_dir_failures(self) -> None:
        assert self.log_manager is not None and self.driver is not None and self.metrics is not None
        rm = self.dataplane.replicas if self.dataplane is not None else None
        for name, subscriber in dir_failure_subscribers(
            log_manager=self.log_manager.on_dir_failure,
            fetchers=rm.fetchers.on_dir_failure if rm is not None else None,
            replica_manager=rm.on_dir_failure if rm is not None else None,
            lifecycle=self.driver.on_dir_failure,
            metrics=self.metrics.on_dir_failure,
            broker=self._on_dir_failure,
        ):
            self.failures.subscribe(name, subscriber)
        self.failures.start()

    async def _serve_http(self) -> None:
        cfg = self.cfg
        endpoint = cfg.rpc_listener
        assert self.app is not None and endpoint is not None and self._rpc_listener is not None
        try:
            self._runner, self.port = await start_rpc_listener(
                self.app,
                self._rpc_listener,
                endpoint.host or "0.0.0.0",
                endpoint.port,
                self.connection_quotas,
            )
        except OSError as e:
            raise StartupError(f"cannot listen on {endpoint}: {e.strerror or e}") from None
        loader = self.loader
        for spec in cfg.kafka_listeners:
            try:
                listener = kafka_listener(
                    cfg,
                    spec,
                    self.app,
                    CLIENT_APIS,
                    # SCRAM credentials as the latest image has them
                    lambda: loader.image if loader is not None else None,
                    self.connection_quotas,
                )
            except ConfigError as e:
                raise StartupError(str(e)) from None
            try:
                self.kafka_ports[spec.name] = await listener.start(spec.host, spec.port)
            except OSError as e:
                raise StartupError(f"cannot listen on {spec}: {e.strerror or e}") from None
            self._kafka_listeners.append(listener)

    def _probed_dirs(self) -> list[LogDir]:
        out = list(self.log_dirs.values())
        if self.metadata_dir is not None and self.metadata_dir not in out:
            out.append(self.metadata_dir)
        return out

    # ---- running -------------------------------------------------------------------------------

    def request_shutdown(self) -> None:
        """SIGTERM: controlled shutdown, bounded by broker.session.timeout.ms."""
        if self._shutting_down or self.exit_code is not None:
            return
        self._shutting_down = True
        lc = self.lifecycle
        if lc is None or self.driver is None or not lc.registered:
            self.exit_("stopped before registering")
            return
        self.driver.begin_controlled_shutdown()

        async def deadline() -> None:
            await asyncio.sleep(self.cfg.broker_session_timeout_ms / 1000)
            if self.exit_code is None:
                log.warning("controlled shutdown did not complete in time; stopping anyway")
                self.exit_("controlled shutdown timed out")

        self.tasks.spawn(deadline(), "shutdown-deadline")

    async def _stop(self) -> None:
        """The parts `start` built, ended in the reverse order."""
        await self.tasks.cancel_all()
        if self.dataplane is not None:
            try:  # before the log manager closes the logs
                await asyncio.wait_for(self.dataplane.stop(), DATAPLANE_STOP_TIMEOUT_S)
            except Exception as e:
                log.warning("data plane did not stop cleanly", error=repr(e))
        if self.log_manager is not None:
            await self.log_manager.stop()
        if self._local is not None:
            await self._local.close()
        for listener in self._kafka_listeners:
            await listener.stop()
        if self._runner is not None:
            await self._runner.cleanup()
        for c in (self._client, self._fetch_client):
            if c is not None:
                await c.close()
        for ld in self._probed_dirs():
            ld.close()
        log.info("broker stopped", exit_code=self.exit_code, reason=self.exit_reason)

    # ---- between the parts ---------------------------------------------------------------------

    def _on_image(self, image: MetadataImage, delta: MetadataDelta | None) -> None:
        assert self.publisher is not None
        self.publisher.on_image(image, delta)

    def _heartbeat_answered(self) -> None:
        assert self.publisher is not None
        self.publisher.maybe_publish_first()

    def _placement_changed(self) -> None:
        if self.readiness is not None:
            self.readiness.update()
        if self.driver is not None:
            self.driver.wake()

    def _logs_changed(self, tps: list[TopicIdPartition]) -> None:
        if self.dataplane is not None:
            self.dataplane.logs_changed_soon(tps)

    def _replica_view(self) -> ImageReplicaView:
        assert self.loader is not None
        return ImageReplicaView(self.loader.image, self.broker_id)

    def _lifecycle_over(self, clean: bool, reason: str) -> None:
        if clean:
            self.exit_(reason)
        else:
            self.fatal(reason)

    def _on_dir_failure(self, failure: LogDirFailure) -> None:
        if failure.log_dir is self.metadata_dir:
            self.fatal(f"metadata.log.dir {failure.path} failed: {failure.reason}")
        elif not any(d.online for d in self.log_dirs.values()):
            self.fatal("all log dirs are offline")

    def _failed_partitions(self) -> list[str]:
        return self.dataplane.replicas.failed_partitions() if self.dataplane is not None else []

    def _health(self) -> dict[str, Any]:
        if self.readiness is None:
            return {"status": "starting", "broker_id": self.broker_id}
        leader = self.controller_leader
        return {
            **self.readiness.health(),
            "controller": {"leader_id": leader.leader_id, "leader_epoch": leader.leader_epoch},
        }
