"""Sends the leaders' ISR changes to the controller (Kafka's AlterPartitionManager).

Changes queue per partition (a newer one replaces an unsent older one) and go out together in one
AlterPartition v3 request at a time, each ISR member with the broker epoch it fetched with. Each
partition's answer goes back through `on_done`; a request that got no answer fails every change it
carried, and the leader proposes again on its next ISR check or follower fetch.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING

import structlog

from broker.dataplane.partition import IsrChange
from protocol.errors import Errors, KafkaError
from protocol.rpc.alter_partition import AlterPartitionRequest, AlterPartitionResponse
from protocol.uuid import Uuid

if TYPE_CHECKING:
    from broker.dataplane.host import DataPlaneHost

log = structlog.get_logger("broker.dataplane")

ALTER_PARTITION_VERSION = 3
PartitionKey = tuple[Uuid, int]
Committed = tuple[int, int, int, list[int]]
"""(leader, leader epoch, partition epoch, ISR) as the controller answered."""
Done = Callable[[PartitionKey, Errors, Committed | None], None]


def build_request(broker_id: int, broker_epoch: int, changes: list[IsrChange]) -> AlterPartitionRequest:
    by_topic: dict[Uuid, list[AlterPartitionRequest.PartitionData]] = {}
    for c in changes:
        by_topic.setdefault(c.topic_partition.topic_id, []).append(
            AlterPartitionRequest.PartitionData(
                PartitionIndex=c.topic_partition.partition,
                LeaderEpoch=c.leader_epoch,
                NewIsrWithEpochs=[
                    AlterPartitionRequest.BrokerState(BrokerId=b, BrokerEpoch=e)
                    for b, e in zip(c.new_isr, c.broker_epochs, strict=True)
                ],
                LeaderRecoveryState=0,
                PartitionEpoch=c.partition_epoch,
            )
        )
    return AlterPartitionRequest(
        BrokerId=broker_id,
        BrokerEpoch=broker_epoch,
        Topics=[AlterPartitionRequest.TopicData(TopicId=t, Partitions=ps) for t, ps in by_topic.items()],
    )


def read_response(resp: AlterPartitionResponse) -> dict[PartitionKey, tuple[Errors, Committed | None]]:
    out: dict[PartitionKey, tuple[Errors, Committed | None]] = {}
    for t in resp.Topics:
        for p in t.Partitions:
            code = _code(p.ErrorCode)
            committed = (
                (p.LeaderId, p.LeaderEpoch, p.PartitionEpoch, list(p.Isr)) if code is Errors.NONE else None
            )
            out[(t.TopicId, p.PartitionIndex)] = (code, committed)
    return out


def _code(value: int) -> Errors:
    try:
        return Errors(value)
    except ValueError:
        return Errors.UNKNOWN_SERVER_ERROR


class AlterPartitionManager:
    def __init__(self, host: DataPlaneHost, on_done: Done, *, timeout_s: float = 10.0) -> None:
        self.host = host
        self.on_done = on_done
        self.timeout_s = timeout_s
        self._queued: dict[PartitionKey, IsrChange] = {}
        self._wakeup = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def submit(self, change: IsrChange) -> None:
        key = (change.topic_partition.topic_id, change.topic_partition.partition)
        self._queued[key] = change
        self._wakeup.set()
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name="alter-partition")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def _run(self) -> None:
        while True:
            if not self._queued:
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            changes = list(self._queued.values())
            self._queued.clear()
            try:
                await self._send(changes)
            except Exception:
                log.exception("AlterPartition round failed")

    async def _send(self, changes: list[IsrChange]) -> None:
        keys = [(c.topic_partition.topic_id, c.topic_partition.partition) for c in changes]
        req = build_request(self.host.node_id, self.host.broker_epoch, changes)
        try:
            resp = await self.host.controller.call(
                "AlterPartition", req, ALTER_PARTITION_VERSION, timeout=self.timeout_s
            )
        except KafkaError as e:
            log.warning("AlterPartition failed", error=str(e), partitions=len(changes))
            for key in keys:
                self.on_done(key, e.code, None)
            return
        top = _code(resp.ErrorCode)
        if top is not Errors.NONE:
            log.warning("AlterPartition refused", error=top.name)
            for key in keys:
                self.on_done(key, top, None)
            return
        answers = read_response(resp)
        for key in keys:
            code, committed = answers.get(key, (Errors.UNKNOWN_SERVER_ERROR, None))
            self.on_done(key, code, committed)
