"""The controller process: one voter of the KRaft quorum, active while it leads.

Start order (each step only once the previous one worked, so a failed start tears down only what
was started): load the storage, bootstrap metadata and the latest snapshot, in one hop onto the
log's thread (`startup`); the snapshot generator (`snapshots`); the Raft client (`raft_client`),
which replays the log's committed records as the quorum learns them; RPC on the controller
listener (`handlers`). A lone voter elects itself at once, and `start` returns once it is active.

Every voter replays committed records into the same controller state (a hot standby). The one that
leads, once it has applied everything before its epoch, claims: it opens an `ActiveTerm` (event
queue, log sink, timers), writes the activation records and its own registration, and serves
brokers. When it stops leading, the term is aborted (waiting callers get NOT_CONTROLLER) and the
state is rebuilt from the committed prefix, since the records it appended may be cut.

Stop runs the teardowns in reverse, after refusing new work: resign (EndQuorumEpoch) so another
voter takes over at once, stop listening, end the term, stop snapshots and the Raft client, close
the log. Problems an operator can fix surface as StartupError; a failure while running halts.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import ssl
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any

import structlog
from aiohttp import web

from controller.active_term import ActiveTerm
from controller.committed_image import CommittedImage
from controller.errors import StartupError, halt
from controller.handlers import ControllerApis
from controller.health import controller_stats, health
from controller.log_sink import PreparedAppend
from controller.metrics import ControllerMetrics, ControllerStats
from controller.raft_client import NotLeaderError, RaftClient
from controller.raft_transport import HttpRaftTransport
from controller.registration_manager import ControllerRegistrationManager
from controller.snapshots import SnapshotGenerator
from controller.startup import load_metadata, log_loaded, rebuild, reload_snapshot
from controller.story import ControllerStory
from kraftpy import heap
from kraftpy.config import ConfigError
from kraftpy.metalog.snapshot_policy import SnapshotPolicy
from kraftpy.raft.config import QuorumConfig
from kraftpy.raft.messages import Entry
from kraftpy.security.listeners import RpcListener, connection_quotas, rpc_listener, start_rpc_listener
from kraftpy.security.tls import controller_peer_context, peer_context
from protocol.record_batch import decode_batch, metadata_records
from protocol.transport.offload import collector_paused

if TYPE_CHECKING:
    from controller.core import QuorumControllerCore
    from controller.migration.shell import MigrationShell
    from controller.startup import LoadedMetadata
    from kraftpy.config import KafkaConfig
    from kraftpy.image import MetadataImage
    from kraftpy.metalog.files import SnapshotId

log = structlog.get_logger(__name__)

# A lone voter elects itself at once; this bounds how long `start` waits for it.
SINGLE_VOTER_CLAIM_TIMEOUT_S = 60.0


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


def quorum_config(cfg: KafkaConfig, cluster_id: str) -> QuorumConfig:
    return QuorumConfig(
        cluster_id=cluster_id,
        voters=frozenset(v.id for v in cfg.quorum_voters),
        election_timeout_ms=cfg.controller_quorum_election_timeout_ms,
        fetch_timeout_ms=cfg.controller_quorum_fetch_timeout_ms,
        election_backoff_max_ms=cfg.controller_quorum_election_backoff_max_ms,
        request_timeout_ms=cfg.controller_quorum_request_timeout_ms,
        retry_backoff_ms=cfg.controller_quorum_retry_backoff_ms,
        # The leader parks a Fetch with nothing to send, so a follower may ask again at once.
        fetch_idle_ms=0,
    )


class ControllerServer:
    """One voter. `await start()`, then `await stop()` (safe after a failed start)."""

    def __init__(self, cfg: KafkaConfig) -> None:
        from prometheus_client import CollectorRegistry, ProcessCollector

        self.cfg = cfg
        self.node_id = cfg.node_id
        self.cluster_id = ""
        self.port: int | None = None
        self._teardown = AsyncExitStack()
        self._loaded: LoadedMetadata | None = None
        self._core: QuorumControllerCore | None = None
        self._raft: RaftClient | None = None
        self._term: ActiveTerm | None = None
        self._snapshots: SnapshotGenerator | None = None
        self._story = ControllerStory()
        self._log_thread: ThreadPoolExecutor | None = None
        self._runner: web.AppRunner | None = None
        self._activated = asyncio.Event()
        self._term_tasks: set[asyncio.Task[Any]] = set()
        self._migration: MigrationShell | None = None
        self._stopping = False
        self._stopped = False
        self._rpc_listener: RpcListener | None = None
        self._peer_ssl: ssl.SSLContext | None = None
        self.connection_quotas = connection_quotas(cfg, (cfg.controller_listener_names or ["CONTROLLER"])[0])
        self.registry = CollectorRegistry()
        ProcessCollector(registry=self.registry)
        self.metrics = ControllerMetrics(self.registry, self._stats)

    @property
    def leader_epoch(self) -> int:
        return self._raft.leader_epoch if self._raft is not None else 0

    @property
    def active(self) -> bool:
        return self._term is not None and not self._stopping

    # ---- start ------------------------------------------------------------------------------------------

    async def start(self) -> None:
        cfg, teardown = self.cfg, self._teardown
        # TLS files are read first: a bad keystore is found before anything is loaded or bound.
        listener_name = (cfg.controller_listener_names or ["CONTROLLER"])[0]
        try:
            self._rpc_listener = rpc_listener(cfg, listener_name)
            self._peer_ssl = controller_peer_context(cfg)
        except ConfigError as e:
            raise StartupError(str(e)) from None
        # One thread owns the metadata log, so every call on it (appends, reads, snapshots) is ordered.
        log_thread = self._log_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="metadata-log")
        teardown.callback(log_thread.shutdown, wait=True)
        loaded = self._loaded = await asyncio.get_running_loop().run_in_executor(
            log_thread, load_metadata, cfg
        )
        teardown.callback(_close_log, loaded)
        self.cluster_id = loaded.cluster_id
        self._core = loaded.core
        log_loaded(loaded)
        voters = {v.id: v.url for v in cfg.quorum_voters}
        raft = self._raft = RaftClient(
            loaded.log,
            log_thread,
            config=quorum_config(cfg, self.cluster_id),
            node_id=self.node_id,
            listener=self,
            transport=HttpRaftTransport(voters, self.node_id, self.cluster_id, ssl=self._peer_ssl),
            on_failure=self._on_log_failure,
            append_linger_ms=cfg.controller_quorum_append_linger_ms,
        )
        snapshots = self._snapshots = SnapshotGenerator(
            CommittedImage(loaded.delta, loaded.latest_snapshot.offset if loaded.latest_snapshot else 0),
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
        self._story.seed(snapshots.committed.image())
        # Requests still open when listening stops finish here, once the term has answered them.
        teardown.push_async_callback(self._finish_requests)
        await raft.start()
        teardown.push_async_callback(raft.close)
        teardown.push_async_callback(self._end_term)
        snapshots.start_time_trigger()
        registration = ControllerRegistrationManager(
            cfg,
            voters,
            ssl=self._peer_ssl,
            leader_id=lambda: raft.leader_id,
            active=lambda: self.active,
            registered=lambda: self._core.m.cluster.controllers.get(self.node_id) if self._core else None,
        )
        registration.start()
        teardown.push_async_callback(registration.stop)
        if cfg.zookeeper_metadata_migration_enable:
            await self._start_migration(voters)
        if len(voters) == 1:
            # A lone voter elects itself at once; it listens once active, as a lone controller did.
            try:
                await asyncio.wait_for(self._activated.wait(), SINGLE_VOTER_CLAIM_TIMEOUT_S)
            except TimeoutError:
                raise StartupError("a lone voter did not become the active controller") from None

        await self._listen(
            ControllerApis(
                lambda: self._term,
                raft,
                self.metrics,
                heartbeat_deadline_s=cfg.broker_heartbeat_interval_ms / 2000,
                clock_ms=_wall_clock_ms,
                cluster_id=self.cluster_id,
                voters=cfg.quorum_voters,
            )
        )
        teardown.push_async_callback(self._stop_listening)
        log.info(
            "controller started",
            port=self.port,
            cluster_id=self.cluster_id,
            voters=sorted(voters),
            leader_epoch=self.leader_epoch,
        )

    async def _start_migration(self, voters: dict[int, str]) -> None:
        from controller.migration.shell import MigrationShell

        assert self.cfg.zookeeper_connect is not None
        shell = self._migration = MigrationShell(
            node_id=self.node_id,
            voters=list(voters),
            zookeeper_connect=self.cfg.zookeeper_connect,
            session_timeout_ms=self.cfg.zookeeper_session_timeout_ms,
            term=lambda: self._term,
            image=self._committed_image,
            # ZooKeeper brokers are reached on their inter-broker listener, as their own controller did.
            listener_name=self.cfg.inter_broker_listener_name,
            peer_ssl=peer_context(self.cfg, self.cfg.inter_broker_listener_name),
        )
        await shell.start()
        self._teardown.push_async_callback(shell.stop)

    def _committed_image(self) -> MetadataImage:
        assert self._snapshots is not None
        return self._snapshots.committed.image()

    def _install_guard(self, app: Any) -> None:
        """ACL checks from the ACLs this controller has replayed (Kafka's controller authorizes from its
        own metadata too), and the node binding."""
        from kraftpy.security.guard import process_guard
        from protocol.transport import set_guard
        from protocol.transport.server import SPECS

        def acls() -> tuple[object, Any]:
            assert self._core is not None
            manager = self._core.m.acls
            return manager.fingerprint, manager.records

        def topic_name(topic_id: Any) -> str | None:
            assert self._core is not None
            topic = self._core.m.replication.topics.get(topic_id)
            return topic.name if topic is not None else None

        set_guard(app, process_guard(self.cfg, acls, topic_name, app[SPECS]))

    async def _listen(self, apis: ControllerApis) -> None:
        from protocol.transport import create_app

        assert self._rpc_listener is not None
        endpoint = self.cfg.listener(self._rpc_listener.name)
        app = create_app(
            apis.handlers(),
            registry=self.registry,
            health=self._health,
            client_max_size=self.cfg.socket_request_max_bytes,
        )
        self._install_guard(app)
        try:
            self._runner, self.port = await start_rpc_listener(
                app, self._rpc_listener, endpoint.host or "0.0.0.0", endpoint.port, self.connection_quotas
            )
        except OSError as e:
            raise StartupError(f"cannot listen on {endpoint}: {e.strerror or e}") from None

    # ---- what the quorum decides (RaftListener) --------------------------------------------------------

    async def handle_commit(self, entries: Sequence[Entry]) -> None:
        """Batches another leader wrote, now committed: replay them (the standby stays hot)."""
        assert self._core is not None and self._snapshots is not None
        core, committed = self._core, self._snapshots.committed
        replayed = 0
        with collector_paused():
            for entry in entries:
                batch = decode_batch(entry.data, 0, False)
                if batch.is_control:
                    committed.skip_to(entry.end)
                    continue
                records = metadata_records(batch)
                core.replay_all(records, entry.offset)
                replayed += heap.lasting(records)
                committed.add(entry.offset, records, entry.epoch, batch.max_timestamp)
                self._story.on_committed(records)
            heap.after_load(replayed)
        self._snapshots.after_commit(sum(len(e.data) for e in entries))
        if self._migration is not None:
            self._migration.wake()

    async def handle_snapshot(self, snapshot_id: SnapshotId) -> None:
        """A snapshot from the leader replaced our log: load the state it holds."""
        assert self._loaded is not None and self._log_thread is not None and self._snapshots is not None
        core, delta = await asyncio.get_running_loop().run_in_executor(
            self._log_thread, reload_snapshot, self.cfg, self.cluster_id, self._loaded.log
        )
        self._core = core
        self._snapshots.reset(CommittedImage(delta, snapshot_id.offset))
        self._story.seed(self._snapshots.committed.image())
        log.info("loaded the leader's snapshot", end_offset=snapshot_id.offset, epoch=snapshot_id.epoch)

    async def handle_claim(self, epoch: int) -> None:
        """This voter leads and has applied everything before its epoch: become the active controller."""
        assert self._core is not None and self._raft is not None and self._loaded is not None
        if self._stopping:
            return
        term = self._term = ActiveTerm.open(
            self.cfg,
            self._core,
            self._raft,
            epoch,
            metrics=self.metrics,
            on_committed=self._on_committed,
            on_failure=self._on_log_failure,
            clock_ms=_wall_clock_ms,
        )
        self.metrics.new_active_controllers.inc()
        if self._migration is not None:
            self._migration.on_leadership(True, epoch)
        # The activation writes wait for their commit, which needs the Raft driver that called us.
        task = asyncio.ensure_future(self._activate(term))
        self._term_tasks.add(task)
        task.add_done_callback(self._term_tasks.discard)

    async def _activate(self, term: ActiveTerm) -> None:
        assert self._loaded is not None
        await term.activate(self._loaded.bootstrap_records, self._loaded.metadata_version_level)
        self._activated.set()

    async def handle_renounce(self, applied_offset: int) -> None:
        """Another voter leads now: end the term and go back to the committed state."""
        assert self._loaded is not None and self._log_thread is not None
        await self._abort_term("another controller leads now")
        if self._stopping:
            return  # resigned on the way out: nothing will read the state again
        self._core = await asyncio.get_running_loop().run_in_executor(
            self._log_thread, rebuild, self.cfg, self.cluster_id, self._loaded.log, applied_offset
        )

    async def _abort_term(self, why: str) -> None:
        term, self._term = self._term, None
        if term is not None and self._migration is not None:
            self._migration.on_leadership(False, term.epoch)
        if term is not None:
            await term.abort(NotLeaderError(why))
        for task in list(self._term_tasks):
            task.cancel()

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
            if self._term is not None:
                await self._term.drain()
            await self._raft.resign()
        if self._snapshots is not None:
            self._snapshots.begin_shutdown()
        await self._teardown.aclose()
        if self.port is not None:
            log.info("controller stopped")

    async def _end_term(self) -> None:
        await self._abort_term("the controller is shutting down")

    async def _stop_listening(self) -> None:
        if self._runner is not None:
            for site in list(self._runner.sites):
                with contextlib.suppress(Exception):
                    await site.stop()

    async def _finish_requests(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    # ---- commits and failures ---------------------------------------------------------------------------

    def _on_committed(self, high_watermark: int, appended: PreparedAppend) -> None:
        assert self._snapshots is not None
        self._snapshots.on_committed(appended)
        if self._term is not None:
            self._term.queue.on_committed(high_watermark)
        # The story is a log of what happened, told once the replies it would delay are on their
        # way (for 100,000 partition changes it takes a tenth of a second); call_soon keeps the
        # batches in commit order.
        asyncio.get_running_loop().call_soon(self._tell_story, appended.records)
        self.metrics.commit_batches.inc()
        if self._migration is not None:
            self._migration.wake()

    def _tell_story(self, records: Sequence[Any]) -> None:
        with collector_paused():
            self._story.on_committed(records)

    def _on_log_failure(self, exc: BaseException) -> None:
        if isinstance(exc, NotLeaderError):
            return  # the term ended; handle_renounce cleans up
        if self._term is not None:
            self._term.queue.fail(exc)
        halt("the metadata log or the Raft client failed", exc)

    # ---- what the controller reports ----------------------------------------------------------------------

    def _stats(self) -> ControllerStats:
        stats = controller_stats(
            active=self.active,
            core=self._core,
            raft=self._raft,
            queue=self._term.queue if self._term is not None else None,
            metadata_errors=int(self._loaded.log.recovery.damaged_tail) if self._loaded is not None else 0,
        )
        if self._migration is None:
            return stats
        return dataclasses.replace(
            stats,
            zk_write_behind_lag=self._migration.driver.write_behind_lag(),
            zk_write_snapshot_ms=self._migration.zk_write_snapshot_ms,
            zk_write_delta_ms=self._migration.zk_write_delta_ms,
        )

    def _health(self) -> dict[str, Any]:
        body = health(
            stopping=self._stopping,
            active=self.active,
            node_id=self.node_id,
            cluster_id=self.cluster_id,
            raft=self._raft,
        )
        if self._core is not None:
            body["zk_migration_state"] = self._core.m.features.zk_migration_state.name
        if self._migration is not None:
            body.update(self._migration.describe())
        return body


def _close_log(loaded: LoadedMetadata) -> None:
    try:
        loaded.log.close()
    except Exception:
        log.exception("closing the metadata log failed")
