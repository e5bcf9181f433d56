"""ConnectionQuotas: Kafka's bounds on how many connections a listener holds (`max.connections`,
`max.connections.per.ip`, `max.connections.per.ip.overrides`), shared by the HTTP and the Kafka-protocol
listeners of a process so that one flood cannot take every socket or file descriptor."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

UNBOUNDED = 2**31 - 1
"""Kafka's default for both bounds (Int.MaxValue)."""


@dataclass
class ConnectionQuotas:
    max_connections: int = UNBOUNDED
    max_per_ip: int = UNBOUNDED
    per_ip_overrides: Mapping[str, int] = field(default_factory=dict)
    _per_ip: Counter[str] = field(default_factory=Counter)
    _total: int = 0
    refused: int = 0
    """Connections closed at accept because a bound was reached (for metrics)."""

    def try_acquire(self, ip: str) -> str | None:
        """Count a new connection from `ip`; None when it may stay, else why it must be closed."""
        limit = self.per_ip_overrides.get(ip, self.max_per_ip)
        if self._per_ip[ip] >= limit:
            self.refused += 1
            return f"{ip} already holds {self._per_ip[ip]} connections (max.connections.per.ip={limit})"
        if self._total >= self.max_connections:
            self.refused += 1
            return f"the listener already holds {self._total} connections (max.connections={self.max_connections})"
        self._per_ip[ip] += 1
        self._total += 1
        return None

    def release(self, ip: str) -> None:
        """A connection try_acquire accepted has closed."""
        self._per_ip[ip] -= 1
        if self._per_ip[ip] <= 0:
            del self._per_ip[ip]
        self._total -= 1

    @property
    def active(self) -> int:
        return self._total


def parse_overrides(value: str) -> dict[str, int]:
    """`max.connections.per.ip.overrides`: `host:count,host:count`; ValueError naming the bad entry."""
    out: dict[str, int] = {}
    for item in (p.strip() for p in value.split(",")):
        if not item:
            continue
        host, sep, count = item.rpartition(":")
        try:
            n = int(count)
        except ValueError:
            n = -1
        if not sep or not host or n < 0:
            raise ValueError(f"entry {item!r} is not of the form host:count")
        out[host] = n
    return out
