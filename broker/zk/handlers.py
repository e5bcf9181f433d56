"""What a ZooKeeper-mode broker does with its controller's requests: LeaderAndIsr, UpdateMetadata,
StopReplica (Kafka's ReplicaManager.becomeLeaderOrFollower, MetadataCache.updateMetadata,
ReplicaManager.stopReplicas).

Every request is fenced first: an older controller epoch than one already seen answers
STALE_CONTROLLER_EPOCH, a broker epoch older than this broker's registration STALE_BROKER_EPOCH.
LeaderAndIsr then becomes `PartitionState`s for the one log manager and replica manager the KRaft
image feeds too. The directory each state carries is how KIP-112's IsNew reaches KIP-858's decision
table: a new replica (IsNew) is UNASSIGNED (pick a dir and create it), any other MIGRATING (use the
log where it is; if it is nowhere while a dir is offline, do not create it: it may be in the
failed dir). A replica left offline answers KAFKA_STORAGE_ERROR, which is how the controller learns
which replicas sat in a failed dir.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import structlog

from broker.core.partition_state import PartitionState
from broker.dataplane import DataPlane
from broker.log_manager import LogManager
from broker.zk.metadata_cache import ZkMetadataCache
from broker.zk.migration import fencing_broker_epoch
from kraftpy.image import TopicIdPartition
from protocol.errors import Errors
from protocol.rpc.leader_and_isr import LeaderAndIsrRequest, LeaderAndIsrResponse
from protocol.rpc.stop_replica import StopReplicaRequest, StopReplicaResponse
from protocol.rpc.update_metadata import UpdateMetadataRequest, UpdateMetadataResponse
from protocol.uuid import MIGRATING, UNASSIGNED, Uuid

log = structlog.get_logger("broker.zk")

CREATE_WAIT_S = 10.0
FULL = 2
"""LeaderAndIsr Type FULL: every partition this broker should host is in the request."""


class ZkBrokerApis:
    def __init__(
        self,
        broker_id: int,
        *,
        log_manager: LogManager,
        dataplane: DataPlane | None,
        cache: ZkMetadataCache,
        broker_epoch: Callable[[], int],
        kraft_broker_epoch: Callable[[], int | None] = lambda: None,
        topic_configs: Callable[[list[str]], Awaitable[dict[str, dict[str, str]]]] | None = None,
        on_metadata: Callable[[], None] = lambda: None,
    ) -> None:
        """`topic_configs`: reads the configs of the topics named (from `/config/topics/<t>`).
        `kraft_broker_epoch`: this broker's KRaft registration epoch when it is configured for a
        migration (None otherwise); a KRaft controller's requests are fenced with it."""
        self.broker_id = broker_id
        self.log_manager = log_manager
        self.dataplane = dataplane
        self.cache = cache
        self._broker_epoch = broker_epoch
        self._kraft_broker_epoch = kraft_broker_epoch
        self._topic_configs = topic_configs
        self._on_metadata = on_metadata
        self.controller_epoch = -1
        self.controller_id = -1
        self.leader_epochs: dict[tuple[Uuid, int], int] = {}
        self.topic_ids: dict[str, Uuid] = {}
        self._lock = asyncio.Lock()

    def handlers(self) -> dict[str, Any]:
        return {
            "LeaderAndIsr": self.leader_and_isr,
            "UpdateMetadata": self.update_metadata,
            "StopReplica": self.stop_replica,
        }

    def _fence(self, req: Any) -> Errors:
        """The same controller-epoch fence whoever sends (a KRaft controller's ControllerId is its
        node id, not a broker's, and its ControllerEpoch the ZooKeeper epoch it claimed)."""
        controller_id: int = req.ControllerId
        controller_epoch: int = req.ControllerEpoch
        broker_epoch: int = req.BrokerEpoch
        if controller_epoch < self.controller_epoch:
            log.warning(
                "request from an old controller ignored",
                controller_id=controller_id,
                controller_epoch=controller_epoch,
                current_epoch=self.controller_epoch,
            )
            return Errors.STALE_CONTROLLER_EPOCH
        current = fencing_broker_epoch(
            kraft_controller_request=bool(getattr(req, "isKRaftController", False)),
            zk_epoch=self._broker_epoch(),
            kraft_epoch=self._kraft_broker_epoch(),
        )
        if broker_epoch != -1 and broker_epoch < current:
            return Errors.STALE_BROKER_EPOCH
        self.controller_epoch = controller_epoch
        self.controller_id = controller_id
        return Errors.NONE

    # ---- LeaderAndIsr --------------------------------------------------------------------------

    async def leader_and_isr(self, req: LeaderAndIsrRequest, version: int) -> LeaderAndIsrResponse:
        async with self._lock:
            error = self._fence(req)
            if error != Errors.NONE:
                return _leader_and_isr_response(req, version, error, {})
            states: list[PartitionState] = []
            errors: dict[tuple[str, int], Errors] = {}
            for topic in req.TopicStates:
                topic_id = topic.TopicId
                self.topic_ids[topic.TopicName] = topic_id
                for ps in topic.PartitionStates:
                    key = (topic_id, ps.PartitionIndex)
                    current = self.leader_epochs.get(key)
                    if current is not None and ps.LeaderEpoch < current:
                        errors[(topic.TopicName, ps.PartitionIndex)] = Errors.STALE_CONTROLLER_EPOCH
                        continue
                    if self.broker_id not in ps.Replicas:
                        errors[(topic.TopicName, ps.PartitionIndex)] = Errors.UNKNOWN_TOPIC_OR_PARTITION
                        continue
                    self.leader_epochs[key] = ps.LeaderEpoch
                    states.append(
                        PartitionState(
                            topic_id=topic_id,
                            topic_name=topic.TopicName,
                            partition=ps.PartitionIndex,
                            replicas=tuple(ps.Replicas),
                            isr=tuple(ps.Isr),
                            leader=ps.Leader,
                            leader_epoch=ps.LeaderEpoch,
                            partition_epoch=ps.PartitionEpoch,
                            directory=UNASSIGNED if ps.IsNew else MIGRATING,
                        )
                    )
            full = version >= 5 and req.Type == FULL
            self.log_manager.publish(states, (), full=full)
            if self.dataplane is not None:
                self.dataplane.publish_soon(self.cache.image, states, (), full=full)
            for st in states:
                errors[(st.topic_name, st.partition)] = await self._placed(st)
            offline = sorted(f"{t}-{p}" for (t, p), e in errors.items() if e == Errors.KAFKA_STORAGE_ERROR)
            if offline:
                log.warning("replicas offline in a failed log dir", partitions=offline)
            return _leader_and_isr_response(req, version, Errors.NONE, errors)

    async def _placed(self, st: PartitionState) -> Errors:
        """NONE once the replica's log is open here (or still being created on a slow disk);
        KAFKA_STORAGE_ERROR when it is offline or its creation failed."""
        hp = self.log_manager.get_partition(st.topic_id, st.partition)
        if hp is None:
            return Errors.KAFKA_STORAGE_ERROR
        if hp.online and not hp.created.is_set():
            try:
                if not await asyncio.wait_for(hp.created.wait(), CREATE_WAIT_S):
                    return Errors.KAFKA_STORAGE_ERROR
            except TimeoutError:
                pass
        return Errors.NONE if hp.online else Errors.KAFKA_STORAGE_ERROR

    # ---- UpdateMetadata ------------------------------------------------------------------------

    async def update_metadata(self, req: UpdateMetadataRequest, version: int) -> UpdateMetadataResponse:
        async with self._lock:
            error = self._fence(req)
            if error != Errors.NONE:
                return UpdateMetadataResponse(ErrorCode=error)
            new = self.cache.new_topics(req)
            configs = await self._topic_configs(new) if new and self._topic_configs is not None else {}
            image = self.cache.update(req, configs)
            self.log_manager.update_metadata(image)
            if self.dataplane is not None:
                self.dataplane.publish_soon(image, [], [], full=False)
            self._on_metadata()
            return UpdateMetadataResponse(ErrorCode=Errors.NONE)

    # ---- StopReplica ---------------------------------------------------------------------------

    async def stop_replica(self, req: StopReplicaRequest, version: int) -> StopReplicaResponse:
        async with self._lock:
            error = self._fence(req)
            if error != Errors.NONE:
                return StopReplicaResponse(ErrorCode=error)
            stopped: list[TopicIdPartition] = []
            deleted: list[TopicIdPartition] = []
            results = []
            for topic in req.TopicStates:
                topic_id = self._topic_id(topic.TopicName)
                for ps in topic.PartitionStates:
                    err = Errors.NONE
                    if topic_id is not None:
                        tp = TopicIdPartition(topic_id, topic.TopicName, ps.PartitionIndex)
                        stopped.append(tp)
                        if ps.DeletePartition:
                            deleted.append(tp)
                            self.leader_epochs.pop((topic_id, ps.PartitionIndex), None)
                    results.append(
                        StopReplicaResponse.StopReplicaPartitionError(
                            TopicName=topic.TopicName, PartitionIndex=ps.PartitionIndex, ErrorCode=err
                        )
                    )
            if self.dataplane is not None and stopped:
                self.dataplane.publish_soon(self.cache.image, [], stopped, full=False)
            if deleted:
                self.log_manager.publish([], deleted, full=False)
                log.info("replicas deleted", partitions=[str(tp) for tp in deleted])
            return StopReplicaResponse(ErrorCode=Errors.NONE, PartitionErrors=results)

    def _topic_id(self, name: str) -> Uuid | None:
        known = self.topic_ids.get(name)
        if known is not None:
            return known
        topic = self.cache.image.topics.get_topic(name)
        return topic.id if topic is not None else None


def _leader_and_isr_response(
    req: LeaderAndIsrRequest, version: int, error: Errors, errors: dict[tuple[str, int], Errors]
) -> LeaderAndIsrResponse:
    if error != Errors.NONE:
        errors = {(t.TopicName, p.PartitionIndex): error for t in req.TopicStates for p in t.PartitionStates}
    if version >= 5:
        topics = []
        for t in req.TopicStates:
            topics.append(
                LeaderAndIsrResponse.LeaderAndIsrTopicError(
                    TopicId=t.TopicId,
                    PartitionErrors=[
                        LeaderAndIsrResponse.LeaderAndIsrPartitionError(
                            PartitionIndex=p.PartitionIndex,
                            ErrorCode=errors.get((t.TopicName, p.PartitionIndex), Errors.NONE),
                        )
                        for p in t.PartitionStates
                    ],
                )
            )
        return LeaderAndIsrResponse(ErrorCode=error, Topics=topics)
    return LeaderAndIsrResponse(
        ErrorCode=error,
        PartitionErrors=[
            LeaderAndIsrResponse.LeaderAndIsrPartitionError(TopicName=t, PartitionIndex=p, ErrorCode=e)
            for (t, p), e in sorted(errors.items())
        ],
    )
