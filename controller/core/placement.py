"""Where new partitions go: striped replica placement (reference 7.12) and each replica's first directory.

The placer visits racks round-robin from a random start, one rack further for each partition;
inside a rack it visits brokers round-robin from a random start, unfenced ones first and fenced
ones only when a rack runs out. The first replica (the would-be leader) is always unfenced. Every
choice comes from the `random.Random` passed in, so a seeded one gives the same placement again.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass

from controller.core.metadata_version import is_directory_assignment_supported
from kraftpy.metadata import BrokerRegistration
from protocol.errors import Errors, KafkaError
from protocol.uuid import MIGRATING, UNASSIGNED, Uuid


@dataclass(frozen=True, slots=True)
class UsableBroker:
    id: int
    rack: str | None
    fenced: bool


def default_dir(registration: BrokerRegistration | None, metadata_version: int) -> Uuid:
    """The directory a new replica on this broker starts with (Kafka's ClusterControlManager.defaultDir).

    One online dir: the replica can only be there. Several: the broker will choose and tell us
    with AssignReplicasToDirs (UNASSIGNED). None (a registration from before JBOD): MIGRATING.
    """
    if not is_directory_assignment_supported(metadata_version):
        return MIGRATING
    if registration is None:
        return UNASSIGNED
    if not registration.directories:
        return MIGRATING
    if len(registration.directories) == 1:
        return registration.directories[0]
    return UNASSIGNED


class _BrokerList:
    """Brokers of one kind in one rack, handed out round-robin; each at most once per epoch."""

    __slots__ = ("brokers", "epoch", "index", "offset")

    def __init__(self) -> None:
        self.brokers: list[int] = []
        self.epoch = 0
        self.index = 0
        self.offset = 0

    def next(self, epoch: int) -> int:
        if self.epoch != epoch:
            self.epoch = epoch
            self.index = 0
            self.offset = (self.offset + 1) % len(self.brokers) if self.brokers else 0
        if self.index >= len(self.brokers):
            return -1
        broker = self.brokers[(self.index + self.offset) % len(self.brokers)]
        self.index += 1
        return broker

    def shuffle(self, rng: random.Random) -> None:
        rng.shuffle(self.brokers)
        if self.brokers:
            self.offset = rng.randrange(len(self.brokers))


class _Rack:
    __slots__ = ("fenced", "unfenced")

    def __init__(self) -> None:
        self.unfenced = _BrokerList()
        self.fenced = _BrokerList()

    def next_unfenced(self, epoch: int) -> int:
        return self.unfenced.next(epoch)

    def next(self, epoch: int) -> int:
        broker = self.unfenced.next(epoch)
        return broker if broker >= 0 else self.fenced.next(epoch)

    def shuffle(self, rng: random.Random) -> None:
        self.unfenced.shuffle(rng)
        self.fenced.shuffle(rng)


class _RackList:
    def __init__(self, rng: random.Random, brokers: Iterable[UsableBroker]) -> None:
        self._rng = rng
        racks: dict[str | None, _Rack] = {}
        self.total = 0
        self.unfenced = 0
        # Sorted input and sorted rack names: the outcome depends only on the brokers and the rng.
        for b in sorted(brokers, key=lambda u: u.id):
            rack = racks.setdefault(b.rack, _Rack())
            (rack.fenced if b.fenced else rack.unfenced).brokers.append(b.id)
            self.total += 1
            if not b.fenced:
                self.unfenced += 1
        self._names = sorted(racks, key=lambda r: (r is not None, r or ""))
        self._racks = racks
        for name in self._names:
            racks[name].shuffle(rng)
        self._epoch = 0
        self._offset = rng.randrange(len(self._names)) if self._names else 0

    def _shuffle(self) -> None:
        self._rng.shuffle(self._names)
        for name in self._names:
            self._racks[name].shuffle(self._rng)

    def place(self, replication_factor: int) -> list[int]:
        if replication_factor < 1:
            raise KafkaError(
                Errors.INVALID_REPLICATION_FACTOR,
                "Invalid replication factor: the replication factor must be positive.",
            )
        if replication_factor > self.total:
            raise KafkaError(
                Errors.INVALID_REPLICATION_FACTOR,
                f"The target replication factor of {replication_factor} cannot be reached because only "
                f"{self.total} broker(s) are registered.",
            )
        if self.unfenced == 0:
            raise KafkaError(Errors.INVALID_REPLICATION_FACTOR, "All brokers are currently fenced.")
        # After as many partitions as there are unfenced brokers, reshuffle so the same
        # replica sets do not repeat; with a single unfenced broker that would never end.
        if self._epoch == self.unfenced and self.unfenced > 1:
            self._shuffle()
            self._epoch = 0
        if self._offset == len(self._names):
            self._offset = 0
        epoch = self._epoch
        placed: list[int] = []
        first = self._offset
        while True:
            broker = self._racks[self._names[first]].next_unfenced(epoch)
            if broker >= 0:
                placed.append(broker)
                break
            first = (first + 1) % len(self._names)
        index = self._offset
        while len(placed) < replication_factor:
            index = (index + 1) % len(self._names)
            broker = self._racks[self._names[index]].next(epoch)
            if broker >= 0:
                placed.append(broker)
        self._epoch += 1
        self._offset += 1
        return placed


class StripedReplicaPlacer:
    """Places the replicas of new partitions over the usable brokers."""

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng

    def place(
        self, num_partitions: int, replication_factor: int, brokers: Iterable[UsableBroker]
    ) -> list[list[int]]:
        racks = _RackList(self._rng, brokers)
        return [racks.place(replication_factor) for _ in range(num_partitions)]
