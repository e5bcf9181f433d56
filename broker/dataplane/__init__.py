"""The broker's data plane: produce, fetch, replication, the high watermark and the ISR.

`DataPlane(host)` is what a broker process plugs in (see host.py for the wiring): it serves Produce,
Fetch (the multi-partition broker fetch), ListOffsets, Metadata, DescribeLogDirs, InitProducerId,
and forwards CreateTopics / DeleteTopics to the controller.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

import structlog

from broker.dataplane.handlers import DataPlaneHandlers
from broker.dataplane.host import ConfiguredLogDir, DataPlaneHost, LocalLog
from broker.dataplane.producer_ids import ProducerIdManager
from broker.dataplane.replica_manager import ReplicaManager
from kraftpy.image import MetadataImage
from protocol.errors import Errors, KafkaError
from protocol.rpc.allocate_producer_ids import AllocateProducerIdsRequest
from protocol.rpc.broker_fetch import FETCH_SPEC, broker_api_specs
from protocol.uuid import Uuid

if TYPE_CHECKING:
    from aiohttp import web

    from protocol.transport import Handler

log = structlog.get_logger("broker.dataplane")

FOLLOW_INTERVAL_S = 0.05

__all__ = ["ConfiguredLogDir", "DataPlane", "DataPlaneHost", "LocalLog", "broker_api_specs"]


class DataPlane:
    def __init__(self, host: DataPlaneHost, *, follow_interval_s: float = FOLLOW_INTERVAL_S) -> None:
        self.host = host
        self.replicas = ReplicaManager(host)
        self.producer_ids = ProducerIdManager(self._allocate_producer_ids)
        self.api = DataPlaneHandlers(self.replicas, self.producer_ids)
        self.follow_interval_s = follow_interval_s
        self._poked = asyncio.Event()
        self._follower: asyncio.Task[None] | None = None

    def handlers(self) -> dict[str, Handler]:
        a = self.api
        return {
            "Produce": a.produce,
            "Fetch": a.fetch,
            "ListOffsets": a.list_offsets,
            "Metadata": a.metadata,
            "DescribeLogDirs": a.describe_log_dirs,
            "InitProducerId": a.init_producer_id,
            "CreateTopics": a.create_topics,
            "DeleteTopics": a.delete_topics,
        }

    def install(self, app: web.Application) -> None:
        """Serve the data plane's APIs on `app`; "Fetch" there becomes the broker's multi-partition fetch."""
        from broker.dataplane.metrics import register
        from protocol.transport import REGISTRY, add_handler
        from protocol.transport.server import SPECS

        app[SPECS]["Fetch"] = FETCH_SPEC
        for name, handler in self.handlers().items():
            add_handler(app, name, handler)
        register(app[REGISTRY], self.replicas)

    async def start(self) -> None:
        await self.replicas.start()
        self._follower = asyncio.create_task(self._follow(), name="dataplane-metadata")

    async def stop(self) -> None:
        if self._follower is not None:
            self._follower.cancel()
            await asyncio.gather(self._follower, return_exceptions=True)
            self._follower = None
        await self.replicas.stop()
        close = getattr(self.host, "close", None)
        if close is not None:
            await close()

    def poke(self) -> None:
        """Look at the host again now: a new image, logs created, a dir failed."""
        self._poked.set()

    async def _follow(self) -> None:
        # The host's image is polled as well as poked: a new image that touches none of our
        # partitions still changes who may join an ISR and what Metadata answers.
        seen: MetadataImage | None = None
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._poked.wait(), self.follow_interval_s)
            poked = self._poked.is_set()
            self._poked.clear()
            image = self.host.image
            if image is seen and not poked:
                continue
            seen = image
            try:
                await self.replicas.publish(image)
            except Exception:
                log.exception("applying metadata to the data plane failed")

    async def publish(self, image: MetadataImage) -> None:
        await self.replicas.publish(image)

    def dir_failed(self, dir_id: Uuid) -> None:
        self.replicas.dir_failed(dir_id)

    def health(self) -> dict[str, Any]:
        return self.replicas.summary()

    async def _allocate_producer_ids(self) -> tuple[int, int]:
        req = AllocateProducerIdsRequest(BrokerId=self.host.node_id, BrokerEpoch=self.host.broker_epoch)
        resp = await self.host.controller.call("AllocateProducerIds", req, timeout=10)
        if resp.ErrorCode != 0:
            raise KafkaError(Errors(resp.ErrorCode), "AllocateProducerIds refused by the controller")
        return resp.ProducerIdStart, resp.ProducerIdLen
