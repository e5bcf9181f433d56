"""The controller's RPC handlers (Kafka's ControllerApis): requests in, core operations on the queue.

A handler decides nothing: it names the operation, runs it through the event queue (writes wait
for their records to be durable, reads for everything written before them) and turns the queue's
own refusals into Kafka errors. Only the active controller runs them: the others answer
NOT_CONTROLLER, so brokers look for the leader. The quorum's own RPCs are `raft_handlers`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import structlog

from controller.event_queue import EventTimeoutError, QueueClosedError, WriteContext
from controller.self_registration import register_from_request
from protocol.errors import Errors, KafkaError
from protocol.rpc.alter_user_scram_credentials import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
)
from protocol.rpc.broker_heartbeat import BrokerHeartbeatRequest, BrokerHeartbeatResponse
from protocol.rpc.create_acls import CreateAclsRequest, CreateAclsResponse
from protocol.rpc.delete_acls import DeleteAclsRequest, DeleteAclsResponse
from protocol.rpc.describe_acls import DescribeAclsRequest, DescribeAclsResponse
from protocol.rpc.describe_user_scram_credentials import (
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
)
from protocol.transport import collector_paused, run_large

if TYPE_CHECKING:
    from collections.abc import Sequence

    from controller.active_term import ActiveTerm
    from controller.metrics import ControllerMetrics
    from controller.raft_client import RaftClient
    from kraftpy.config import QuorumVoter

log = structlog.get_logger(__name__)

Handler = Callable[[Any, int], Awaitable[Any]]


def _shutting_down() -> KafkaError:
    return KafkaError(Errors.NOT_CONTROLLER, "the controller is shutting down")


def _not_active() -> KafkaError:
    return KafkaError(Errors.NOT_CONTROLLER, "this controller is not the active one")


class ControllerApis:
    def __init__(
        self,
        active_term: Callable[[], ActiveTerm | None],
        raft: RaftClient,
        metrics: ControllerMetrics,
        *,
        heartbeat_deadline_s: float,
        clock_ms: Callable[[], int],
        cluster_id: str,
        voters: Sequence[QuorumVoter] = (),
    ) -> None:
        """`active_term()`: the term this controller serves, None when another one is active.
        `heartbeat_deadline_s`: how long a heartbeat may wait in the queue (half its interval)."""
        self._active_term = active_term
        self._raft = raft
        self._metrics = metrics
        self._heartbeat_deadline_s = heartbeat_deadline_s
        self._clock_ms = clock_ms
        self._cluster_id = cluster_id
        self._voters = tuple(voters)

    def _term(self) -> ActiveTerm:
        term = self._active_term()
        if term is None:
            raise _not_active()
        return term

    def handlers(self) -> dict[str, Handler]:
        from controller.raft_handlers import RaftApis

        write = self._write
        return {
            "BrokerRegistration": write(
                "registerBroker",
                lambda core, r, v, ctx: core.register_broker(r, v, ctx.now_ms, ctx.next_write_offset),
            ),
            "BrokerHeartbeat": self._broker_heartbeat,
            "AssignReplicasToDirs": write(
                "assignReplicasToDirs", lambda core, r, v, ctx: core.assign_replicas_to_dirs(r, v)
            ),
            "CreateTopics": write("createTopics", lambda core, r, v, ctx: core.create_topics(r, v)),
            "DeleteTopics": write("deleteTopics", lambda core, r, v, ctx: core.delete_topics(r, v)),
            "CreatePartitions": write(
                "createPartitions", lambda core, r, v, ctx: core.create_partitions(r, v)
            ),
            "AlterPartition": write("alterPartition", lambda core, r, v, ctx: core.alter_partition(r, v)),
            "AlterPartitionReassignments": write(
                "alterPartitionReassignments",
                lambda core, r, v, ctx: core.alter_partition_reassignments(r, v),
            ),
            "ListPartitionReassignments": self._read(
                "listPartitionReassignments", lambda core, r, v: core.list_partition_reassignments(r, v)
            ),
            "AllocateProducerIds": write(
                "allocateProducerIds", lambda core, r, v, ctx: core.allocate_producer_ids(r, v)
            ),
            "ControllerRegistration": write(
                "registerController",
                lambda core, r, v, ctx: register_from_request(r, core.metadata_version),
            ),
            "DescribeCluster": self._describe_cluster,
            "Metadata": self._metadata,
            "CreateAcls": self.create_acls,
            "DeleteAcls": self.delete_acls,
            "DescribeAcls": self.describe_acls,
            "AlterUserScramCredentials": self.alter_user_scram_credentials,
            "DescribeUserScramCredentials": self.describe_user_scram_credentials,
            **RaftApis(self._raft, self._cluster_id).handlers(),
        }

    # ---- ACLs and SCRAM credentials: one method per API, each the unit an authorizer guards ---------

    async def create_acls(self, req: CreateAclsRequest, version: int) -> CreateAclsResponse:
        handler = self._write("createAcls", lambda core, r, v, ctx: core.create_acls(r, v))
        resp: CreateAclsResponse = await handler(req, version)
        return resp

    async def delete_acls(self, req: DeleteAclsRequest, version: int) -> DeleteAclsResponse:
        handler = self._write("deleteAcls", lambda core, r, v, ctx: core.delete_acls(r, v))
        resp: DeleteAclsResponse = await handler(req, version)
        return resp

    async def describe_acls(self, req: DescribeAclsRequest, version: int) -> DescribeAclsResponse:
        handler = self._read("describeAcls", lambda core, r, v: core.describe_acls(r, v))
        resp: DescribeAclsResponse = await handler(req, version)
        return resp

    async def alter_user_scram_credentials(
        self, req: AlterUserScramCredentialsRequest, version: int
    ) -> AlterUserScramCredentialsResponse:
        handler = self._write(
            "alterUserScramCredentials", lambda core, r, v, ctx: core.alter_user_scram_credentials(r, v)
        )
        resp: AlterUserScramCredentialsResponse = await handler(req, version)
        return resp

    async def describe_user_scram_credentials(
        self, req: DescribeUserScramCredentialsRequest, version: int
    ) -> DescribeUserScramCredentialsResponse:
        handler = self._read(
            "describeUserScramCredentials", lambda core, r, v: core.describe_user_scram_credentials(r, v)
        )
        resp: DescribeUserScramCredentialsResponse = await handler(req, version)
        return resp

    async def _describe_cluster(self, req: Any, version: int) -> Any:
        from controller.describe_quorum import asks_for_controllers, describe_controllers

        if asks_for_controllers(req, version):
            # Any controller answers this one, standby or not: it is how a tool finds the leader.
            return describe_controllers(
                cluster_id=self._cluster_id, leader_id=self._raft.leader_id, voters=self._voters
            )
        return await self._read("describeCluster", lambda core, r, v: core.describe_cluster(r, v))(
            req, version
        )

    async def _metadata(self, req: Any, version: int) -> Any:
        def copy(core: Any, r: Any, v: int) -> Any:
            # The copy allocates one object per topic named, while the request's own models are all
            # alive: enough to set off full collections of the whole heap, on the loop.
            with collector_paused():
                return core.metadata_answer(r, v)

        answer = await self._read("metadata", copy)(req, version)
        if answer.large:
            # The copy taken on the queue is immutable: its models can be built off the loop.
            return await run_large(answer.build)
        return answer.build()

    def _write(self, name: str, op: Callable[[Any, Any, int, WriteContext], Any]) -> Handler:
        async def handler(req: Any, version: int) -> Any:
            term = self._term()
            core = term.core
            try:
                return await term.queue.write(name, lambda ctx: op(core, req, version, ctx))
            except QueueClosedError:
                raise _shutting_down() from None
            except EventTimeoutError as e:
                raise KafkaError(Errors.REQUEST_TIMED_OUT, str(e)) from None

        return handler

    def _read(self, name: str, fn: Callable[[Any, Any, int], Any]) -> Handler:
        async def handler(req: Any, version: int) -> Any:
            term = self._term()
            core = term.core
            try:
                return await term.queue.read(name, lambda: fn(core, req, version))
            except QueueClosedError:
                raise _shutting_down() from None

        return handler

    async def _broker_heartbeat(self, req: BrokerHeartbeatRequest, version: int) -> BrokerHeartbeatResponse:
        term = self._term()
        core = term.core

        def on_timeout() -> None:
            # processExpiredBrokerHeartbeat: the broker is alive even if the queue is overloaded.
            self._metrics.timed_out_heartbeats.inc()
            reg = core.m.cluster.registration(req.BrokerId)
            if reg is not None and reg.epoch == req.BrokerEpoch:
                core.m.heartbeats.touch(req.BrokerId, self._clock_ms(), req.CurrentMetadataOffset)
            log.warning("heartbeat timed out in the event queue", broker_id=req.BrokerId)

        try:
            return await term.queue.write(
                "processBrokerHeartbeat",
                lambda ctx: core.process_broker_heartbeat(req, version, ctx.now_ms, ctx.next_write_offset),
                deadline_s=self._heartbeat_deadline_s,
                on_timeout=on_timeout,
            )
        except EventTimeoutError:
            return BrokerHeartbeatResponse(ErrorCode=int(Errors.REQUEST_TIMED_OUT))
        except QueueClosedError:
            raise _shutting_down() from None
