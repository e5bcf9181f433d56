"""How a process serves its HTTP RPC listener and dials its peers', from its config.

A listener whose security protocol (listener.security.protocol.map) is SSL serves TLS with the
node's keystore, asks for client certificates as ssl.client.auth says and names each peer by its
certificate (ssl.principal.mapping.rules); a PLAINTEXT one serves plain HTTP, every peer
User:ANONYMOUS. Peers are dialled with https and this node's own certificate when their listener is
SSL. SASL is not spoken over HTTP: a SASL_* RPC listener refuses to start.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from dataclasses import dataclass

from aiohttp import web
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from kraftpy.config import TLS_PROTOCOLS, ConfigError, KafkaConfig
from kraftpy.security.tls import PrincipalOf, anonymous, principal_builder, server_context
from protocol.transport.connection_quotas import ConnectionQuotas, parse_overrides
from protocol.transport.server import REGISTRY, start_server


@dataclass(frozen=True)
class RpcListener:
    """What one HTTP RPC listener is served with."""

    name: str
    security_protocol: str
    ssl_context: ssl.SSLContext | None
    principal_of: PrincipalOf
    idle_timeout_s: float
    """connections.max.idle.ms, in seconds (negative: never)."""


def rpc_listener(cfg: KafkaConfig, listener_name: str) -> RpcListener:
    """The settings of `listener_name` as an HTTP RPC listener; ConfigError when they cannot be used
    (a keystore that does not load, a SASL protocol)."""
    protocol = cfg.security_protocol_name(listener_name)
    if protocol.startswith("SASL_"):
        raise ConfigError(
            f"{cfg.source}: listener {listener_name} maps to {protocol} in listener.security.protocol.map, "
            "but SASL is not served on the HTTP RPC listeners: map it to SSL (client certificates) or PLAINTEXT"
        )
    own = cfg.listener_config(listener_name)
    tls = protocol in TLS_PROTOCOLS
    return RpcListener(
        name=listener_name.upper(),
        security_protocol=protocol,
        ssl_context=server_context(cfg, listener_name) if tls else None,
        principal_of=principal_builder(cfg, listener_name) if tls else anonymous,
        idle_timeout_s=own.connections_max_idle_ms / 1000,
    )


def connection_quotas(cfg: KafkaConfig, listener_name: str | None = None) -> ConnectionQuotas:
    """max.connections, max.connections.per.ip and its overrides (`listener_name`'s own when given)."""
    own = cfg.listener_config(listener_name) if listener_name else cfg
    return ConnectionQuotas(
        max_connections=own.max_connections,
        max_per_ip=own.max_connections_per_ip,
        per_ip_overrides=parse_overrides(own.max_connections_per_ip_overrides),
    )


async def start_rpc_listener(
    app: web.Application, listener: RpcListener, host: str, port: int, quotas: ConnectionQuotas | None
) -> tuple[web.AppRunner, int]:
    """Serve `app` on host:port as `listener`; the runner and the bound port, as start_server gives."""
    if quotas is not None:
        app[REGISTRY].register(QuotaCollector(quotas))
    return await start_server(
        app,
        host,
        port,
        listener.ssl_context,
        listener=listener.name,
        security_protocol=listener.security_protocol,
        principal_of=listener.principal_of,
        quotas=quotas,
        idle_timeout_s=listener.idle_timeout_s,
    )


class QuotaCollector:
    """The process's connections as Kafka's socket-server metrics count them (connection-count), and
    the connections closed at accept because a bound was reached."""

    def __init__(self, quotas: ConnectionQuotas) -> None:
        self.quotas = quotas

    def collect(self) -> Iterator[Metric]:
        yield GaugeMetricFamily(
            "kafka_server_socket_server_metrics_connection_count",
            "connection-count: connections open on this process's listeners",
            value=self.quotas.active,
        )
        yield CounterMetricFamily(
            "kraftpy_connections_refused",
            "connections closed at accept by max.connections or max.connections.per.ip",
            value=self.quotas.refused,
        )
