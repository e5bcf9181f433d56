"""ZkControllerShell: the ZooKeeper-mode controller at work, while this broker holds `/controller`.

It wires the sans-IO `ZkControllerCore` to ZooKeeper and to the brokers:

- one event at a time (Kafka's ControllerEventManager): watches on `/brokers/ids`,
  `/brokers/topics`, `/admin/delete_topics` and `/log_dir_event_notification`, the brokers'
  answers, AlterPartition and ControlledShutdown requests, the preferred-leader timer;
- each event's ZooKeeper writes go in one multi-op that first checks `/controller_epoch` still has
  the version this controller wrote, so a deposed controller cannot write; only once ZooKeeper took
  them does the core replay them, and only then do the event's requests leave;
- one sender per broker (Kafka's RequestSendThread) keeps that broker's requests in order and retries
  each until the broker answers or leaves.

A write refused because `/controller_epoch` moved means another broker is controller: the shell
stops and tells its owner. A partition state znode that moved under the controller (written by
someone else) is read again into the core, and the event's other effects are dropped; the next
event works from what ZooKeeper holds.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Awaitable, Callable
from typing import Any

import structlog

from controller.zk import zk_state
from controller.zk.core import ZkControllerCore, ZkControllerResult
from controller.zk.requests import BrokerRequest, LeaderAndIsrOut, StopReplicaOut
from controller.zk.sender import BrokerSender
from controller.zk.wire import RequestWire
from kraftpy.zookeeper import ZkBadVersionError, ZkClient, ZkError
from protocol import znodes
from protocol.errors import Errors, KafkaError

log = structlog.get_logger("controller.zk")


Event = Callable[[], Awaitable[None]]


def _resigned() -> KafkaError:
    return KafkaError(Errors.NOT_CONTROLLER, "the controller resigned before the request was handled")


class ZkControllerShell:
    def __init__(
        self,
        zk: ZkClient,
        broker_id: int,
        epoch: int,
        epoch_zk_version: int,
        *,
        unclean_leader_election: bool = False,
        auto_leader_rebalance: bool = True,
        leader_imbalance_check_interval_s: float = 300.0,
        imbalance_percentage: int = 10,
        listener_name: str | None = None,
        peer_ssl: ssl.SSLContext | None = None,
        on_lost: Callable[[str], None] = lambda reason: None,
    ) -> None:
        """`peer_ssl`: the client context for the brokers' `listener_name` when it is TLS."""
        self.zk = zk
        self.broker_id = broker_id
        self.epoch = epoch
        self.epoch_zk_version = epoch_zk_version
        self.core = ZkControllerCore(
            broker_id,
            epoch,
            unclean_leader_election=unclean_leader_election,
            imbalance_percentage=imbalance_percentage,
        )
        self.wire = RequestWire(broker_id, epoch)
        self.auto_leader_rebalance = auto_leader_rebalance
        self.imbalance_interval_s = leader_imbalance_check_interval_s
        self.listener_name = listener_name
        self.peer_ssl = peer_ssl
        self.on_lost = on_lost
        self.active = False
        self._events: asyncio.Queue[Event] = asyncio.Queue()
        self._senders: dict[int, BrokerSender] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._asks: set[asyncio.Future[Any]] = set()
        """Requests from brokers waiting for their event to run."""

    # ---- lifecycle -----------------------------------------------------------------------------

    async def start(self) -> None:
        """Read the cluster from ZooKeeper, tell every broker, then follow the watches."""
        self.active = True
        snapshot = await zk_state.read_snapshot(self.zk)
        log.info(
            "became the controller",
            controller_id=self.broker_id,
            controller_epoch=self.epoch,
            brokers=sorted(snapshot.live),
            topics=len(snapshot.topics),
        )
        result = self.core.on_become_controller(snapshot)
        self._tasks.append(asyncio.create_task(self._run(), name="zk-controller-events"))
        self._enqueue(lambda: self._apply(result))
        self.zk.watch_children(znodes.BROKER_IDS, self._watched(self._brokers_changed))
        self.zk.watch_children(znodes.TOPICS, self._watched(self._topics_changed))
        self.zk.watch_children(znodes.DELETE_TOPICS, self._watched(self._deletions_changed))
        self.zk.watch_children(znodes.LOG_DIR_EVENT_NOTIFICATION, self._watched(self._log_dir_events))
        if self.auto_leader_rebalance:
            self._tasks.append(asyncio.create_task(self._rebalance_timer(), name="zk-preferred-election"))

    async def stop(self) -> None:
        """Resign: stop handling events and sending; what is in flight is dropped."""
        if not self.active:
            return
        self.active = False
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()
        for ask in self._asks:
            if not ask.done():
                ask.set_exception(_resigned())
        for s in self._senders.values():
            await s.stop()
        self._senders.clear()
        log.info("resigned as controller", controller_id=self.broker_id, controller_epoch=self.epoch)

    def _lost(self, reason: str) -> None:
        if self.active:
            log.warning("controller epoch moved: another broker is controller", reason=reason)
            self.on_lost(reason)

    # ---- requests served by the controller -----------------------------------------------------

    async def alter_partition(self, req: Any, version: int) -> Any:
        return await self._ask(
            lambda: self.core.on_alter_partition(*self.wire.alter_partition_items(req, self.core)),
            lambda resp: self.wire.alter_partition_response(req, version, resp, self.core),
        )

    async def controlled_shutdown(self, req: Any) -> Any:
        return await self._ask(
            lambda: self.core.on_controlled_shutdown(req.BrokerId, req.BrokerEpoch),
            self.wire.controlled_shutdown_response,
        )

    async def _ask(self, op: Callable[[], ZkControllerResult], answer: Callable[[Any], Any]) -> Any:
        """Run `op` as an event in turn with the watches, and answer once its writes landed. Every
        way out answers: a failed event with its error, a resignation with NOT_CONTROLLER, so a
        broker's AlterPartition or ControlledShutdown never waits out its own timeout."""
        if not self.active:
            raise KafkaError(Errors.NOT_CONTROLLER, "this broker is no longer the controller")
        done: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._asks.add(done)

        async def event() -> None:
            try:
                result = op()
                ok = await self._apply(result)
                response = answer(result.response) if ok else None
            except BaseException as e:
                if not done.done():
                    done.set_exception(e if isinstance(e, Exception) else _resigned())
                raise
            if not done.done():
                done.set_result(response)

        self._enqueue(event)
        try:
            response = await done
        except ZkError as e:
            raise KafkaError(Errors.UNKNOWN_SERVER_ERROR, f"ZooKeeper refused the write: {e.message}") from e
        finally:
            self._asks.discard(done)
        if response is None:
            if not self.active:
                raise _resigned()
            raise KafkaError(
                Errors.UNKNOWN_SERVER_ERROR, "the partition state changed in ZooKeeper under the write"
            )
        return response

    # ---- events --------------------------------------------------------------------------------

    def _enqueue(self, event: Event) -> None:
        if self.active:
            self._events.put_nowait(event)

    def _watched(self, handler: Callable[[list[str]], Awaitable[None]]) -> Callable[[list[str] | None], None]:
        def on_children(children: list[str] | None) -> None:
            if self.active:
                self._enqueue(lambda: handler(children or []))

        return on_children

    async def _run(self) -> None:
        while self.active:
            event = await self._events.get()
            try:
                await event()
            except asyncio.CancelledError:
                raise
            except ZkError as e:
                log.warning("controller event failed on ZooKeeper; it is dropped", error=e.message)
            except Exception:
                log.exception("controller event failed")

    async def _brokers_changed(self, children: list[str]) -> None:
        live = await zk_state.read_live_brokers(self.zk, children)
        await self._apply(self.core.on_broker_change(live))

    async def _topics_changed(self, children: list[str]) -> None:
        topics = dict(self.core.topics)
        for name in children:
            if name not in topics:
                assignment = await zk_state.read_topic(self.zk, name)
                if assignment is not None:
                    topics[name] = assignment
        for name in [t for t in topics if t not in children]:
            del topics[name]
        await self._apply(self.core.on_topic_change(topics))

    async def _deletions_changed(self, children: list[str]) -> None:
        await self._apply(self.core.on_topic_deletion(children))

    async def _log_dir_events(self, children: list[str]) -> None:
        notifications = await zk_state.read_log_dir_events(self.zk, children)
        if notifications:
            await self._apply(self.core.on_log_dir_event(notifications))

    async def _rebalance_timer(self) -> None:
        while True:
            await asyncio.sleep(self.imbalance_interval_s)
            self._enqueue(lambda: self._apply(self.core.on_preferred_election_check()))

    # ---- carrying a result out -----------------------------------------------------------------

    async def _apply(self, result: ZkControllerResult) -> bool:
        if not self.active:
            return False
        if result.writes:
            try:
                await zk_state.write(self.zk, self.epoch_zk_version, result.writes, self.core)
            except ZkBadVersionError as e:
                if e.index == 0:
                    self._lost("/controller_epoch changed")
                    return False
                await zk_state.reload_partition_states(self.zk, self.core, result.writes)
                log.warning("a partition state changed under the controller; reloaded", error=e.message)
                return False
            self.core.replay(result.writes)
        self._send(result.requests)
        return True

    def _send(self, requests: list[BrokerRequest]) -> None:
        live = self.core.live
        for b in [b for b, s in self._senders.items() if b not in live or live[b].epoch != s.broker.epoch]:
            s = self._senders.pop(b)
            self._tasks.append(asyncio.create_task(s.stop(), name=f"zk-controller-sender-stop-{b}"))
        for req in requests:
            sender = self._senders.get(req.broker_id)
            if sender is None:
                broker = live.get(req.broker_id)
                if broker is None:
                    continue
                url = zk_state.broker_url(broker, self.listener_name)
                if url is None:
                    log.warning("broker has no usable endpoint", broker=req.broker_id)
                    continue
                sender = self._senders[req.broker_id] = BrokerSender(
                    broker, url, self._answered, ssl=self.peer_ssl
                )
            sender.send(req, self.wire)

    def _answered(self, req: BrokerRequest, response: Any) -> None:
        if isinstance(req, LeaderAndIsrOut):
            errors = self.wire.leader_and_isr_errors(req, response)
            self._enqueue(lambda: self._apply(self.core.on_leader_and_isr_response(req.broker_id, errors)))
        elif isinstance(req, StopReplicaOut):
            errors = self.wire.stop_replica_errors(req, response)
            if any(req_delete for _, _, req_delete in req.partitions):
                self._enqueue(lambda: self._apply(self.core.on_stop_replica_response(req.broker_id, errors)))

    # ---- what the broker's metrics read ----------------------------------------------------------

    def offline_partition_count(self) -> int:
        return self.core.offline_partition_count() if self.active else 0
