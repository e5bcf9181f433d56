"""A follower dials its leader as the leader registered its listener: https with the broker's client
context for SSL, plain http otherwise; and a replica manager takes that context from its config."""

from __future__ import annotations

import ssl
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pytest

from broker.dataplane.fetcher import ReplicaFetcher
from broker.dataplane.hosted_partition import HostedPartition
from broker.dataplane.partition import Partition
from broker.dataplane.replica_manager import _peer_ssl
from broker.dataplane.settings import ReplicaSettings
from kraftpy.config import KafkaConfig
from kraftpy.image import TopicIdPartition
from kraftpy.metadata.registration import BrokerRegistration, Endpoint
from protocol.uuid import Uuid
from tools.cluster.certs import create_ca, node_cert


def manager(protocol: int, peer_ssl: ssl.SSLContext | None) -> SimpleNamespace:
    leader = BrokerRegistration(
        id=2, epoch=1, incarnation_id=Uuid.random(), listeners=(Endpoint("RPC", "127.0.0.1", 9192, protocol),)
    )
    cfg = KafkaConfig.from_properties({"log.dirs": "/tmp/kraftpy-unused"})
    return SimpleNamespace(
        node_id=1,
        settings=ReplicaSettings.from_config(cfg),
        listener_name="RPC",
        peer_ssl=peer_ssl,
        image=SimpleNamespace(cluster=SimpleNamespace(brokers={2: leader})),
    )


def following_host() -> SimpleNamespace:
    """A replica manager whose local logs are all empty: every partition fetches from offset 0."""
    host = manager(0, None)
    host.broker_epoch = 1

    async def on_local_dir(hp: object, fn: object, *args: object) -> tuple[int, int]:
        return 0, -1

    host.on_local_dir = on_local_dir
    return host


def partitions_of(topic: Uuid) -> Callable[[int], HostedPartition]:
    """Partition `p` of `topic`, followed here (its local log is never read: the host answers for it)."""

    def hosted(p: int) -> HostedPartition:
        tp = TopicIdPartition(topic, "t", p)
        return HostedPartition(tp, Partition(tp, 1), local=SimpleNamespace(log=None))  # type: ignore[arg-type]

    return hosted


@pytest.mark.parametrize(("protocol", "scheme"), [(1, "https"), (3, "https"), (0, "http"), (2, "http")])
async def test_the_leader_is_dialled_as_it_registered_its_listener(protocol: int, scheme: str) -> None:
    ctx = ssl.create_default_context()
    fetcher = ReplicaFetcher(manager(protocol, ctx), 2)  # type: ignore[arg-type]
    url = fetcher._leader_url()
    assert url == f"{scheme}://127.0.0.1:9192"
    client = fetcher._client_for(url)
    assert client.base_url == url
    assert client.ssl is (ctx if scheme == "https" else None)
    await client.close()


def test_a_replica_manager_takes_the_client_context_of_its_brokers_listener(tmp_path: Path) -> None:
    ca = create_ca(tmp_path / "ca")
    pair = node_cert(ca, 1, tmp_path / "n1")
    tls = KafkaConfig.from_properties(
        {
            "log.dirs": str(tmp_path),
            "listeners": "RPC://127.0.0.1:9192",
            "listener.security.protocol.map": "RPC:SSL",
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(pair.keystore),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(pair.truststore),
        }
    )
    ctx = _peer_ssl(tls, "RPC")
    assert ctx is not None and ctx.check_hostname
    plain = KafkaConfig.from_properties({"log.dirs": str(tmp_path), "listeners": "RPC://127.0.0.1:9192"})
    assert _peer_ssl(plain, "RPC") is None
    assert _peer_ssl(object(), "RPC") is None


async def test_a_partition_that_joins_does_not_wait_for_the_long_poll_of_the_others() -> None:
    """The leader holds a fetch while none of its partitions has data (up to replica.fetch.wait.max.ms);
    a partition added meanwhile (a new leader after a failover) is fetched at once, with the others."""
    import asyncio

    from protocol.rpc.broker_fetch import FetchResponse

    asked: list[set[int]] = []
    second = asyncio.Event()

    class Leader:
        async def call(self, api: str, req: object, version: int | None = None, **_: object) -> FetchResponse:
            parts = {p.Partition for t in req.Topics for p in t.Partitions}  # type: ignore[attr-defined]
            asked.append(parts)
            if len(asked) == 1:
                await asyncio.sleep(30)  # the long poll: nothing new for partition 0
            second.set()
            await asyncio.sleep(30)
            return FetchResponse()

        async def close(self) -> None:
            pass

    fetcher = ReplicaFetcher(following_host(), 2)  # type: ignore[arg-type]
    fetcher._client_for = lambda url: Leader()  # type: ignore[assignment,method-assign,return-value]
    hosted = partitions_of(Uuid.random())

    try:
        fetcher.add(hosted(0), 3)
        while not asked:
            await asyncio.sleep(0.01)
        fetcher.add(hosted(1), 3)
        await asyncio.wait_for(second.wait(), 5)
        assert asked == [{0}, {0, 1}]
    finally:
        await fetcher.stop()


async def test_a_partition_added_while_the_last_one_leaves_is_still_fetched() -> None:
    """The fetcher's task ends when its last partition leaves, closing its client on the way out; a
    partition added during that close (the metadata moving one partition away and another here) is
    fetched, not left with no task to carry it."""
    import asyncio

    from protocol.rpc.broker_fetch import FetchResponse

    asked: list[set[int]] = []
    closing = asyncio.Event()
    release = asyncio.Event()

    class Leader:
        async def call(self, api: str, req: object, version: int | None = None, **_: object) -> FetchResponse:
            asked.append({p.Partition for t in req.Topics for p in t.Partitions})  # type: ignore[attr-defined]
            await asyncio.sleep(0.05)
            return FetchResponse()

        async def close(self) -> None:
            closing.set()
            await release.wait()

    fetcher = ReplicaFetcher(following_host(), 2)  # type: ignore[arg-type]

    def client_for(url: str) -> Leader:
        fetcher._client = fetcher._client or Leader()  # type: ignore[assignment]
        return fetcher._client  # type: ignore[return-value]

    fetcher._client_for = client_for  # type: ignore[assignment,method-assign]
    hosted = partitions_of(Uuid.random())

    async def asked_for(p: int) -> None:
        while not any(p in a for a in asked):
            await asyncio.sleep(0.01)

    try:
        first = hosted(0)
        fetcher.add(first, 3)
        await asyncio.wait_for(asked_for(0), 5)
        fetcher.remove(first.key)
        await asyncio.wait_for(closing.wait(), 5)
        fetcher.add(hosted(1), 3)
        release.set()
        await asyncio.wait_for(asked_for(1), 5)
    finally:
        release.set()
        await fetcher.stop()
