"""What a client knows about the cluster: brokers, topics, partition leaders (from Metadata), and
one RPC connection per broker.

Any address can bootstrap: a broker answers Metadata from its image, a controller from its own
state. A refresh asks the bootstrap addresses and every broker known so far until one answers.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from protocol.errors import Errors, KafkaError
from protocol.rpc.broker_fetch import broker_api_specs
from protocol.rpc.metadata import MetadataRequest, MetadataResponse
from protocol.transport import NO_RETRIES, RpcClient
from protocol.uuid import Uuid
from tools.client.errors import ClientError, as_error


def url_of(address: str) -> str:
    """`host:port` (or a URL) to the base URL of its RPC listener."""
    address = address.strip()
    if address.startswith(("http://", "https://")):
        return address.rstrip("/")
    if ":" not in address:
        raise ValueError(f"'{address}' is not host:port")
    return f"http://{address}"


METADATA_TIMEOUT_S = 5.0


def _address(url: str) -> str:
    return url.removeprefix("http://").removeprefix("https://")


def parse_bootstrap(value: str | list[str]) -> list[str]:
    items = value.split(",") if isinstance(value, str) else list(value)
    urls = [url_of(a) for a in items if a.strip()]
    if not urls:
        raise ValueError("no bootstrap server given")
    return urls


class ConnectionPool:
    """One RpcClient per base URL; retries are the caller's (they refresh metadata first)."""

    def __init__(self, timeout_s: float = 30.0) -> None:
        self.timeout_s = timeout_s
        self._clients: dict[str, RpcClient] = {}
        self._specs = broker_api_specs()

    def get(self, url: str) -> RpcClient:
        client = self._clients.get(url)
        if client is None:
            client = self._clients[url] = RpcClient(
                url, timeout=self.timeout_s, retry=NO_RETRIES, specs=self._specs
            )
        return client

    async def close(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        await asyncio.gather(*(c.close() for c in clients), return_exceptions=True)


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    topic: str
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...]
    directories: tuple[Uuid, ...]
    error: Errors = Errors.NONE


@dataclass(frozen=True, slots=True)
class TopicInfo:
    name: str
    topic_id: Uuid
    partitions: dict[int, PartitionInfo] = field(default_factory=dict)
    error: Errors = Errors.NONE


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    node_id: int
    host: str
    port: int
    rack: str | None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"


def topics_from(resp: MetadataResponse) -> dict[str, TopicInfo]:
    out: dict[str, TopicInfo] = {}
    for t in resp.Topics:
        if t.Name is None:
            continue
        parts = {
            p.PartitionIndex: PartitionInfo(
                topic=t.Name,
                partition=p.PartitionIndex,
                leader=p.LeaderId,
                leader_epoch=p.LeaderEpoch,
                replicas=tuple(p.ReplicaNodes),
                isr=tuple(p.IsrNodes),
                offline_replicas=tuple(p.OfflineReplicas),
                directories=tuple(p.ReplicaDirectories),
                error=as_error(p.ErrorCode),
            )
            for p in t.Partitions
        }
        out[t.Name] = TopicInfo(t.Name, t.TopicId, parts, as_error(t.ErrorCode))
    return out


class ClusterMetadata:
    def __init__(self, bootstrap: str | list[str], pool: ConnectionPool) -> None:
        self.bootstrap = parse_bootstrap(bootstrap)
        self.pool = pool
        self.brokers: dict[int, BrokerInfo] = {}
        self.topics: dict[str, TopicInfo] = {}
        self.cluster_id: str | None = None
        self.controller_id = -1
        self._lock = asyncio.Lock()
        self._generation = 0
        self._last_good: str | None = None

    def urls(self) -> list[str]:
        """Where to ask for metadata: the server that answered last, the bootstrap list, then the rest."""
        known = [b.url for b in self.brokers.values()]
        first = [self._last_good] if self._last_good else []
        return list(dict.fromkeys([*first, *self.bootstrap, *known]))

    async def fetch(self, topics: list[str] | None, version: int = 12) -> MetadataResponse:
        """A Metadata answer from the first address that gives one."""
        req = MetadataRequest(
            Topics=None if topics is None else [MetadataRequest.MetadataRequestTopic(Name=t) for t in topics],
            AllowAutoTopicCreation=False,
        )
        last: KafkaError | None = None
        for url in self.urls():
            try:
                # A short timeout: a hung server must not hold up the search for one that answers.
                resp: MetadataResponse = await self.pool.get(url).call(
                    "Metadata", req, version, timeout=METADATA_TIMEOUT_S
                )
            except KafkaError as e:
                last = e
                if self._last_good == url:
                    self._last_good = None
                continue
            self._last_good = url
            return resp
        raise ClientError(
            last.code if last else Errors.NETWORK_EXCEPTION,
            f"no server answered Metadata ({', '.join(_address(u) for u in self.urls())})",
        )

    async def refresh(self, topics: list[str] | None = None) -> MetadataResponse:
        """Update brokers and the given topics (all topics when None)."""
        async with self._lock:
            resp = await self.fetch(topics)
            self.brokers = {b.NodeId: BrokerInfo(b.NodeId, b.Host, b.Port, b.Rack) for b in resp.Brokers}
            self.cluster_id = resp.ClusterId
            self.controller_id = resp.ControllerId
            found = topics_from(resp)
            if topics is None:
                self.topics = found
            else:
                for name in topics:
                    if name in found and found[name].error is Errors.NONE:
                        self.topics[name] = found[name]
                    else:
                        self.topics.pop(name, None)
            self._generation += 1
            return resp

    def partition(self, topic: str, partition: int) -> PartitionInfo | None:
        t = self.topics.get(topic)
        return None if t is None else t.partitions.get(partition)

    def leader_url(self, topic: str, partition: int) -> str | None:
        p = self.partition(topic, partition)
        if p is None or p.leader < 0:
            return None
        b = self.brokers.get(p.leader)
        return None if b is None else b.url

    def partition_count(self, topic: str) -> int | None:
        t = self.topics.get(topic)
        return None if t is None else len(t.partitions)
