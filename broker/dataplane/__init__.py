"""The broker's data plane: produce, fetch, replication, the high watermark and the ISR.

`DataPlane(host)` is what a broker process plugs in (see host.py for the wiring): it serves Produce,
Fetch (the multi-partition broker fetch), ListOffsets, Metadata, DescribeLogDirs, InitProducerId,
DescribeAcls and DescribeUserScramCredentials, and forwards CreateTopics / DeleteTopics, CreateAcls /
DeleteAcls and AlterUserScramCredentials to the controller.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING

import structlog

from broker.core.partition_state import PartitionState, local_partition_states
from broker.dataplane.handlers import DataPlaneHandlers
from broker.dataplane.host import ConfiguredLogDir, DataPlaneHost, LocalLog
from broker.dataplane.producer_ids import ProducerIdManager
from broker.dataplane.replica_manager import ReplicaManager
from broker.dataplane.security_apis import SecurityApis
from broker.groups.coordinator import GroupConfig
from broker.groups.service import GroupService
from kraftpy.image import MetadataImage, TopicIdPartition
from protocol.errors import Errors, KafkaError
from protocol.rpc.allocate_producer_ids import AllocateProducerIdsRequest
from protocol.rpc.broker_fetch import FETCH_SPEC, broker_api_specs

if TYPE_CHECKING:
    from aiohttp import web

    from protocol.transport import Handler

log = structlog.get_logger("broker.dataplane")


def _now_ms() -> int:
    return int(time.monotonic() * 1000)


def group_config(cfg: object) -> GroupConfig:
    """The group coordinator's settings from a broker's config (Kafka's defaults where it has none)."""
    d = GroupConfig()
    return GroupConfig(
        offsets_topic_partitions=getattr(cfg, "offsets_topic_num_partitions", d.offsets_topic_partitions),
        min_session_timeout_ms=getattr(cfg, "group_min_session_timeout_ms", d.min_session_timeout_ms),
        max_session_timeout_ms=getattr(cfg, "group_max_session_timeout_ms", d.max_session_timeout_ms),
        initial_rebalance_delay_ms=getattr(
            cfg, "group_initial_rebalance_delay_ms", d.initial_rebalance_delay_ms
        ),
        max_metadata_bytes=getattr(cfg, "offset_metadata_max_bytes", d.max_metadata_bytes),
    )


CLIENT_APIS = (
    "Produce",
    "Fetch",
    "ListOffsets",
    "OffsetForLeaderEpoch",
    "Metadata",
    "InitProducerId",
    "CreateTopics",
    "CreatePartitions",
    "DeleteTopics",
    "DescribeLogDirs",
    "AlterReplicaLogDirs",
    "DescribeCluster",
    "DescribeConfigs",
    "FindCoordinator",
    "JoinGroup",
    "SyncGroup",
    "Heartbeat",
    "LeaveGroup",
    "OffsetCommit",
    "OffsetFetch",
    "ListGroups",
    "DescribeGroups",
    # partition reassignment (KIP-455), forwarded to the controller
    "AlterPartitionReassignments",
    "ListPartitionReassignments",
    # ACLs and SCRAM credentials: described from the image, changes forwarded to the controller
    "CreateAcls",
    "DeleteAcls",
    "DescribeAcls",
    "AlterUserScramCredentials",
    "DescribeUserScramCredentials",
)
"""What a broker serves to clients on its Kafka-protocol listeners (ApiVersions besides)."""

__all__ = ["CLIENT_APIS", "ConfiguredLogDir", "DataPlane", "DataPlaneHost", "LocalLog", "broker_api_specs"]


class DataPlane:
    def __init__(self, host: DataPlaneHost) -> None:
        self.host = host
        self.replicas = ReplicaManager(host)
        self.producer_ids = ProducerIdManager(self._allocate_producer_ids)
        self.api = DataPlaneHandlers(self.replicas, self.producer_ids)
        self.security = SecurityApis(lambda: self.replicas.image, host.controller)
        self.groups = GroupService(
            self.replicas,
            host.node_id,
            group_config(getattr(host, "config", None)),
            getattr(getattr(host, "config", None), "offsets_topic_replication_factor", 3),
            self.api.create_topics,
            now_ms=_now_ms,
        )
        # Metadata and log changes reach the replica manager in the order they happened, one at a
        # time: an older image applied after a newer one would move a partition back.
        self._updates: asyncio.Queue[Callable[[], Awaitable[None]]] = asyncio.Queue()
        self._worker: asyncio.Task[None] | None = None

    def handlers(self) -> dict[str, Handler]:
        a = self.api
        return {
            "Produce": a.produce,
            "Fetch": a.fetch,
            "ListOffsets": a.list_offsets,
            "OffsetForLeaderEpoch": a.offset_for_leader_epoch,
            "Metadata": a.metadata,
            "DescribeLogDirs": a.describe_log_dirs,
            "DescribeCluster": a.describe_cluster,
            "DescribeConfigs": a.describe_configs,
            "InitProducerId": a.init_producer_id,
            "CreateTopics": a.create_topics,
            "CreatePartitions": a.create_partitions,
            "DeleteTopics": a.delete_topics,
            **self.groups.handlers(),
            "AlterPartitionReassignments": a.alter_partition_reassignments,
            "ListPartitionReassignments": a.list_partition_reassignments,
            **self.security.handlers(),
        }

    def install(self, app: web.Application) -> None:
        """Serve the data plane's APIs on `app`; "Fetch" there becomes the broker's multi-partition fetch."""
        from broker.dataplane.metrics import register
        from broker.groups.metrics import register as register_groups
        from protocol.transport import REGISTRY, add_handler
        from protocol.transport.server import SPECS

        app[SPECS]["Fetch"] = FETCH_SPEC
        for name, handler in self.handlers().items():
            add_handler(app, name, handler)
        register(app[REGISTRY], self.replicas)
        register_groups(app[REGISTRY], self.groups.core)

    async def start(self) -> None:
        await self.replicas.start()
        self.groups.start()
        self._worker = asyncio.create_task(self._apply_updates(), name="dataplane-metadata")

    async def stop(self) -> None:
        if self._worker is not None:
            self._worker.cancel()
            await asyncio.gather(self._worker, return_exceptions=True)
            self._worker = None
        await self.groups.stop()
        await self.replicas.stop()
        close = getattr(self.host, "close", None)
        if close is not None:
            await close()

    # ---- what the metadata image publishes ------------------------------------------------------

    async def publish(self, image: MetadataImage) -> None:
        """Apply `image` in full: every partition it places here, and no other."""
        self.replicas.update_metadata(image)
        await self.replicas.apply(local_partition_states(image, self.host.node_id), full=True)
        self.groups.on_image(image)

    def publish_soon(
        self,
        image: MetadataImage,
        states: Sequence[PartitionState],
        deleted: Sequence[TopicIdPartition],
        *,
        full: bool,
    ) -> None:
        """Queue `image` (the metadata cache) with what it says of the partitions hosted here."""

        async def apply() -> None:
            self.replicas.update_metadata(image)
            if full or states or deleted:
                await self.replicas.apply(states, deleted, full=full)
            self.groups.on_image(image)

        self._updates.put_nowait(apply)

    def logs_changed_soon(self, tps: list[TopicIdPartition]) -> None:
        """Queue a look at partitions whose logs the log manager created, promoted or replaced."""
        self._updates.put_nowait(lambda: self.replicas.logs_changed(tps))

    async def _apply_updates(self) -> None:
        while True:
            update = await self._updates.get()
            try:
                await update()
            except Exception:
                log.exception("applying metadata to the data plane failed")

    async def _allocate_producer_ids(self) -> tuple[int, int]:
        req = AllocateProducerIdsRequest(BrokerId=self.host.node_id, BrokerEpoch=self.host.broker_epoch)
        resp = await self.host.controller.call("AllocateProducerIds", req, timeout=10)
        if resp.ErrorCode != 0:
            raise KafkaError(Errors(resp.ErrorCode), "AllocateProducerIds refused by the controller")
        return resp.ProducerIdStart, resp.ProducerIdLen
