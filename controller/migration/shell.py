"""MigrationShell: runs the migration driver in a controller process with ZooKeeper and broker RPCs.

It only wires: the driver decides, this does each action's I/O (ZooKeeper through the
off-loop ZkClient, records through the active term's event queue, requests through one sender
per ZooKeeper broker) and reports back. One action at a time, as the driver asks.

Fatal, as in Kafka: another controller fencing our ZooKeeper writes (MigrationFencedError), and a
copy that cannot be committed while we still lead (the next leader aborts the open transaction
and starts over). Everything else ZooKeeper or a broker answers is retried after a backoff, so a
ZooKeeper that is away makes the write-behind lag grow and then catch up.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from collections.abc import Callable, Collection, Coroutine
from typing import TYPE_CHECKING, Any

import structlog

from controller.core.result import ControllerResult
from controller.errors import halt
from controller.migration import zk_io
from controller.migration.driver import (
    Action,
    ClaimController,
    CopyZkToKRaft,
    DualWrite,
    MigrationDriver,
    MigrationDriverState,
    RecoverMigrationState,
    SendFullRequests,
    SyncKRaftToZk,
)
from controller.migration.propagator import delta_requests, full_requests
from controller.migration.zk_metadata import (
    ZkMetadata,
    begin_migration,
    end_migration,
    migration_records,
    zk_writes,
)
from controller.zk import zk_state
from controller.zk.model import LiveBroker
from controller.zk.requests import BrokerRequest
from controller.zk.sender import BrokerSender
from controller.zk.wire import RequestWire
from kraftpy.image import MetadataImage
from kraftpy.zookeeper import ZkClient, ZkError
from protocol import znodes

if TYPE_CHECKING:
    from controller.active_term import ActiveTerm

log = structlog.get_logger(__name__)

POLL_INTERVAL_S = 1.0
# A ZooKeeper broker that restarted without its KRaft registration changing is noticed this late.
LIVE_BROKERS_REFRESH_S = 5.0
# How often WAIT_FOR_BROKERS reads every topic assignment again for the brokers it names.
ASSIGNMENTS_REFRESH_S = 10.0
# Kafka's zookeeper.metadata.migration.min.batch.size is a floor; larger batches commit the copy
# in fewer round trips through the quorum.
COPY_BATCH_RECORDS = 1000


def _now_ms() -> int:
    return int(time.time() * 1000)


class MigrationShell:
    def __init__(
        self,
        *,
        node_id: int,
        voters: Collection[int],
        zookeeper_connect: str,
        session_timeout_ms: int,
        term: Callable[[], ActiveTerm | None],
        image: Callable[[], MetadataImage],
        listener_name: str | None = None,
        peer_ssl: ssl.SSLContext | None = None,
        clock_ms: Callable[[], int] = _now_ms,
    ) -> None:
        """`peer_ssl`: the client context for the brokers' `listener_name` when it is TLS."""
        self.driver = MigrationDriver(node_id, voters)
        self.node_id = node_id
        self._term = term
        self._image = image
        self._clock_ms = clock_ms
        self._listener_name = listener_name
        self._peer_ssl = peer_ssl
        self.zk = ZkClient(zookeeper_connect, session_timeout_ms=session_timeout_ms)
        self._lead: zk_io.MigrationLeadership | None = None
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._senders: dict[int, BrokerSender] = {}
        self._background: set[asyncio.Future[None]] = set()
        self._zk_live: dict[int, LiveBroker] = {}
        self._live_read_at = 0.0
        self._mirrored_view: tuple[MetadataImage, ZkMetadata] | None = None
        self._assignment_brokers: tuple[float, set[int]] | None = None
        self.zk_write_snapshot_ms = 0.0
        self.zk_write_delta_ms = 0.0

    # ---- lifecycle ---------------------------------------------------------------------------------

    async def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="migration-driver")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        await self._stop_senders()
        with contextlib.suppress(Exception):
            await self.zk.close()

    # ---- what the controller tells it ------------------------------------------------------------------

    def on_leadership(self, leading: bool, epoch: int) -> None:
        self.driver.on_leadership(leading, epoch)
        self._lead = zk_io.MigrationLeadership(self.node_id, epoch) if leading else None
        if not leading:
            self._in_background(self._stop_senders())
        self._wake.set()

    def wake(self) -> None:
        """Something was committed: the driver looks at the image on its next turn."""
        self._wake.set()

    def describe(self) -> dict[str, Any]:
        d = self.driver
        return {
            "migration_driver_state": d.state.name if d.leading else None,
            "migration_waiting_for": d.waiting_for or None,
            "zk_controller_epoch": d.zk_controller_epoch,
            "zk_write_behind_lag": d.write_behind_lag(),
        }

    async def current_image(self) -> MetadataImage:
        """The committed image, taken off the loop: folding may wait for a snapshot's fold on its
        own thread, seconds at scale, and fold pending records itself."""
        return await asyncio.get_running_loop().run_in_executor(None, self._image)

    # ---- the loop ----------------------------------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            try:
                await self.zk.start()
                break
            except ZkError as e:
                log.warning("cannot reach ZooKeeper for the migration; retrying", error=str(e))
                await asyncio.sleep(POLL_INTERVAL_S)
        while True:
            self._wake.clear()
            if self.driver.leading:
                image = await self.current_image()
                if self.driver.leading:
                    self.driver.on_image(image)
            await self._refresh_zk_brokers()
            action = self.driver.poll(self._clock_ms())
            if action is None:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), POLL_INTERVAL_S)
                continue
            await self._carry_out(action)

    async def _refresh_zk_brokers(self) -> None:
        """Only WAIT_FOR_BROKERS needs them: /brokers/ids at every turn, the brokers named in topic
        assignments every ASSIGNMENTS_REFRESH_S (reading them all is one get per topic)."""
        if not self.driver.leading or self.driver.state is not MigrationDriverState.WAIT_FOR_BROKERS:
            self._assignment_brokers = None
            return
        try:
            now = time.monotonic()
            if self._assignment_brokers is None or now - self._assignment_brokers[0] > ASSIGNMENTS_REFRESH_S:
                metadata, _ = await zk_io.read_zk_metadata(self.zk)
                self._assignment_brokers = (now, await zk_io.zk_broker_ids(self.zk, metadata))
            ids = await zk_io.zk_broker_ids(self.zk)
            self.driver.on_zk_brokers(ids | self._assignment_brokers[1])
        except ZkError as e:
            log.debug("cannot list ZooKeeper brokers", error=str(e))

    async def _carry_out(self, action: Action) -> None:
        lead = self._lead
        if lead is None or lead.kraft_epoch != action.epoch:
            self.driver.failed(action, "leadership changed", self._clock_ms())
            return
        try:
            result = await self._do(action, lead)
        except zk_io.MigrationFencedError as e:
            halt("another controller wrote to ZooKeeper during the migration", e)
        except (ZkError, OSError, TimeoutError) as e:
            self.driver.failed(action, str(e) or type(e).__name__, self._clock_ms())
            return
        except _Refused as e:
            self.driver.failed(action, str(e), self._clock_ms())
            return
        self.driver.done(action, result)

    async def _do(self, action: Action, lead: zk_io.MigrationLeadership) -> Any:
        if isinstance(action, RecoverMigrationState):
            return (await zk_io.recover_migration_state(self.zk, lead)).initial_migration_done
        if isinstance(action, ClaimController):
            epoch = await zk_io.claim_controller(self.zk, lead, self._clock_ms())
            if epoch is None:
                raise _Refused("/controller is held by an equal or newer claim")
            return epoch
        if isinstance(action, CopyZkToKRaft):
            return await self._copy(lead)
        if isinstance(action, SyncKRaftToZk):
            start = time.monotonic()
            current, _ = await zk_io.read_zk_metadata(self.zk)
            target = ZkMetadata.of_image(action.image, action.zk_controller_epoch)
            changes = zk_writes(current, target)
            n = await zk_io.write_changes(
                self.zk, lead, changes, action.image.offset, action.image.provenance.epoch
            )
            self.zk_write_snapshot_ms = (time.monotonic() - start) * 1000
            log.info("reconciled ZooKeeper with the metadata image", operations=n, offset=action.image.offset)
            return None
        if isinstance(action, SendFullRequests):
            await self._refresh_live()
            self._mirrored_view = None
            self._send(
                full_requests(action.image, self._zk_live, action.zk_controller_epoch),
                action.zk_controller_epoch,
            )
            return None
        if isinstance(action, DualWrite):
            await self._dual_write(action, lead)
            return None
        raise AssertionError(f"unknown migration action {action!r}")

    async def _dual_write(self, action: DualWrite, lead: zk_io.MigrationLeadership) -> None:
        prev, image = action.previous, action.image
        # Images share every area a delta left alone: most commits (NoOps, heartbeats) change
        # nothing ZooKeeper holds, and cost nothing here.
        zk_areas_same = (
            prev.topics is image.topics
            and prev.configs is image.configs
            and prev.producer_ids is image.producer_ids
        )
        if not zk_areas_same:
            start = time.monotonic()
            cached = self._mirrored_view
            before = (
                cached[1]
                if cached is not None and cached[0] is prev
                else ZkMetadata.of_image(prev, action.zk_controller_epoch)
            )
            after = ZkMetadata.of_image(image, action.zk_controller_epoch)
            changes = zk_writes(before, after)
            if changes:
                await zk_io.write_changes(self.zk, lead, changes, image.offset, image.provenance.epoch)
            self._mirrored_view = (image, after)
            self.zk_write_delta_ms = (time.monotonic() - start) * 1000
        restarted: set[int] = set()
        if (
            prev.cluster is not image.cluster
            or time.monotonic() - self._live_read_at > LIVE_BROKERS_REFRESH_S
        ):
            restarted = await self._refresh_live()
        if prev.cluster is not image.cluster:
            # A ZooKeeper broker's new KRaft registration: requests sent before the image showed it
            # carried an epoch it refuses, so it gets every partition again.
            before, now = _broker_view(prev), _broker_view(image)
            restarted |= {b for b in self._zk_live if b in now and before.get(b, (None,))[0] != now[b][0]}
        if zk_areas_same and not restarted and prev.cluster is image.cluster:
            return
        requests = delta_requests(
            prev,
            image,
            self._zk_live,
            action.zk_controller_epoch,
            brokers_changed=bool(restarted) or _broker_view(prev) != _broker_view(image),
            restarted=restarted,
        )
        self._send(requests, action.zk_controller_epoch)

    # ---- the copy ------------------------------------------------------------------------------------------

    async def _copy(self, lead: zk_io.MigrationLeadership) -> int:
        term = self._term()
        if term is None or term.epoch != lead.kraft_epoch:
            raise _Refused("not the active controller any more")
        start = time.monotonic()
        metadata, deleting = await zk_io.read_zk_metadata(self.zk)
        records = list(migration_records(metadata))
        log.info(
            "starting the initial migration of ZK metadata to KRaft",
            topics=len(metadata.topics),
            records=len(records),
            pending_deletions=deleting,
        )
        batches = [records[i : i + COPY_BATCH_RECORDS] for i in range(0, len(records), COPY_BATCH_RECORDS)]
        batches = [[begin_migration()], *batches, end_migration()]
        end_offset = -1
        try:
            for i, batch in enumerate(batches):
                end_offset = await term.queue.write(
                    f"zkMigration-{i}", lambda ctx, b=batch: ControllerResult.of(b, _end_offset(ctx, len(b)))
                )
        except Exception as e:
            if self._term() is term:
                halt("the initial migration could not be committed", e)
            raise _Refused("leadership moved during the initial migration") from e
        # Topics waiting for deletion were left out of the copy; their znodes go now.
        if deleting:
            from controller.migration.zk_metadata import DeleteTree

            changes = [
                DeleteTree(p)
                for t in deleting
                for p in (znodes.topic_path(t), znodes.topic_config_path(t), znodes.delete_topic_path(t))
            ]
            await zk_io.write_changes(self.zk, lead, changes, end_offset, lead.kraft_epoch)
        else:
            await zk_io.write_changes(self.zk, lead, [], end_offset, lead.kraft_epoch)
        log.info(
            "Finished initial migration of ZK metadata to KRaft",
            records=len(records),
            end_offset=end_offset,
            seconds=round(time.monotonic() - start, 3),
        )
        return end_offset

    # ---- requests to ZooKeeper brokers ---------------------------------------------------------------------

    async def _refresh_live(self) -> set[int]:
        """The ZooKeeper brokers as /brokers/ids has them now; those that appeared or restarted (a
        new znode epoch) since the last look, which need every partition they host again."""
        live = await zk_state.read_live_brokers(self.zk, await self.zk.get_children(znodes.BROKER_IDS) or [])
        restarted = {
            b for b, x in live.items() if b not in self._zk_live or self._zk_live[b].epoch != x.epoch
        }
        self._zk_live = live
        self._live_read_at = time.monotonic()
        return restarted

    def _send(self, requests: list[BrokerRequest], zk_controller_epoch: int) -> None:
        wire = RequestWire(self.node_id, zk_controller_epoch, kraft_controller=True)
        for b in [b for b, s in self._senders.items() if self._zk_live.get(b) != s.broker]:
            self._in_background(self._senders.pop(b).stop())
        for req in requests:
            sender = self._senders.get(req.broker_id)
            if sender is None:
                broker = self._zk_live.get(req.broker_id)
                url = zk_state.broker_url(broker, self._listener_name) if broker is not None else None
                if url is None:
                    continue
                sender = self._senders[req.broker_id] = BrokerSender(
                    broker, url, _ignore_answer, ssl=self._peer_ssl
                )  # type: ignore[arg-type]
            sender.send(req, wire)

    def _in_background(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _stop_senders(self) -> None:
        senders, self._senders = self._senders, {}
        await asyncio.gather(*(s.stop() for s in senders.values()), return_exceptions=True)


class _Refused(Exception):
    """A step that cannot be taken now and is retried."""


def _end_offset(ctx: Any, count: int) -> int:
    base = getattr(ctx, "next_write_offset", None)
    return base + count - 1 if isinstance(base, int) else -1


def _broker_view(image: MetadataImage) -> dict[int, tuple[int, bool]]:
    return {b.id: (b.epoch, b.fenced) for b in image.cluster.brokers.values()}


def _ignore_answer(req: BrokerRequest, response: Any) -> None:
    # The sender logs a refusal; per-partition errors change nothing the KRaft controller decides.
    return None
