"""The HTTP RPC listener over TLS with client certificates, and its connection bounds, over real sockets:
who the handler sees asking, which peers are refused at the handshake, and connections closed at
accept or when idle. Each test runs on asyncio's loop and on uvloop's (conftest.py)."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from kraftpy.config import KafkaConfig
from kraftpy.security import tls
from protocol.rpc import BrokerHeartbeatRequest, BrokerHeartbeatResponse
from protocol.transport import NO_RETRIES, RpcClient, RpcConnectionError, create_app, start_server
from protocol.transport.connection_quotas import ConnectionQuotas
from protocol.transport.context import RequestContext, current_request
from protocol.transport.server import CONNECTIONS
from tools.cluster.certs import CaFiles, KeyPair, client_cert, create_ca, issue, node_cert

HEARTBEAT = BrokerHeartbeatRequest(BrokerId=1, BrokerEpoch=5)


@dataclass
class Pki:
    ca: CaFiles
    node1: KeyPair
    node2: KeyPair
    alice: KeyPair
    stranger: KeyPair
    """Signed by another CA."""
    misnamed: KeyPair
    """Signed by the CA, but valid only for a host that is not 127.0.0.1."""


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    d = tmp_path_factory.mktemp("pki")
    ca = create_ca(d / "ca")
    other = create_ca(d / "other-ca", "another CA")
    return Pki(
        ca=ca,
        node1=node_cert(ca, 1, d / "node-1"),
        node2=node_cert(ca, 2, d / "node-2"),
        alice=client_cert(ca, "alice", d / "alice"),
        stranger=node_cert(other, 1, d / "stranger"),
        misnamed=issue(ca, "node-7", ["elsewhere.example"], d / "node-7"),
    )


def node_config(pair: KeyPair, client_auth: str = "required", **more: str) -> KafkaConfig:
    return KafkaConfig.from_properties(
        {
            "log.dirs": "/tmp/kraftpy-unused",
            "listeners": "CONTROLLER://127.0.0.1:0",
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "CONTROLLER:SSL",
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(pair.keystore),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(pair.truststore),
            "ssl.client.auth": client_auth,
            **more,
        }
    )


def client_context(trust: Path, own: KeyPair | None = None, check_hostname: bool = True) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(trust))
    ctx.check_hostname = check_hostname
    if own is not None:
        ctx.load_cert_chain(own.keystore)
    return ctx


@dataclass
class Served:
    app: web.Application
    port: int
    seen: list[RequestContext]
    quotas: ConnectionQuotas

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def call(self, ssl_context: ssl.SSLContext | None, client_id: str | None = None) -> Any:
        async with RpcClient(
            self.url, ssl=ssl_context, retry=NO_RETRIES, client_id=client_id, timeout=5
        ) as c:
            return await c.call("BrokerHeartbeat", HEARTBEAT)


Serve = Callable[..., "contextlib.AbstractAsyncContextManager[Served]"]


@pytest.fixture
def serve() -> Serve:
    @contextlib.asynccontextmanager
    async def run(
        ssl_context: ssl.SSLContext | None = None,
        *,
        principal_of: Callable[[Mapping[str, Any] | None], str] | None = None,
        quotas: ConnectionQuotas | None = None,
        **kw: Any,
    ) -> AsyncIterator[Served]:
        seen: list[RequestContext] = []

        async def heartbeat(req: BrokerHeartbeatRequest, version: int) -> BrokerHeartbeatResponse:
            seen.append(current_request())
            return BrokerHeartbeatResponse(IsCaughtUp=True)

        app = create_app({"BrokerHeartbeat": heartbeat})
        quotas = quotas or ConnectionQuotas()
        runner, port = await start_server(
            app,
            "127.0.0.1",
            0,
            ssl_context,
            listener="CONTROLLER",
            principal_of=principal_of,
            quotas=quotas,
            **kw,
        )
        try:
            yield Served(app, port, seen, quotas)
        finally:
            await runner.cleanup()
        # Every connection gave its place back, whichever way it ended (closes land on the next turns).
        for _ in range(100):
            if quotas.active == 0:
                break
            await asyncio.sleep(0.01)
        assert quotas.active == 0
        assert app[CONNECTIONS] == {}

    return run


def tls_server(pair: KeyPair, client_auth: str = "required") -> tuple[ssl.SSLContext, Any]:
    cfg = node_config(pair, client_auth)
    ctx = tls.listener_server_context(cfg, "CONTROLLER")
    assert ctx is not None
    return ctx, tls.principal_builder(cfg, "CONTROLLER")


# -- who is asking ---------------------------------------------------------------------------------


async def test_a_node_certificate_is_served_and_named_by_its_dn(pki: Pki, serve: Serve) -> None:
    ctx, principal_of = tls_server(pki.node1)
    async with serve(ctx, principal_of=principal_of) as s:
        peer = tls.controller_peer_context(node_config(pki.node2))
        resp = await s.call(peer, client_id="broker-2")
        assert resp.IsCaughtUp
        assert s.seen == [
            RequestContext(
                listener="CONTROLLER",
                client_id="broker-2",
                client_host="127.0.0.1",
                principal="User:CN=node-2,O=kraftpy",
                security_protocol="SSL",
            )
        ]
        # A client certificate names its holder as well.
        await s.call(client_context(pki.ca.cert, pki.alice))
        assert s.seen[-1].principal == "User:CN=alice,O=kraftpy" and s.seen[-1].client_id == ""


async def test_requested_client_auth_serves_a_peer_without_a_certificate_as_anonymous(
    pki: Pki, serve: Serve
) -> None:
    ctx, principal_of = tls_server(pki.node1, "requested")
    async with serve(ctx, principal_of=principal_of) as s:
        await s.call(client_context(pki.ca.cert))
        await s.call(client_context(pki.ca.cert, pki.node2))
    assert [c.principal for c in s.seen] == ["User:ANONYMOUS", "User:CN=node-2,O=kraftpy"]


async def test_plaintext_listener_is_anonymous(serve: Serve) -> None:
    async with serve() as s:
        await s.call(None)
    assert s.seen == [RequestContext("CONTROLLER", "", "127.0.0.1", "User:ANONYMOUS", "PLAINTEXT")]


# -- refused peers ---------------------------------------------------------------------------------


async def test_no_client_certificate_is_refused_when_required(pki: Pki, serve: Serve) -> None:
    ctx, principal_of = tls_server(pki.node1, "required")
    async with serve(ctx, principal_of=principal_of) as s:
        with pytest.raises(RpcConnectionError):
            await s.call(client_context(pki.ca.cert))
    assert s.seen == []


async def test_a_client_certificate_from_another_ca_is_refused(pki: Pki, serve: Serve) -> None:
    ctx, principal_of = tls_server(pki.node1, "required")
    async with serve(ctx, principal_of=principal_of) as s:
        with pytest.raises(RpcConnectionError):
            await s.call(client_context(pki.ca.cert, pki.stranger))
    assert s.seen == []


async def test_a_server_certificate_from_another_ca_is_refused_by_the_client(pki: Pki, serve: Serve) -> None:
    ctx, principal_of = tls_server(pki.stranger)
    async with serve(ctx, principal_of=principal_of) as s:
        with pytest.raises(RpcConnectionError, match="certificate"):
            await s.call(tls.client_context(node_config(pki.node2)))
    assert s.seen == []


async def test_the_client_checks_the_server_names_the_host_it_dialled(pki: Pki, serve: Serve) -> None:
    ctx, principal_of = tls_server(pki.misnamed)
    async with serve(ctx, principal_of=principal_of) as s:
        with pytest.raises(RpcConnectionError, match="certificate"):
            await s.call(tls.client_context(node_config(pki.node2)))
        # ssl.endpoint.identification.algorithm= (empty) turns the check off; the CA still counts.
        unchecked = node_config(pki.node2, **{"ssl.endpoint.identification.algorithm": ""})
        await s.call(tls.client_context(unchecked))
    assert [c.principal for c in s.seen] == ["User:CN=node-2,O=kraftpy"]


async def test_a_certificate_no_mapping_rule_names_is_refused(pki: Pki, serve: Serve) -> None:
    cfg = node_config(pki.node1, **{"ssl.principal.mapping.rules": "RULE:^CN=(node-[0-9]+),.*$/$1/"})
    ctx = tls.server_context(cfg, "CONTROLLER")
    async with serve(ctx, principal_of=tls.principal_builder(cfg)) as s:
        await s.call(client_context(pki.ca.cert, pki.node2))
        with pytest.raises(RpcConnectionError):
            await s.call(client_context(pki.ca.cert, pki.alice))
    assert [c.principal for c in s.seen] == ["User:node-2"]


async def test_plain_http_to_a_tls_listener_and_https_to_a_plain_one_fail(pki: Pki, serve: Serve) -> None:
    ctx, principal_of = tls_server(pki.node1)
    async with serve(ctx, principal_of=principal_of) as s:
        with pytest.raises(RpcConnectionError):
            await s.call(None)
    async with serve() as s:
        with pytest.raises(RpcConnectionError):
            await s.call(client_context(pki.ca.cert, pki.node2))
    assert s.seen == []


# -- connection bounds -----------------------------------------------------------------------------


async def _closed_by_server(reader: asyncio.StreamReader, within: float = 5.0) -> bool:
    try:
        return await asyncio.wait_for(reader.read(1), within) == b""
    except ConnectionResetError:
        return True


async def test_the_connection_over_max_connections_is_closed_at_accept(serve: Serve) -> None:
    async with serve(quotas=ConnectionQuotas(max_connections=2)) as s:
        held = [await asyncio.open_connection("127.0.0.1", s.port) for _ in range(2)]
        # Both held connections are counted once the server has seen them.
        for _ in range(100):
            if s.quotas.active == 2:
                break
            await asyncio.sleep(0.01)
        assert s.quotas.active == 2
        reader, writer = await asyncio.open_connection("127.0.0.1", s.port)
        assert await _closed_by_server(reader)
        writer.close()
        assert s.quotas.refused == 1
        with pytest.raises(RpcConnectionError):
            await s.call(None)
        # A held connection closes: its place is free again.
        held[0][1].close()
        await held[0][1].wait_closed()
        for _ in range(100):
            if s.quotas.active < 2:
                break
            await asyncio.sleep(0.01)
        assert (await s.call(None)).IsCaughtUp
        held[1][1].close()
        await held[1][1].wait_closed()


async def test_per_ip_bound_and_its_override(serve: Serve) -> None:
    async with serve(quotas=ConnectionQuotas(max_per_ip=0, per_ip_overrides={"127.0.0.1": 1})) as s:
        _, writer = await asyncio.open_connection("127.0.0.1", s.port)
        second_reader, second_writer = await asyncio.open_connection("127.0.0.1", s.port)
        assert await _closed_by_server(second_reader)
        second_writer.close()
        writer.close()
        await writer.wait_closed()
    assert s.quotas.refused == 1


async def test_a_tls_connection_counts_from_its_accept_before_any_handshake(pki: Pki, serve: Serve) -> None:
    ctx, principal_of = tls_server(pki.node1)
    peer = client_context(pki.ca.cert, pki.node2)
    async with serve(
        ctx, principal_of=principal_of, quotas=ConnectionQuotas(max_connections=1), handshake_timeout_s=0.5
    ) as s:
        # A peer that never starts its handshake holds the only place until the handshake times out.
        reader, writer = await asyncio.open_connection("127.0.0.1", s.port)
        await asyncio.sleep(0.1)
        with pytest.raises(RpcConnectionError):
            await s.call(peer)
        assert await _closed_by_server(reader)
        writer.close()
        for _ in range(100):
            if s.quotas.active == 0:
                break
            await asyncio.sleep(0.01)
        assert (await s.call(peer)).IsCaughtUp


async def test_an_idle_connection_is_closed_after_connections_max_idle_ms(serve: Serve) -> None:
    async with serve(idle_timeout_s=0.3) as s:
        reader, writer = await asyncio.open_connection("127.0.0.1", s.port)
        loop = asyncio.get_running_loop()
        started = loop.time()
        assert await _closed_by_server(reader)
        assert 0.2 <= loop.time() - started < 4
        writer.close()


async def test_stopping_the_server_cuts_handshakes_that_are_not_over(pki: Pki, serve: Serve) -> None:
    ctx, principal_of = tls_server(pki.node1)
    async with serve(ctx, principal_of=principal_of, handshake_timeout_s=60) as s:
        reader, writer = await asyncio.open_connection("127.0.0.1", s.port)
        for _ in range(100):
            if s.quotas.active == 1:
                break
            await asyncio.sleep(0.01)
        assert s.quotas.active == 1
    assert await _closed_by_server(reader)
    writer.close()
