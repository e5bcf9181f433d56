"""A ZooKeeper-mode broker's identity in ZooKeeper: the cluster id and `/brokers/ids/<id>`.

`/cluster/id` is created by the first broker that finds none (KafkaServer.getOrGenerateClusterId).
`/brokers/ids/<id>` is ephemeral: it lives as long as this broker's session, and its czxid is the
broker epoch the controller fences requests with. When the session expires the node is gone and
the controller treats the broker as dead; on the next session the broker registers again, with a
new epoch, and the controller treats it as a broker that came back.
"""

from __future__ import annotations

import asyncio
import time

import structlog

from kraftpy.config import SECURITY_PROTOCOLS, KafkaConfig
from kraftpy.zookeeper import ZkClient, ZkNodeExistsError
from protocol import znodes
from protocol.uuid import Uuid

log = structlog.get_logger("broker.zk")


REGISTRATION_RETRY_S = 0.5
_PROTOCOL_NAMES = {v: k for k, v in SECURITY_PROTOCOLS.items()}


class RegistrationError(Exception):
    """Another live session holds this broker id."""


async def get_or_create_cluster_id(zk: ZkClient) -> str:
    await zk.ensure_path("/cluster")
    found = await zk.get(znodes.CLUSTER_ID)
    if found is None:
        wanted = znodes.ClusterIdZnode(id=str(Uuid.random()))
        try:
            await zk.create(znodes.CLUSTER_ID, wanted.to_bytes())
            return wanted.id
        except ZkNodeExistsError:
            found = await zk.get(znodes.CLUSTER_ID)
            assert found is not None
    return znodes.ClusterIdZnode.from_bytes(found[0]).id


async def ensure_persistent_paths(zk: ZkClient) -> None:
    for path in znodes.PERSISTENT_PATHS:
        await zk.ensure_path(path)


def broker_info(cfg: KafkaConfig, port: int) -> znodes.BrokerIdZnode:
    """`/brokers/ids/<id>` v5 for this broker's listeners (the one listener bound now has `port`)."""
    listeners = cfg.advertised_listener_list or cfg.listener_list
    endpoints = []
    protocols = {}
    for ep in listeners:
        host = ep.host or "127.0.0.1"
        p = ep.port or port
        endpoints.append(f"{ep.name}://{host}:{p}")
        protocols[ep.name] = _PROTOCOL_NAMES[cfg.security_protocol(ep.name)]
    first = listeners[0]
    return znodes.BrokerIdZnode(
        host=first.host or "127.0.0.1",
        port=first.port or port,
        jmx_port=-1,
        timestamp=str(int(time.time() * 1000)),
        endpoints=endpoints,
        rack=cfg.broker_rack,
        listener_security_protocol_map=protocols,
    )


async def register_broker(
    zk: ZkClient, broker_id: int, info: znodes.BrokerIdZnode, *, wait_for_old_session_s: float = 0.0
) -> int:
    """Create this broker's ephemeral node; returns its czxid, the broker epoch.

    A node left by this broker's previous process (killed, or stopped before it closed its session)
    lives until ZooKeeper expires that session: registration waits up to `wait_for_old_session_s`
    for it to go, then fails as Kafka's does, naming the session that holds the id."""
    path = znodes.broker_path(broker_id)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait_for_old_session_s
    while True:
        try:
            await zk.create(path, info.to_bytes(), ephemeral=True)
            break
        except ZkNodeExistsError:
            stat = await zk.exists(path)
            if stat is not None and stat.ephemeral_owner == zk.session_id:
                break
            if stat is not None and loop.time() >= deadline:
                raise RegistrationError(
                    f"Error while creating ephemeral at {path}, node already exists and owner "
                    f"'{stat.ephemeral_owner}' does not match current session '{zk.session_id}'"
                ) from None
            if stat is not None:
                log.info("broker id still held by an older session; waiting for it to expire", path=path)
                await asyncio.sleep(REGISTRATION_RETRY_S)
    stat = await zk.exists(path)
    assert stat is not None
    log.info("registered in ZooKeeper", path=path, broker_epoch=stat.czxid, endpoints=info.endpoints)
    return stat.czxid
