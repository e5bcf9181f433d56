"""What a ZooKeeper-mode broker asks of "the controller", answered the ZooKeeper way.

The data plane sends every controller-bound request through `host.controller.call`. In KRaft mode
that is the quorum's leader; here `ZkControllerChannel` routes each API where Kafka's ZooKeeper
brokers took it:

- CreateTopics and DeleteTopics are done by the broker that received them, in ZooKeeper (Kafka's
  AdminZkClient): `/config/topics/<t>` and `/brokers/topics/<t>` for a creation, a
  `/admin/delete_topics/<t>` entry for a deletion. The controller's watches do the rest; the answer
  waits (up to the request's timeout) until this broker's metadata shows the result.
- AllocateProducerIds claims the next block in `/latest_producer_id_block` with a version-checked
  write (Kafka's ZkProducerIdManager).
- AlterPartition and ControlledShutdown go to the controller broker named by `/controller`.

During a migration, once a KRaft controller holds `/controller`, every one of them goes to it.
"""

from __future__ import annotations

import asyncio
import random
import ssl
from collections.abc import Callable
from typing import Any

import structlog

from controller.core.configuration_control import validate_topic_config
from controller.core.topics import validate_topic_name
from controller.zk.placement import PlacementError, assign_replicas
from kraftpy.config import KafkaConfig
from kraftpy.image import MetadataImage
from kraftpy.zookeeper import CreateOp, ZkBadVersionError, ZkClient, ZkError, ZkNodeExistsError
from protocol import znodes
from protocol.errors import Errors, KafkaError
from protocol.rpc.allocate_producer_ids import AllocateProducerIdsResponse
from protocol.rpc.create_topics import CreateTopicsRequest, CreateTopicsResponse
from protocol.rpc.delete_topics import DeleteTopicsRequest, DeleteTopicsResponse
from protocol.transport import RpcClient, RpcConnectionError
from protocol.transport.client import NO_RETRIES
from protocol.uuid import Uuid

log = structlog.get_logger("broker.zk")

PRODUCER_ID_BLOCK_SIZE = 1000
WAIT_POLL_S = 0.05


