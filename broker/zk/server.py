"""ZkBrokerServer: a ZooKeeper-mode broker, wired (KafkaServer).

The parts it shares with the KRaft broker: the log dirs with their executors, the failure channel,
the log manager with KIP-858's decision table, the data plane and its replica manager. What is
ZooKeeper's here:

- `registration`: `/cluster/id` and this broker's ephemeral `/brokers/ids/<id>` (its epoch);
- `election.ControllerElection`: whoever creates `/controller` runs `controller.zk.shell`;
- `handlers.ZkBrokerApis`: LeaderAndIsr, UpdateMetadata and StopReplica from the controller feed
  the log manager and the replica manager, and the metadata cache (`metadata_cache`);
- `admin.ZkControllerChannel`: CreateTopics and DeleteTopics through ZooKeeper, AlterPartition and
  ControlledShutdown to the controller broker;
- a failed log dir is written as `/log_dir_event_notification/log_dir_event_<seq>` (KIP-112), after
  the local parts have taken the dir's replicas offline; the broker stops when every dir failed.

When the ZooKeeper session expires the ephemeral nodes are gone, so the cluster treats this broker
as dead; it stops being controller at once, and registers again (with a new epoch) when a new
session is up. SIGTERM runs a controlled shutdown through the controller first.

Configured for a migration to KRaft (`migration`), the broker also registers with the KRaft quorum;
once a KRaft controller holds `/controller` it is the controller for everything above.
"""

from __future__ import annotations

import asyncio
import random
import ssl
import time
from typing import Any

import structlog
from aiohttp import web

from broker.core.assignments import AssignmentsManager
from broker.core.log_placement import LogPlacement
from broker.dataplane import DataPlane
from broker.dataplane_host import BrokerDataPlaneHost
from broker.log_dir_failure import LogDirFailure, LogDirFailureChannel
from broker.log_dirs import check_open_file_limit, open_log_dirs, start_probes, take_inventory
from broker.log_manager import LogManager
from broker.metrics import BrokerMetrics, BrokerStats, DirStat
from broker.process_state import BrokerProcess
from broker.server import dir_failure_subscribers
from broker.startup import BrokerDirs, StartupError
from broker.storage import LogConfig
from broker.storage.log_dir import LogDir
from broker.zk import registration
from broker.zk.admin import ZkControllerChannel
from broker.zk.duplicate_logs import settle_duplicates
from broker.zk.election import ControllerElection
from broker.zk.handlers import ZkBrokerApis
from broker.zk.metadata_cache import ZkMetadataCache
from broker.zk.migration import (
    ControllerKind,
    ControllerTarget,
    DirFailureAction,
    KRaftRegistration,
    controller_target,
    dir_failure_action,
    migration_configured,
)
from controller.zk import metrics as controller_metrics
from controller.zk.shell import ZkControllerShell
from kraftpy.config import ConfigError, KafkaConfig
from kraftpy.image import TopicIdPartition
from kraftpy.security.listeners import RpcListener, connection_quotas, rpc_listener, start_rpc_listener
from kraftpy.security.tls import controller_peer_context, peer_context
from kraftpy.zookeeper import ZkClient, ZkError
from protocol import znodes
from protocol.errors import Errors, KafkaError
from protocol.rpc.controlled_shutdown import ControlledShutdownRequest, ControlledShutdownResponse
from protocol.transport import REGISTRY, create_app
from protocol.uuid import Uuid

log = structlog.get_logger("broker.server")


class _NoAssignments(AssignmentsManager):
    """ZooKeeper brokers send no AssignReplicasToDirs (Kafka gives their ReplicaManager the no-op
    directory handler): where a replica lives is this broker's own business."""

    def on_assignment(self, *args: Any, **kwargs: Any) -> None:
        return None


