"""A quorum and a broker whose HTTP RPC listeners are all SSL with client certificates required, as real
processes: the voters elect a leader and replicate over TLS, the broker registers and is unfenced over
TLS, and a peer without a certificate from the cluster's CA, or without TLS, is turned away."""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from protocol.rpc import BrokerHeartbeatRequest
from protocol.transport import NO_RETRIES, RpcClient, RpcConnectionError
from tests.support.processes import (
    ManagedProcess,
    ProcessSet,
    format_storage,
    free_ports,
    random_cluster_id,
    write_broker_config,
    write_controller_config,
)
from tools.cluster.certs import KeyPair, client_cert, create_ca, node_cert

CONTROLLERS = (1, 2, 3)
BROKER = 4


def tls_props(pair: KeyPair, protocols: str) -> dict[str, str]:
    return {
        "listener.security.protocol.map": protocols,
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(pair.keystore),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(pair.truststore),
        "ssl.client.auth": "required",
    }


async def healthz(port: int, ctx: ssl.SSLContext) -> dict[str, Any] | None:
    try:
        async with (
            aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx)) as s,
            s.get(f"https://127.0.0.1:{port}/healthz", timeout=aiohttp.ClientTimeout(total=2)) as r,
        ):
            body = await r.json()
            return body if isinstance(body, dict) else None
    except (aiohttp.ClientError, TimeoutError):
        return None


async def wait_for(
    what: str, probe: Callable[[], Any], procs: list[ManagedProcess], timeout: float = 60.0
) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for p in procs:
            assert p.alive, f"{p.name} exited with {p.returncode}; log:\n{p.log_tail()}"
        found = await probe()
        if found:
            return found
        await asyncio.sleep(0.2)
    logs = "\n".join(f"--- {p.name}\n{p.log_tail()}" for p in procs)
    raise AssertionError(f"{what} not within {timeout}s; logs:\n{logs}")


@pytest.mark.timeout(180)
async def test_quorum_and_broker_over_tls_with_client_certificates(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    procs = ProcessSet(tmp_path)
    request.addfinalizer(procs.stop_all)
    ca = create_ca(tmp_path / "pki" / "ca")
    ports = free_ports(len(CONTROLLERS) + 1)
    voters = dict(zip(CONTROLLERS, ports, strict=False))
    broker_port = ports[-1]
    cluster_id = random_cluster_id()

    configs = []
    for node in CONTROLLERS:
        pair = node_cert(ca, node, tmp_path / "pki" / f"node-{node}")
        configs.append(
            write_controller_config(
                tmp_path / f"controller-{node}.properties",
                node_id=node,
                port=voters[node],
                metadata_dir=tmp_path / f"meta-{node}",
                voters=voters,
                extra=tls_props(pair, "CONTROLLER:SSL"),
            )
        )
    broker_pair = node_cert(ca, BROKER, tmp_path / "pki" / f"node-{BROKER}")
    configs.append(
        write_broker_config(
            tmp_path / "broker.properties",
            node_id=BROKER,
            port=broker_port,
            log_dirs=[tmp_path / "logs"],
            voters=voters,
            extra=tls_props(broker_pair, "CONTROLLER:SSL,RPC:SSL"),
        )
    )
    for config in configs:
        format_storage(config, cluster_id)
    started = [procs.start_controller(c) for c in configs[:-1]]

    operator = client_cert(ca, "operator", tmp_path / "pki" / "operator")
    ctx = ssl.create_default_context(cafile=str(ca.cert))
    ctx.load_cert_chain(operator.keystore)

    async def quorum_agrees() -> list[dict[str, Any]] | None:
        bodies = [await healthz(voters[n], ctx) for n in CONTROLLERS]
        if any(b is None for b in bodies):
            return None
        leaders = {b["raft"]["leader_id"] for b in bodies if b}
        active = [b for b in bodies if b and b["active"]]
        # Voters that follow have fetched the leader's records: replication works over TLS.
        if len(leaders) == 1 and -1 not in leaders and len(active) == 1:
            hw = active[0]["high_watermark"]
            if hw > 0 and all(b and b["high_watermark"] > 0 for b in bodies):
                return [b for b in bodies if b]
        return None

    bodies = await wait_for("a leader every voter follows", quorum_agrees, started)
    assert sorted(b["node_id"] for b in bodies) == list(CONTROLLERS)

    started.append(procs.start_broker(configs[-1]))

    async def broker_unfenced() -> dict[str, Any] | None:
        body = await healthz(broker_port, ctx)
        return body if body and body.get("status") == "ok" and body.get("fenced") is False else None

    body = await wait_for("the broker unfenced", broker_unfenced, started)
    assert body["controller"]["leader_id"] in CONTROLLERS

    # Turned away: plain HTTP, TLS without a client certificate, a certificate from another CA.
    port = voters[CONTROLLERS[0]]
    request_ = BrokerHeartbeatRequest(BrokerId=BROKER, BrokerEpoch=0)
    bare = ssl.create_default_context(cafile=str(ca.cert))
    other = create_ca(tmp_path / "pki" / "other-ca", "another CA")
    stranger = node_cert(other, BROKER, tmp_path / "pki" / "stranger")
    foreign = ssl.create_default_context(cafile=str(ca.cert))
    foreign.load_cert_chain(stranger.keystore)
    for context in (None, bare, foreign):
        async with RpcClient(f"http://127.0.0.1:{port}", ssl=context, retry=NO_RETRIES, timeout=5) as c:
            with pytest.raises(RpcConnectionError):
                await c.call("BrokerHeartbeat", request_)
    for p in started:
        assert p.alive
