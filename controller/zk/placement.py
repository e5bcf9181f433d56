"""Replica placement in ZooKeeper mode: Kafka's AdminUtils.assignReplicasToBrokers (rack-unaware).

Partition p's first replica is broker (p + start) in the sorted list; the others follow it at a
shift that grows by one every time the partitions have gone once round the brokers, so that
followers spread instead of always trailing the same leader. `start` and the first shift are random
in Kafka (the caller passes its rng).
"""

from __future__ import annotations

import random
from collections.abc import Sequence


class PlacementError(ValueError):
    """Kafka's InvalidReplicationFactorException / InvalidPartitionsException message."""


def assign_replicas(
    brokers: Sequence[int], partitions: int, replication_factor: int, *, rng: random.Random
) -> dict[int, list[int]]:
    if partitions <= 0:
        raise PlacementError("Number of partitions must be larger than 0.")
    if replication_factor <= 0:
        raise PlacementError("Replication factor must be larger than 0.")
    ids = sorted(brokers)
    n = len(ids)
    if replication_factor > n:
        raise PlacementError(f"Replication factor: {replication_factor} larger than available brokers: {n}.")
    start = rng.randrange(n)
    shift = rng.randrange(n)
    out: dict[int, list[int]] = {}
    for p in range(partitions):
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start) % n
        replicas = [ids[first]]
        for j in range(replication_factor - 1):
            replicas.append(ids[(first + 1 + (shift + j) % (n - 1)) % n])
        out[p] = replicas
    return out
