"""The controller's RPC handlers (Kafka's ControllerApis): requests in, core operations on the queue.

A handler decides nothing: it names the operation, runs it through the event queue (writes wait
for their records to be durable, reads for everything written before them) and turns the queue's
own refusals into Kafka errors. Fetch and FetchSnapshot belong to the Raft client.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import structlog

from controller.event_queue import ControllerEventQueue, EventTimeoutError, QueueClosedError, WriteContext
from protocol.errors import Errors, KafkaError
from protocol.rpc.broker_heartbeat import BrokerHeartbeatRequest, BrokerHeartbeatResponse

if TYPE_CHECKING:
    from controller.core import QuorumControllerCore
    from controller.metrics import ControllerMetrics
    from controller.raft_client import SingleVoterRaftClient

log = structlog.get_logger(__name__)

Handler = Callable[[Any, int], Awaitable[Any]]


def _shutting_down() -> KafkaError:
    return KafkaError(Errors.NOT_CONTROLLER, "the controller is shutting down")


class ControllerApis:
    def __init__(
        self,
        core: QuorumControllerCore,
        queue: ControllerEventQueue,
        raft: SingleVoterRaftClient,
        metrics: ControllerMetrics,
        *,
        heartbeat_deadline_s: float,
        clock_ms: Callable[[], int],
    ) -> None:
        """`heartbeat_deadline_s`: how long a heartbeat may wait in the queue (half its interval)."""
        self._core = core
        self._queue = queue
        self._raft = raft
        self._metrics = metrics
        self._heartbeat_deadline_s = heartbeat_deadline_s
        self._clock_ms = clock_ms

    def handlers(self) -> dict[str, Handler]:
        core = self._core
        write, read = self._write, self._read
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
            "Fetch": self._raft.handle_fetch,
            "FetchSnapshot": self._raft.handle_fetch_snapshot,
        }

    def _write(self, name: str, op: Callable[[Any, int, WriteContext], Any]) -> Handler:
        async def handler(req: Any, version: int) -> Any:
            try:
                return await self._queue.write(name, lambda ctx: op(req, version, ctx))
            except QueueClosedError:
                raise _shutting_down() from None
            except EventTimeoutError as e:
                raise KafkaError(Errors.REQUEST_TIMED_OUT, str(e)) from None

        return handler

    def _read(self, name: str, fn: Callable[[Any, int], Any]) -> Handler:
        async def handler(req: Any, version: int) -> Any:
            try:
                return await self._queue.read(name, lambda: fn(req, version))
            except QueueClosedError:
                raise _shutting_down() from None

        return handler

    async def _broker_heartbeat(self, req: BrokerHeartbeatRequest, version: int) -> BrokerHeartbeatResponse:
        core = self._core

        def on_timeout() -> None:
            # processExpiredBrokerHeartbeat: the broker is alive even if the queue is overloaded.
            self._metrics.timed_out_heartbeats.inc()
            reg = core.m.cluster.registration(req.BrokerId)
            if reg is not None and reg.epoch == req.BrokerEpoch:
                core.m.heartbeats.touch(req.BrokerId, self._clock_ms(), req.CurrentMetadataOffset)
            log.warning("heartbeat timed out in the event queue", broker_id=req.BrokerId)

        try:
            return await self._queue.write(
                "processBrokerHeartbeat",
                lambda ctx: core.process_broker_heartbeat(req, version, ctx.now_ms, ctx.next_write_offset),
                deadline_s=self._heartbeat_deadline_s,
                on_timeout=on_timeout,
            )
        except EventTimeoutError:
            return BrokerHeartbeatResponse(ErrorCode=int(Errors.REQUEST_TIMED_OUT))
        except QueueClosedError:
            raise _shutting_down() from None
