"""Kafka's PartitionLeaderElectionAlgorithms: who leads a partition, and with which ISR.

`online(b)` is the controller's isReplicaOnline: the broker is live, not shutting down, and the
replica is not in one of its offline log dirs (KIP-112).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

Online = Callable[[int], bool]


def offline_partition_leader(
    assignment: Sequence[int], isr: Sequence[int], online: Online, *, unclean: bool
) -> tuple[int | None, tuple[int, ...]]:
    """The first online replica in the ISR, in assignment order; with unclean election allowed, any
    online replica when the ISR has none (the ISR is then the new leader alone)."""
    live = [r for r in assignment if online(r)]
    leader = next((r for r in live if r in isr), None)
    if leader is not None:
        return leader, tuple(r for r in isr if online(r))
    if unclean and live:
        return live[0], (live[0],)
    return None, tuple(isr)


def controlled_shutdown_leader(
    assignment: Sequence[int], isr: Sequence[int], online: Online, shutting_down: set[int]
) -> tuple[int | None, tuple[int, ...]]:
    """Away from the brokers shutting down, within the ISR (the ISR loses them)."""
    leader = next((r for r in assignment if r in isr and online(r) and r not in shutting_down), None)
    return leader, tuple(r for r in isr if r not in shutting_down)


def preferred_leader(assignment: Sequence[int], isr: Sequence[int], online: Online) -> int | None:
    """The preferred replica (first in the assignment), when it is online and in the ISR."""
    if not assignment:
        return None
    first = assignment[0]
    return first if online(first) and first in isr else None