class ZkControllerChannel:
    def __init__(
        self,
        zk: ZkClient,
        cfg: KafkaConfig,
        *,
        image: Callable[[], MetadataImage],
        controller_url: Callable[[], str | None],
        rng: random.Random | None = None,
        timeout: float = 10.0,
        kraft_controller: Callable[[], bool] = lambda: False,
        kraft_broker_epoch: Callable[[], int] = lambda: -1,
        ssl_for: Callable[[str], ssl.SSLContext | None] = lambda _url: None,
    ) -> None:
        """`kraft_controller()`: a migrating KRaft controller holds /controller; then it, not
        ZooKeeper, takes what a controller does (a write here would bypass the metadata log), and
        knows this broker by the epoch of its KRaft registration (`kraft_broker_epoch()`), not of
        its /brokers/ids znode. `ssl_for(url)`: the client context for a controller's URL when its
        listener is TLS."""
        self.zk = zk
        self._ssl_for = ssl_for
        self._kraft_controller = kraft_controller
        self._kraft_broker_epoch = kraft_broker_epoch
        self.cfg = cfg
        self._image = image
        self._controller_url = controller_url
        self._rng = rng or random.Random()
        self._timeout = timeout
        self._clients: dict[str, RpcClient] = {}

    async def call(self, api: str, request: Any, version: int | None = None, **kw: Any) -> Any:
        if self._kraft_controller():
            if "BrokerEpoch" in type(request).model_fields:
                request = request.model_copy(update={"BrokerEpoch": self._kraft_broker_epoch()})
            return await self._to_controller(api, request, version, **kw)
        if api == "CreateTopics":
            return await self.create_topics(request)
        if api == "DeleteTopics":
            return await self.delete_topics(request, version)
        if api == "AllocateProducerIds":
            return await self.allocate_producer_ids(request.BrokerId)
        return await self._to_controller(api, request, version, **kw)

    async def _to_controller(self, api: str, request: Any, version: int | None, **kw: Any) -> Any:
        url = self._controller_url()
        if url is None:
            raise KafkaError(Errors.NOT_CONTROLLER, "no controller is elected")
        client = self._clients.get(url)
        if client is None:
            client = self._clients[url] = RpcClient(
                url, timeout=self._timeout, retry=NO_RETRIES, ssl=self._ssl_for(url)
            )
        try:
            return await client.call(api, request, version, **kw)
        except RpcConnectionError as e:
            raise KafkaError(Errors.NOT_CONTROLLER, f"controller unreachable: {e}") from None

    async def close(self) -> None:
        for c in self._clients.values():
            await c.close()

    # ---- CreateTopics --------------------------------------------------------------------------

    async def create_topics(self, req: CreateTopicsRequest) -> CreateTopicsResponse:
        results = []
        created: list[str] = []
        live = [int(b) for b in (await self.zk.get_children(znodes.BROKER_IDS) or [])]
        names = [t.Name for t in req.Topics]
        for topic in req.Topics:
            result = CreateTopicsResponse.CreatableTopicResult(Name=topic.Name)
            try:
                if names.count(topic.Name) > 1:
                    raise KafkaError(Errors.INVALID_REQUEST, f"Duplicate topic name {topic.Name}")
                topic_id, num, rf = await self._create_topic(topic, live, req.ValidateOnly)
                result.TopicId, result.NumPartitions, result.ReplicationFactor = topic_id, num, rf
                if not req.ValidateOnly:
                    created.append(topic.Name)
            except KafkaError as e:
                result.ErrorCode, result.ErrorMessage = e.error, e.message
            results.append(result)
        await self._wait(lambda img: all(_has_leaders(img, n) for n in created), req.TimeoutMs)
        return CreateTopicsResponse(Topics=results)

    async def _create_topic(
        self, topic: CreateTopicsRequest.CreatableTopic, live: list[int], validate_only: bool
    ) -> tuple[Uuid, int, int]:
        validate_topic_name(topic.Name)
        configs = {}
        for c in topic.Configs:
            validate_topic_config(c.Name, c.Value)
            if c.Value is not None:
                configs[c.Name] = c.Value
        if await self.zk.exists(znodes.topic_path(topic.Name)) is not None:
            raise KafkaError(Errors.TOPIC_ALREADY_EXISTS, f"Topic '{topic.Name}' already exists.")
        if topic.Assignments:
            assignment = {a.PartitionIndex: list(a.BrokerIds) for a in topic.Assignments}
        else:
            num = topic.NumPartitions if topic.NumPartitions != -1 else self.cfg.num_partitions
            rf = (
                topic.ReplicationFactor
                if topic.ReplicationFactor != -1
                else self.cfg.default_replication_factor
            )
            try:
                assignment = assign_replicas(live, num, rf, rng=self._rng)
            except PlacementError as e:
                error = (
                    Errors.INVALID_PARTITIONS if "partitions" in str(e) else Errors.INVALID_REPLICATION_FACTOR
                )
                raise KafkaError(error, str(e)) from None
        topic_id = Uuid.random()
        num, rf = len(assignment), len(next(iter(assignment.values())))
        if validate_only:
            return topic_id, num, rf
        data = znodes.TopicZnode(partitions={p: r for p, r in sorted(assignment.items())}, topic_id=topic_id)
        try:
            await self.zk.multi(
                [
                    CreateOp(
                        znodes.topic_config_path(topic.Name),
                        znodes.TopicConfigZnode(config=configs).to_bytes(),
                    ),
                    CreateOp(znodes.topic_path(topic.Name), data.to_bytes()),
                ]
            )
        except ZkNodeExistsError:
            raise KafkaError(Errors.TOPIC_ALREADY_EXISTS, f"Topic '{topic.Name}' already exists.") from None
        log.info("topic created in ZooKeeper", topic=topic.Name, topic_id=str(topic_id), partitions=num)
        return topic_id, num, rf

    # ---- DeleteTopics --------------------------------------------------------------------------

    async def delete_topics(self, req: DeleteTopicsRequest, version: int | None) -> DeleteTopicsResponse:
        image = self._image()
        names: list[tuple[str | None, Uuid]] = [(n, Uuid.ZERO) for n in req.TopicNames]
        for t in req.Topics:
            if t.Name is None and t.TopicId != Uuid.ZERO:
                found = image.topics.get_topic(t.TopicId)
                names.append((found.name if found is not None else None, t.TopicId))
            else:
                names.append((t.Name, t.TopicId))
        results = []
        deleting = []
        for name, topic_id in names:
            result = DeleteTopicsResponse.DeletableTopicResult(Name=name, TopicId=topic_id)
            if name is None or await self.zk.exists(znodes.topic_path(name)) is None:
                result.ErrorCode = Errors.UNKNOWN_TOPIC_OR_PARTITION
                result.ErrorMessage = "This server does not host this topic-partition."
            else:
                try:
                    await self.zk.create(znodes.delete_topic_path(name), b"")
                except ZkNodeExistsError:
                    pass
                deleting.append(name)
            results.append(result)
        await self._wait(lambda img: all(img.topics.get_topic(n) is None for n in deleting), req.TimeoutMs)
        return DeleteTopicsResponse(Responses=results)

    # ---- AllocateProducerIds -------------------------------------------------------------------

    async def allocate_producer_ids(self, broker_id: int) -> AllocateProducerIdsResponse:
        while True:
            found = await self.zk.get(znodes.LATEST_PRODUCER_ID_BLOCK)
            if found is None:
                try:
                    await self.zk.create(znodes.LATEST_PRODUCER_ID_BLOCK, b"")
                except ZkNodeExistsError:
                    pass
                continue
            data, stat = found
            start = 0
            if data:
                start = znodes.ProducerIdBlockZnode.from_bytes(data).block_end + 1
            block = znodes.ProducerIdBlockZnode(
                broker=broker_id, block_start=start, block_end=start + PRODUCER_ID_BLOCK_SIZE - 1
            )
            try:
                await self.zk.set(znodes.LATEST_PRODUCER_ID_BLOCK, block.to_bytes(), version=stat.version)
            except ZkBadVersionError:
                continue
            except ZkError as e:
                raise KafkaError(Errors.UNKNOWN_SERVER_ERROR, e.message) from None
            return AllocateProducerIdsResponse(ProducerIdStart=start, ProducerIdLen=PRODUCER_ID_BLOCK_SIZE)

    async def _wait(self, done: Callable[[MetadataImage], bool], timeout_ms: int) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(0, timeout_ms) / 1000
        while not done(self._image()) and loop.time() < deadline:
            await asyncio.sleep(WAIT_POLL_S)


def _has_leaders(image: MetadataImage, name: str) -> bool:
    topic = image.topics.get_topic(name)
    return (
        topic is not None and bool(topic.partitions) and all(p.leader >= 0 for p in topic.partitions.values())
    )
