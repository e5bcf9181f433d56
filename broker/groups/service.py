"""The group coordinator's shell: requests in, the core's decisions carried out.

It parks callers on futures under tickets, appends the core's records to `__consumer_offsets`
through the replica manager (acks=all, as offsets.commit.required.acks), wakes the core's timer,
and follows the metadata image: a `__consumer_offsets` partition this broker starts leading is
read back from its log before its groups are served (COORDINATOR_LOAD_IN_PROGRESS meanwhile), one
it stops leading is dropped (NOT_COORDINATOR, so clients look up the new coordinator). A group thus
lives through a dead log dir under its coordinator the way Kafka's does: the partition's new leader
reads the same records back.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import structlog

from broker.groups.coordinator import OFFSETS_TOPIC, Effects, GroupConfig, GroupCoordinator
from protocol.coordinator_records import CoordinatorRecordError, decode_record
from protocol.errors import Errors
from protocol.record_batch import build_data_batch, iter_batches
from protocol.rpc.create_topics import CreateTopicsRequest, CreateTopicsResponse
from protocol.rpc.describe_groups import DescribeGroupsRequest, DescribeGroupsResponse
from protocol.rpc.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from protocol.rpc.heartbeat import HeartbeatRequest, HeartbeatResponse
from protocol.rpc.join_group import JoinGroupRequest, JoinGroupResponse
from protocol.rpc.leave_group import LeaveGroupRequest, LeaveGroupResponse
from protocol.rpc.list_groups import ListGroupsRequest, ListGroupsResponse
from protocol.rpc.message import RpcMessage
from protocol.rpc.offset_commit import OffsetCommitRequest, OffsetCommitResponse
from protocol.rpc.offset_fetch import OffsetFetchRequest, OffsetFetchResponse
from protocol.rpc.sync_group import SyncGroupRequest, SyncGroupResponse
from protocol.transport.context import current_request

if TYPE_CHECKING:
    from broker.dataplane.replica_manager import ReplicaManager
    from kraftpy.image import MetadataImage

log = structlog.get_logger("broker.groups")

COMMIT_TIMEOUT_MS = 5000  # offsets.commit.timeout.ms
LOAD_READ_BYTES = 1 << 20
KEY_TYPE_GROUP = 0


class GroupService:
    def __init__(
        self,
        replicas: ReplicaManager,
        node_id: int,
        config: GroupConfig,
        replication_factor: int,
        create_topics: Callable[[CreateTopicsRequest, int], Awaitable[CreateTopicsResponse]],
        now_ms: Callable[[], int],
    ) -> None:
        self.replicas = replicas
        self.node_id = node_id
        self.core = GroupCoordinator(config, lambda client_id: f"{client_id}-{uuid.uuid4()}")
        self.replication_factor = replication_factor
        self._create_topics = create_topics
        self.now_ms = now_ms
        self._tickets: dict[int, asyncio.Future[RpcMessage]] = {}
        self._next_ticket = 0
        self._leading: dict[int, int] = {}  # partition -> leader epoch it is (being) loaded for
        self._loads: dict[int, asyncio.Task[None]] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._wake = asyncio.Event()
        self._timer: asyncio.Task[None] | None = None
        self._creating: asyncio.Task[None] | None = None

    # ---- lifecycle ------------------------------------------------------------------------------

    def start(self) -> None:
        self._timer = asyncio.create_task(self._run_timer(), name="group-coordinator-timer")

    async def stop(self) -> None:
        tasks = [
            t for t in (self._timer, self._creating, *self._loads.values(), *self._tasks) if t is not None
        ]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for fut in self._tickets.values():
            if not fut.done():
                fut.cancel()

    def handlers(self) -> dict[str, Callable[[Any, int], Awaitable[RpcMessage]]]:
        return {
            "FindCoordinator": self.find_coordinator,
            "JoinGroup": self.join_group,
            "SyncGroup": self.sync_group,
            "Heartbeat": self.heartbeat,
            "LeaveGroup": self.leave_group,
            "OffsetCommit": self.offset_commit,
            "OffsetFetch": self.offset_fetch,
            "ListGroups": self.list_groups,
            "DescribeGroups": self.describe_groups,
        }

    # ---- following the image ----------------------------------------------------------------------

    def on_image(self, image: MetadataImage) -> None:
        """Load the partitions of __consumer_offsets this broker now leads, drop the others."""
        topic = image.topics.get_topic(OFFSETS_TOPIC)
        leading: dict[int, int] = {}
        if topic is not None:
            for index, reg in topic.partitions.items():
                if reg.leader == self.node_id:
                    leading[index] = reg.leader_epoch
        for p, epoch in list(self._leading.items()):
            if leading.get(p) != epoch:
                del self._leading[p]
                task = self._loads.pop(p, None)
                if task is not None:
                    task.cancel()
                self._carry_out(self.core.unload(p))
                log.info("no longer the group coordinator of a partition", partition=p)
        for p, epoch in leading.items():
            if p not in self._leading:
                self._leading[p] = epoch
                self.core.begin_load(p)
                self._loads[p] = asyncio.create_task(self._load(p, epoch), name=f"group-load-{p}")

    async def _load(self, p: int, epoch: int) -> None:
        """Read the partition back once this broker leads it and every acknowledged record is below
        the high watermark (a new leader's high watermark catches up after one follower fetch)."""
        started = self.now_ms()
        while True:
            offsets = self.replicas.leader_offsets(OFFSETS_TOPIC, p)
            if offsets is not None and offsets[0] == epoch and offsets[2] >= offsets[1]:
                target = offsets[1]
                break
            await asyncio.sleep(0.02)
        records = []
        position = 0
        while position < target:
            read = await self.replicas.read(
                OFFSETS_TOPIC,
                p,
                replica_id=-1,
                replica_epoch=-1,
                fetch_offset=position,
                current_leader_epoch=-1,
                last_fetched_epoch=-1,
                max_bytes=LOAD_READ_BYTES,
            )
            if read.error is Errors.OFFSET_OUT_OF_RANGE and position == 0:
                position = read.log_start_offset
                continue
            if read.error is not Errors.NONE or not read.records:
                await asyncio.sleep(0.05)  # the leader moved on or the dir failed: the image says next
                continue
            for batch in iter_batches(read.records):
                if batch.next_offset <= position:
                    continue
                for rec in batch.records:
                    try:
                        records.append(decode_record(rec.key, rec.value))
                    except CoordinatorRecordError as e:
                        log.warning("skipping a record of __consumer_offsets", partition=p, error=str(e))
                position = batch.next_offset
        now = self.now_ms()
        self.core.load(p, records, now)
        self.core.loaded_partition(p)
        self._loads.pop(p, None)
        self._wake.set()
        log.info(
            "group coordinator loaded a partition",
            partition=p,
            records=len(records),
            groups=sum(1 for g in self.core.groups if self.core.partition_of(g) == p),
            took_ms=now - started,
        )

    # ---- carrying out the core's effects ------------------------------------------------------------

    def _ticket(self) -> tuple[int, asyncio.Future[RpcMessage]]:
        self._next_ticket += 1
        fut: asyncio.Future[RpcMessage] = asyncio.get_running_loop().create_future()
        self._tickets[self._next_ticket] = fut
        return self._next_ticket, fut

    async def _await(self, ticket: int, fut: asyncio.Future[RpcMessage]) -> RpcMessage:
        try:
            return await fut
        finally:
            self._tickets.pop(ticket, None)

    def _carry_out(self, effects: Effects) -> None:
        for reply in effects.replies:
            fut = self._tickets.get(reply.ticket)
            if fut is not None and not fut.done():
                fut.set_result(reply.response)
        for write in effects.writes:
            task = asyncio.create_task(self._append(write.id, write.partition, write.records))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        self._wake.set()

    async def _append(self, write_id: int, partition: int, records: list[tuple[bytes, bytes]]) -> None:
        batch = build_data_batch(records, self.now_ms())
        outcome = await self.replicas.append(OFFSETS_TOPIC, partition, batch, -1, COMMIT_TIMEOUT_MS)
        if outcome.error is not Errors.NONE:
            log.warning("a group coordinator write failed", partition=partition, error=outcome.error.name)
        self._carry_out(self.core.write_done(write_id, outcome.error, self.now_ms()))

    async def _run_timer(self) -> None:
        while True:
            deadline = self.core.next_deadline()
            delay = 1.0 if deadline is None else max(0.0, (deadline - self.now_ms()) / 1000)
            self._wake.clear()
            try:
                await asyncio.wait_for(self._wake.wait(), min(delay, 1.0))
            except TimeoutError:
                pass
            self._carry_out(self.core.tick(self.now_ms()))

    # ---- FindCoordinator -------------------------------------------------------------------------

    async def find_coordinator(self, req: FindCoordinatorRequest, version: int) -> FindCoordinatorResponse:
        R = FindCoordinatorResponse
        keys = req.CoordinatorKeys if version >= 4 else [req.Key]
        found = [await self._coordinator_of(key, req.KeyType) for key in keys]
        if version >= 4:
            return R(
                Coordinators=[
                    R.Coordinator(Key=key, NodeId=n, Host=h, Port=p, ErrorCode=int(e), ErrorMessage=m)
                    for key, (e, m, n, h, p) in zip(keys, found, strict=True)
                ]
            )
        e, m, n, h, p = found[0]
        return R(ErrorCode=int(e), ErrorMessage=m if version >= 1 else None, NodeId=n, Host=h, Port=p)

    async def _coordinator_of(self, key: str, key_type: int) -> tuple[Errors, str | None, int, str, int]:
        none = (-1, "", -1)
        if key_type != KEY_TYPE_GROUP:
            return (Errors.COORDINATOR_NOT_AVAILABLE, "transactions are not supported", *none)
        if not key:
            return (Errors.INVALID_REQUEST, "the group id is empty", *none)
        image = self.replicas.image
        topic = image.topics.get_topic(OFFSETS_TOPIC)
        if topic is None:
            self._create_offsets_topic()
            return (Errors.COORDINATOR_NOT_AVAILABLE, f"{OFFSETS_TOPIC} is being created", *none)
        reg = topic.partitions.get(self.core.partition_of(key))
        broker = image.cluster.brokers.get(reg.leader) if reg is not None else None
        # over the HTTP RPC (kraftpy's own tools) the coordinator is named by its RPC endpoint
        listener = current_request().listener or self.replicas.listener_name or ""
        ep = broker.listener(listener) if broker is not None and not broker.fenced else None
        if reg is None or ep is None:
            return (Errors.COORDINATOR_NOT_AVAILABLE, "the group's partition has no leader", *none)
        return Errors.NONE, None, reg.leader, ep.host, ep.port

    def _create_offsets_topic(self) -> None:
        if self._creating is not None and not self._creating.done():
            return

        async def create() -> None:
            req = CreateTopicsRequest(
                Topics=[
                    CreateTopicsRequest.CreatableTopic(
                        Name=OFFSETS_TOPIC,
                        NumPartitions=self.core.config.offsets_topic_partitions,
                        ReplicationFactor=self.replication_factor,
                    )
                ],
                TimeoutMs=30000,
            )
            try:
                resp = await self._create_topics(req, 5)
                codes = {Errors(t.ErrorCode) for t in resp.Topics}
                if codes - {Errors.NONE, Errors.TOPIC_ALREADY_EXISTS}:
                    log.warning("could not create the offsets topic", errors=sorted(c.name for c in codes))
            except Exception as e:
                log.warning("could not create the offsets topic", error=repr(e))

        self._creating = asyncio.create_task(create(), name="create-offsets-topic")

    # ---- the group APIs ---------------------------------------------------------------------------

    async def join_group(self, req: JoinGroupRequest, version: int) -> JoinGroupResponse:
        ctx = current_request()
        ticket, fut = self._ticket()
        self._carry_out(self.core.join(ticket, req, version, ctx.client_id, ctx.client_host, self.now_ms()))
        resp = await self._await(ticket, fut)
        assert isinstance(resp, JoinGroupResponse)
        return resp

    async def sync_group(self, req: SyncGroupRequest, version: int) -> SyncGroupResponse:
        ticket, fut = self._ticket()
        self._carry_out(self.core.sync(ticket, req, version, self.now_ms()))
        resp = await self._await(ticket, fut)
        assert isinstance(resp, SyncGroupResponse)
        return resp

    async def heartbeat(self, req: HeartbeatRequest, version: int) -> HeartbeatResponse:
        return self.core.heartbeat(req, self.now_ms())

    async def leave_group(self, req: LeaveGroupRequest, version: int) -> LeaveGroupResponse:
        resp, effects = self.core.leave(req, version, self.now_ms())
        self._carry_out(effects)
        return resp

    async def offset_commit(self, req: OffsetCommitRequest, version: int) -> OffsetCommitResponse:
        ticket, fut = self._ticket()
        self._carry_out(self.core.commit(ticket, req, version, self.now_ms()))
        resp = await self._await(ticket, fut)
        assert isinstance(resp, OffsetCommitResponse)
        return resp

    async def offset_fetch(self, req: OffsetFetchRequest, version: int) -> OffsetFetchResponse:
        R = OffsetFetchResponse
        if version < 8:
            topics = None if req.Topics is None else [(t.Name, list(t.PartitionIndexes)) for t in req.Topics]
            err, found = self.core.fetch_offsets(req.GroupId, topics)
            return R(
                ErrorCode=int(err),
                Topics=[
                    R.OffsetFetchResponseTopic(
                        Name=name,
                        Partitions=[
                            R.OffsetFetchResponsePartition(
                                PartitionIndex=i,
                                CommittedOffset=c.offset if c else -1,
                                CommittedLeaderEpoch=(c.leader_epoch if c else -1) if version >= 5 else -1,
                                Metadata=c.metadata if c else "",
                                ErrorCode=0,
                            )
                            for i, c in parts
                        ],
                    )
                    for name, parts in found
                ],
            )
        groups = []
        for g in req.Groups:
            topics = None if g.Topics is None else [(t.Name, list(t.PartitionIndexes)) for t in g.Topics]
            err, found = self.core.fetch_offsets(g.GroupId, topics)
            groups.append(
                R.OffsetFetchResponseGroup(
                    GroupId=g.GroupId,
                    ErrorCode=int(err),
                    Topics=[
                        R.OffsetFetchResponseTopics(
                            Name=name,
                            Partitions=[
                                R.OffsetFetchResponsePartitions(
                                    PartitionIndex=i,
                                    CommittedOffset=c.offset if c else -1,
                                    CommittedLeaderEpoch=c.leader_epoch if c else -1,
                                    Metadata=c.metadata if c else "",
                                    ErrorCode=0,
                                )
                                for i, c in parts
                            ],
                        )
                        for name, parts in found
                    ],
                )
            )
        return R(Groups=groups)

    async def list_groups(self, req: ListGroupsRequest, version: int) -> ListGroupsResponse:
        groups = self.core.list_groups(list(req.StatesFilter) if version >= 4 else [])
        if version < 4:
            groups = [g.model_copy(update={"GroupState": ""}) for g in groups]
        if version < 5:
            groups = [g.model_copy(update={"GroupType": ""}) for g in groups]
        return ListGroupsResponse(Groups=groups)

    async def describe_groups(self, req: DescribeGroupsRequest, version: int) -> DescribeGroupsResponse:
        return DescribeGroupsResponse(Groups=[self.core.describe(g, version) for g in req.Groups])
