"""The connection bounds show in /metrics: connections held, and refused at accept."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest

from kraftpy.security.listeners import QuotaCollector
from protocol.transport.connection_quotas import ConnectionQuotas


def test_connection_count_and_refusals_are_exported() -> None:
    quotas = ConnectionQuotas(max_per_ip=2, per_ip_overrides={"127.0.0.1": 5})
    registry = CollectorRegistry()
    registry.register(QuotaCollector(quotas))
    assert quotas.try_acquire("10.0.0.9") is None
    assert quotas.try_acquire("10.0.0.9") is None
    assert "max.connections.per.ip=2" in (quotas.try_acquire("10.0.0.9") or "")
    for _ in range(5):
        assert quotas.try_acquire("127.0.0.1") is None
    quotas.release("10.0.0.9")
    text = generate_latest(registry).decode()
    assert "kafka_server_socket_server_metrics_connection_count 6.0" in text
    assert "kraftpy_connections_refused_total 1.0" in text