class ZkBrokerServer(BrokerProcess):
    def __init__(
        self,
        cfg: KafkaConfig,
        zk: ZkClient,
        dirs: BrokerDirs,
        *,
        rng: random.Random | None = None,
        dataplane: bool = True,
    ) -> None:
        super().__init__()
        self.cfg = cfg
        self.zk = zk
        self.dirs = dirs
        self.broker_id = cfg.node_id
        self.rng = rng or random.Random()
        self.with_dataplane = dataplane
        self.started_at = time.monotonic()
        self.failures = LogDirFailureChannel()
        self.broker_epoch = -1
        self.registered = False
        self.log_dirs: dict[Uuid, LogDir] = {}
        self.log_manager: LogManager | None = None
        self.placement: LogPlacement | None = None
        self.dataplane: DataPlane | None = None
        self.cache = ZkMetadataCache()
        self.apis: ZkBrokerApis | None = None
        self.channel: ZkControllerChannel | None = None
        self.election: ControllerElection | None = None
        self.controller: ZkControllerShell | None = None
        self.metrics: BrokerMetrics | None = None
        self.app: web.Application | None = None
        self.port: int | None = None
        self._runner: web.AppRunner | None = None
        self._info: znodes.BrokerIdZnode | None = None
        self._shutting_down = False
        self._session_lost = False
        # Set when configured for a migration to KRaft: the registration with the KRaft quorum.
        self.kraft: KRaftRegistration | None = None
        self._rpc_listener: RpcListener | None = None
        self._peer_ssl: ssl.SSLContext | None = None
        self.connection_quotas = connection_quotas(cfg)
        """The bounds of max.connections and max.connections.per.ip over this broker's listener."""

    def now_ms(self) -> int:
        return int(asyncio.get_running_loop().time() * 1000)

    # ---- start ---------------------------------------------------------------------------------

    async def start(self) -> None:
        cfg, dirs = self.cfg, self.dirs
        # TLS files are read first: a bad keystore stops the start before anything is opened.
        served = cfg.listener_list[0].name
        try:
            self._rpc_listener = rpc_listener(cfg, served)
            # Brokers reach each other where a ZooKeeper-mode controller reaches them.
            self._peer_ssl = peer_context(cfg, cfg.inter_broker_listener_name or served)
            controller_peer_context(cfg)
        except ConfigError as e:
            raise StartupError(str(e)) from None
        self.log_dirs, _ = open_log_dirs(dirs, self.failures)
        inventory = await take_inventory(self.log_dirs)
        # No dir assignments in ZooKeeper's metadata: a log in two dirs is settled from the copies.
        await settle_duplicates(inventory, self.log_dirs)
        check_open_file_limit(len(inventory.partitions))
        online = {d: str(ld.path) for d, ld in self.log_dirs.items() if ld.online}
        self.placement = LogPlacement(
            self.broker_id,
            online,
            offline_at_start=len(dirs.offline),
            multi_dir=dirs.multi_dir,
            inventory=inventory,
        )
        self.log_manager = LogManager(
            self.broker_id,
            self.log_dirs,
            self.placement,
            _NoAssignments(self.broker_id, rng=self.rng),
            LogConfig.from_kafka_config(cfg),
            now_ms=self.now_ms,
            on_logs_changed=self._logs_changed,
        )
        self.channel = ZkControllerChannel(
            self.zk,
            cfg,
            image=lambda: self.cache.image,
            controller_url=self._controller_url,
            rng=self.rng,
            kraft_controller=self._kraft_controller_active,
            kraft_broker_epoch=lambda: self.kraft.lifecycle.broker_epoch if self.kraft is not None else -1,
            ssl_for=self._ssl_for,
        )
        if self.with_dataplane:
            host = BrokerDataPlaneHost(
                cfg,
                dirs,
                self.log_dirs,
                self.log_manager,
                broker_epoch=self._data_plane_broker_epoch,
                controller=self.channel,  # type: ignore[arg-type]
            )
            self.dataplane = DataPlane(host)
            await self.dataplane.start()
        self.apis = ZkBrokerApis(
            self.broker_id,
            log_manager=self.log_manager,
            dataplane=self.dataplane,
            cache=self.cache,
            broker_epoch=lambda: self.broker_epoch,
            kraft_broker_epoch=self._kraft_broker_epoch,
            topic_configs=self._topic_configs,
        )
        handlers = {
            **self.apis.handlers(),
            "AlterPartition": self._alter_partition,
            "ControlledShutdown": self._controlled_shutdown,
        }
        self.app = create_app(handlers, health=self._health, client_max_size=cfg.socket_request_max_bytes)
        self.metrics = BrokerMetrics(self.app[REGISTRY], self._stats)
        controller_metrics.register(
            self.app[REGISTRY], lambda: self.controller.core if self.controller else None
        )
        if self.dataplane is not None:
            self.dataplane.install(self.app)
        self._subscribe_to_dir_failures()
        await self._serve_http()
        self.log_manager.start()
        start_probes(list(self.log_dirs.values()), cfg.log_dir_probe_interval_ms, self.tasks)

        await registration.ensure_persistent_paths(self.zk)
        assert self.port is not None
        self._info = registration.broker_info(cfg, self.port)
        await self._register()
        if migration_configured(cfg):
            self.kraft = KRaftRegistration(
                cfg,
                dirs,
                self.tasks,
                now_ms=self.now_ms,
                on_shutdown=self._kraft_lifecycle_over,
                started_at=self.started_at,
            )
            self.kraft.start()
        self.zk.on_session(self._on_session)
        self.election = ControllerElection(
            self.zk, self.broker_id, on_elected=self._become_controller, on_resigned=self._resign
        )
        self.election.start()
        log.info(
            "broker started",
            mode="zookeeper",
            broker_id=self.broker_id,
            port=self.port,
            zookeeper=cfg.zookeeper_connect,
            log_dirs={str(ld.path): str(d) for d, ld in self.log_dirs.items()},
            offline_log_dirs=sorted(dirs.offline),
        )

    async def _register(self) -> None:
        assert self._info is not None
        try:
            self.broker_epoch = await registration.register_broker(
                self.zk,
                self.broker_id,
                self._info,
                wait_for_old_session_s=self.cfg.zookeeper_session_timeout_ms * 1.5 / 1000,
            )
        except registration.RegistrationError as e:
            raise StartupError(str(e)) from None
        self.registered = True

    async def _serve_http(self) -> None:
        endpoint = self.cfg.listener_list[0]
        assert self.app is not None and self._rpc_listener is not None
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

    def _subscribe_to_dir_failures(self) -> None:
        assert self.log_manager is not None and self.metrics is not None
        rm = self.dataplane.replicas if self.dataplane is not None else None
        for name, subscriber in dir_failure_subscribers(
            log_manager=self.log_manager.on_dir_failure,
            fetchers=rm.fetchers.on_dir_failure if rm is not None else None,
            replica_manager=rm.on_dir_failure if rm is not None else None,
            lifecycle=self._notify_controller,
            metrics=self.metrics.on_dir_failure,
            broker=self._on_dir_failure,
        ):
            self.failures.subscribe(name, subscriber)
        self.failures.start()

    # ---- ZooKeeper session and controllership --------------------------------------------------

    def _on_session(self, state: str) -> None:
        if self.stopped.is_set():
            return  # our own close
        if state == "LOST":
            self._session_lost = True
            self.registered = False
            log.warning("ZooKeeper session expired: this broker counts as dead until it registers again")
            if self.election is not None:
                self.tasks.spawn(self.election.resign("ZooKeeper session expired"), "zk-resign")
        elif state == "CONNECTED" and self._session_lost:
            self._session_lost = False
            self.tasks.spawn(self._reregister(), "zk-reregister")

    async def _reregister(self) -> None:
        try:
            await self._register()
        except (StartupError, ZkError) as e:
            self.fatal(f"cannot register again in ZooKeeper: {e}")
            return
        if self.election is not None and self.election.controller_id == -1:
            await self.election.elect()

    async def _become_controller(self, epoch: int, epoch_zk_version: int) -> None:
        cfg = self.cfg
        shell = ZkControllerShell(
            self.zk,
            self.broker_id,
            epoch,
            epoch_zk_version,
            unclean_leader_election=cfg.unclean_leader_election_enable,
            auto_leader_rebalance=cfg.auto_leader_rebalance_enable,
            leader_imbalance_check_interval_s=float(cfg.leader_imbalance_check_interval_seconds),
            listener_name=cfg.inter_broker_listener_name,
            peer_ssl=self._peer_ssl,
            on_lost=self._controller_lost,
        )
        self.controller = shell
        try:
            await shell.start()
        except ZkError as e:
            log.error("could not start as controller; resigning", error=e.message)
            assert self.election is not None
            await self.election.resign(f"failed to start: {e.message}")

    def _controller_lost(self, reason: str) -> None:
        if self.election is not None:
            self.tasks.spawn(self.election.resign(reason), "zk-resign")

    async def _resign(self) -> None:
        shell, self.controller = self.controller, None
        if shell is not None:
            await shell.stop()

    async def _topic_configs(self, topics: list[str]) -> dict[str, dict[str, str]]:
        out: dict[str, dict[str, str]] = {}
        for t in topics:
            try:
                found = await self.zk.get(znodes.topic_config_path(t))
            except ZkError as e:
                log.warning("cannot read a topic's configs", topic=t, error=e.message)
                continue
            if found is None:
                continue
            try:
                out[t] = znodes.TopicConfigZnode.from_bytes(found[0]).config
            except znodes.ZnodeDecodeError as e:
                log.warning("ignoring an unreadable topic config znode", topic=t, error=str(e))
        return out

    def _data_plane_broker_epoch(self) -> int:
        """The epoch this broker fetches and asks the controller with: its KRaft registration's
        once a KRaft controller is in charge (it checks ISR members against those, as Kafka's
        migrating brokers use their lifecycle manager's epoch), else its /brokers/ids znode's."""
        if self.kraft is not None and self.kraft.registered and self._kraft_controller_active():
            return self.kraft.lifecycle.broker_epoch
        return self.broker_epoch

    def _kraft_broker_epoch(self) -> int | None:
        """The epoch of this broker's KRaft registration (-1 until answered); None when it is not
        configured for a migration."""
        return self.kraft.lifecycle.broker_epoch if self.kraft is not None else None

    def _controller_target(self) -> ControllerTarget:
        election = self.election
        return controller_target(self.cfg, self.broker_id, election.znode if election is not None else None)

    def _kraft_controller_active(self) -> bool:
        return self._controller_target().kraft

    def _ssl_for(self, url: str) -> ssl.SSLContext | None:
        """A KRaft voter is dialled as the controller listener says, a broker as the brokers' does."""
        if url in {v.url for v in self.cfg.quorum_voters}:
            return controller_peer_context(self.cfg)
        return self._peer_ssl

    def _controller_url(self) -> str | None:
        target = self._controller_target()
        if target.kind is ControllerKind.KRAFT:
            return target.url
        if target.kind is ControllerKind.SELF:
            assert self.port is not None
            return f"http://127.0.0.1:{self.port}"
        if target.kind is ControllerKind.NONE:
            return None
        broker = self.cache.image.cluster.brokers.get(target.controller_id)
        ep = broker.endpoint(self.cfg.inter_broker_listener_name) if broker is not None else None
        return f"http://{ep.host}:{ep.port}" if ep is not None else None

    async def _alter_partition(self, req: Any, version: int) -> Any:
        shell = self.controller
        if shell is None:
            raise KafkaError(Errors.NOT_CONTROLLER, "this broker is not the controller")
        return await shell.alter_partition(req, version)

    async def _controlled_shutdown(
        self, req: ControlledShutdownRequest, version: int
    ) -> ControlledShutdownResponse:
        shell = self.controller
        if shell is None:
            return ControlledShutdownResponse(ErrorCode=Errors.NOT_CONTROLLER)
        return await shell.controlled_shutdown(req)

    # ---- dir failures --------------------------------------------------------------------------

    def _dir_failure_action(self) -> DirFailureAction:
        return dir_failure_action(
            migrating=self.kraft is not None,
            online_dirs_left=sum(1 for d in self.log_dirs.values() if d.online),
        )

    def _notify_controller(self, failure: LogDirFailure) -> None:
        """KIP-112: tell the controller through ZooKeeper, after the local parts are done; in
        migration mode halt here instead, before anything reaches ZooKeeper."""
        if self._dir_failure_action() is DirFailureAction.HALT:
            self._halt_on_dir_failure(failure)
            return
        data = znodes.LogDirEventZnode(broker=self.broker_id).to_bytes()

        async def write() -> None:
            try:
                await self.zk.create(
                    znodes.LOG_DIR_EVENT_NOTIFICATION + "/" + znodes.LOG_DIR_EVENT_PREFIX, data, sequence=True
                )
                log.info("log dir failure notified to the controller", path=failure.path)
            except ZkError as e:
                log.error("could not write the log dir event notification", error=e.message)

        self.tasks.spawn(write(), "zk-log-dir-event")

    def _on_dir_failure(self, failure: LogDirFailure) -> None:
        action = self._dir_failure_action()
        if action is DirFailureAction.HALT:
            # Already halted before the notification, unless that subscriber raised.
            self._halt_on_dir_failure(failure)
        elif action is DirFailureAction.NOTIFY_AND_STOP:
            self.fatal("all log dirs are offline")

    def _halt_on_dir_failure(self, failure: LogDirFailure) -> None:
        self.fatal(f"log dir {failure.path} failed; a broker in migration mode stops on any dir failure")

    def _logs_changed(self, tps: list[TopicIdPartition]) -> None:
        if self.dataplane is not None:
            self.dataplane.logs_changed_soon(tps)

    # ---- running and stopping ------------------------------------------------------------------

    def request_shutdown(self) -> None:
        """SIGTERM: controlled shutdown (ControlledShutdown to the controller), then stop; bounded
        by zookeeper.session.timeout.ms, after which the cluster would count the broker dead anyway."""
        if self._shutting_down or self.exit_code is not None:
            return
        self._shutting_down = True
        if self.kraft is not None and self._kraft_controller_active():
            # The KRaft controller moves leaderships off a broker that asks in its heartbeat; it
            # serves no ControlledShutdown (a broker not yet registered just stops).
            log.info("Notifying KRaft of controlled shutdown")
            self.kraft.begin_controlled_shutdown()
        else:
            self.tasks.spawn(self._controlled_shutdown_then_stop(), "controlled-shutdown")

        async def deadline() -> None:
            await asyncio.sleep(self.cfg.zookeeper_session_timeout_ms / 1000)
            if self.exit_code is None:
                log.warning("controlled shutdown did not complete in time; stopping anyway")
                self.exit_("controlled shutdown timed out")

        self.tasks.spawn(deadline(), "shutdown-deadline")

    def _kraft_lifecycle_over(self, clean: bool, reason: str) -> None:
        if clean:
            self.exit_("stopped")
        else:
            self.fatal(f"registration with the KRaft quorum failed: {reason}")

    async def _controlled_shutdown_then_stop(self) -> None:
        cfg = self.cfg
        if cfg.controlled_shutdown_enable and self.registered and self.channel is not None:
            req = ControlledShutdownRequest(BrokerId=self.broker_id, BrokerEpoch=self.broker_epoch)
            for attempt in range(cfg.controlled_shutdown_max_retries):
                try:
                    resp = await self.channel.call("ControlledShutdown", req, timeout=10)
                except Exception as e:  # any failure: retry, then stop anyway
                    log.warning("controlled shutdown attempt failed", attempt=attempt + 1, error=str(e))
                else:
                    if resp.ErrorCode == Errors.NONE and not resp.RemainingPartitions:
                        log.info("controlled shutdown succeeded")
                        break
                    log.info(
                        "controlled shutdown incomplete",
                        error=Errors(resp.ErrorCode).name,
                        remaining=len(resp.RemainingPartitions),
                    )
                await asyncio.sleep(cfg.controlled_shutdown_retry_backoff_ms / 1000)
        self.exit_("stopped")

    async def _stop(self) -> None:
        await self.tasks.cancel_all()
        if self.election is not None:
            await self.election.stop()
        # The session first: its ephemeral nodes go at once, so the controller moves on and a
        # restarted broker can register, even if closing a dead disk's logs below never finishes.
        await self.zk.close()
        if self.dataplane is not None:
            try:
                await asyncio.wait_for(self.dataplane.stop(), 5.0)
            except Exception as e:
                log.warning("data plane did not stop cleanly", error=repr(e))
        if self.log_manager is not None:
            await self.log_manager.stop()
        if self._runner is not None:
            await self._runner.cleanup()
        if self.channel is not None:
            await self.channel.close()
        if self.kraft is not None:
            await self.kraft.close()
        for ld in self.log_dirs.values():
            ld.close()
        log.info("broker stopped", exit_code=self.exit_code, reason=self.exit_reason)

    # ---- health and metrics --------------------------------------------------------------------

    def _stats(self) -> BrokerStats:
        placement = self.placement
        failed = self.failures.failed
        dirs = [DirStat(str(ld.path), str(d), not ld.online) for d, ld in self.log_dirs.items()]
        dirs += [DirStat(p, "", True) for p, f in failed.items() if f.dir_id is None]
        return BrokerStats(
            state=3 if self.registered else 0,
            fenced=not self.registered,
            offline_replicas=placement.offline_count() if placement else 0,
            replicas=len(placement.replicas) if placement else 0,
            dirs=tuple(sorted(dirs, key=lambda d: d.path)),
            failed_partitions=len(self._failed_partitions()),
        )

    def _failed_partitions(self) -> list[str]:
        return self.dataplane.replicas.failed_partitions() if self.dataplane is not None else []

    def _health(self) -> dict[str, Any]:
        online = {str(ld.path): str(d) for d, ld in self.log_dirs.items() if ld.online}
        offline = {
            p: {"directory_id": str(f.dir_id) if f.dir_id is not None else None, "reason": f.reason}
            for p, f in self.failures.failed.items()
        }
        election = self.election
        shell = self.controller
        return {
            "status": "ok" if self.registered else "starting",
            "mode": "zookeeper",
            "broker_id": self.broker_id,
            "registered": self.registered,
            "broker_epoch": self.broker_epoch,
            "zookeeper": self.cfg.zookeeper_connect,
            "controller": {
                "controller_id": election.controller_id if election else -1,
                "active": shell is not None and shell.active,
                "controller_epoch": shell.epoch
                if shell
                else (self.apis.controller_epoch if self.apis else -1),
                "offline_partitions": shell.offline_partition_count() if shell else 0,
            },
            "dirs": {"online": online, "offline": offline},
            "migration": self.kraft.describe() if self.kraft is not None else None,
            "replicas": self.placement.summary() if self.placement else {},
            "failed_partitions": self._failed_partitions(),
        }
