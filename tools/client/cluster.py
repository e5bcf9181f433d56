"""What a client knows about the cluster: brokers, topics, partition leaders (from Metadata), and
one RPC connection per broker.

Any address can bootstrap: a broker answers Metadata from its image, a controller from its own
state. A refresh asks the bootstrap addresses and every broker known so far until one answers.
With a command config (tools.client.security) the HTTP RPC is dialled over TLS.
"""

from __future__ import annotations

import asyncio
import dataclasses
import ssl
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from protocol.errors import Errors, KafkaError
from protocol.rpc.broker_fetch import broker_api_specs
from protocol.rpc.metadata import MetadataRequest, MetadataResponse
from protocol.transport import NO_RETRIES, RpcClient
from protocol.uuid import Uuid
from tools.client.errors import ClientError, as_error
from tools.client.security import client_context
from tools.client.wire import KafkaRpcClient, speaks_kafka

SCHEMES = ("http://", "https://", "kafka://", "auto://")


def url_of(address: str) -> str:
    """`host:port` (or a URL) to the base URL the pool connects to. A bare `host:port` is `auto://`:
    Kafka's protocol if the listener speaks it (a broker's PLAINTEXT), else kraftpy's HTTP RPC."""
    address = address.strip()
    if address.startswith(SCHEMES):
        return address.rstrip("/")
    if ":" not in address:
        raise ValueError(f"'{address}' is not host:port")
    return f"auto://{address}"


METADATA_TIMEOUT_S = 5.0


def _address(url: str) -> str:
    return url.split("://", 1)[-1]


def parse_bootstrap(value: str | list[str]) -> list[str]:
    items = value.split(",") if isinstance(value, str) else list(value)
    urls = [url_of(a) for a in items if a.strip()]
    if not urls:
        raise ValueError("no bootstrap server given")
    return urls


class _AutoClient:
    """A bare host:port: asked once whether it speaks Kafka's protocol, then that client."""

    def __init__(self, host: str, port: int, make_http: Callable[[str], RpcClient], timeout_s: float) -> None:
        self.host, self.port, self.timeout_s = host, port, timeout_s
        self._make_http = make_http
        self.delegate: RpcClient | KafkaRpcClient | None = None
        self._lock = asyncio.Lock()

    @property
    def scheme(self) -> str | None:
        return (
            None
            if self.delegate is None
            else ("kafka" if isinstance(self.delegate, KafkaRpcClient) else "http")
        )

    async def call(self, api: str, request: Any, version: int | None = None, **kw: Any) -> Any:
        if self.delegate is None:
            async with self._lock:
                if self.delegate is None:
                    if await speaks_kafka(self.host, self.port, min(self.timeout_s, 5.0)):
                        self.delegate = KafkaRpcClient(self.host, self.port, self.timeout_s)
                    else:
                        self.delegate = self._make_http(f"http://{self.host}:{self.port}")
        return await self.delegate.call(api, request, version, **kw)

    async def close(self) -> None:
        if self.delegate is not None:
            await self.delegate.close()


Client = RpcClient | KafkaRpcClient | _AutoClient


class ConnectionPool:
    """One client per base URL (HTTP RPC, Kafka's protocol, or either for a bare address); retries
    are the caller's (they refresh metadata first).

    The TLS context is the command config's when the pool is made: with one, every HTTP RPC
    connection is https and a bare address is taken for an HTTP RPC listener (the tools speak no
    SASL, so a secure cluster's Kafka listeners are not theirs)."""

    def __init__(self, timeout_s: float = 30.0) -> None:
        self.timeout_s = timeout_s
        self._clients: dict[str, Client] = {}
        self._specs = broker_api_specs()
        self.ssl: ssl.SSLContext | None = client_context()

    def _http(self, url: str) -> RpcClient:
        return RpcClient(url, timeout=self.timeout_s, retry=NO_RETRIES, specs=self._specs, ssl=self.ssl)

    def get(self, url: str) -> Client:
        client = self._clients.get(url)
        if client is None:
            host, _, port = _address(url).rpartition(":")
            if url.startswith("kafka://"):
                client = KafkaRpcClient(host, int(port), self.timeout_s)
            elif url.startswith("auto://") and self.ssl is not None:
                client = self._http(f"http://{host}:{port}")
            elif url.startswith("auto://"):
                client = _AutoClient(host, int(port), self._http, self.timeout_s)
            else:
                client = self._http(url)
            self._clients[url] = client
        return client

    def scheme_of(self, url: str) -> str:
        """How `url` was reached: "kafka" or "http"."""
        client = self._clients.get(url)
        if isinstance(client, KafkaRpcClient) or (
            isinstance(client, _AutoClient) and client.scheme == "kafka"
        ):
            return "kafka"
        return "http"

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
    scheme: str = "http"  # how the Metadata that named it was asked: its endpoints are of that listener

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self.host}:{self.port}"


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
        self._scheme = "http"

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
            self._scheme = self.pool.scheme_of(url)
            return resp
        raise ClientError(
            last.code if last else Errors.NETWORK_EXCEPTION,
            f"no server answered Metadata ({', '.join(_address(u) for u in self.urls())})",
        )

    async def refresh(self, topics: list[str] | None = None) -> MetadataResponse:
        """Update brokers and the given topics (all topics when None)."""
        async with self._lock:
            resp = await self.fetch(topics)
            self.brokers = {
                b.NodeId: BrokerInfo(b.NodeId, b.Host, b.Port, b.Rack, self._scheme) for b in resp.Brokers
            }
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

    @property
    def scheme(self) -> str:
        """How the last Metadata answer was asked ("kafka" or "http"): the brokers it lists are
        endpoints of that listener."""
        return self._scheme

    def partition(self, topic: str, partition: int) -> PartitionInfo | None:
        t = self.topics.get(topic)
        return None if t is None else t.partitions.get(partition)

    def leader_url(self, topic: str, partition: int) -> str | None:
        p = self.partition(topic, partition)
        if p is None or p.leader < 0:
            return None
        b = self.brokers.get(p.leader)
        return None if b is None else b.url

    def apply_leader_hint(
        self, topic: str, partition: int, leader: int, leader_epoch: int, endpoints: Iterable[Any] = ()
    ) -> bool:
        """KIP-951: a broker that no longer leads a partition named the one that does (CurrentLeader
        and its NodeEndpoints). Taken when it is newer than what the cache holds and its address is
        known; True then, so the caller can send again at once instead of asking Metadata first."""
        p = self.partition(topic, partition)
        if p is None or leader < 0 or leader_epoch <= p.leader_epoch:
            return False
        for ep in endpoints:
            if ep.NodeId == leader:
                self.brokers[leader] = BrokerInfo(ep.NodeId, ep.Host, ep.Port, ep.Rack, self._scheme)
        if leader not in self.brokers:
            return False
        self.topics[topic].partitions[partition] = dataclasses.replace(
            p, leader=leader, leader_epoch=leader_epoch
        )
        return True

    def partition_count(self, topic: str) -> int | None:
        t = self.topics.get(topic)
        return None if t is None else len(t.partitions)
