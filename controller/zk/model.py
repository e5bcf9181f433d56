"""What the ZooKeeper-mode controller knows of brokers and partitions, as plain values."""

from __future__ import annotations

from dataclasses import dataclass, replace

from protocol.uuid import Uuid

TopicPartition = tuple[str, int]

NO_LEADER = -1
"""LeaderAndIsr.NoLeader: the partition is offline."""
LEADER_DURING_DELETE = -2
"""LeaderAndIsr.LeaderDuringDelete: UpdateMetadata's way to say the topic is being deleted."""


@dataclass(frozen=True, slots=True)
class Endpoint:
    listener: str
    host: str
    port: int
    security_protocol: str = "PLAINTEXT"


@dataclass(frozen=True, slots=True)
class LiveBroker:
    """A broker registered under `/brokers/ids`: its epoch is the czxid of that ephemeral znode, so
    a broker that restarted, even quickly, has a new one."""

    id: int
    epoch: int
    endpoints: tuple[Endpoint, ...] = ()
    rack: str | None = None

    def endpoint(self, listener: str | None = None) -> Endpoint | None:
        for ep in self.endpoints:
            if listener is None or ep.listener == listener:
                return ep
        return None


@dataclass(frozen=True, slots=True)
class LeaderAndIsr:
    """`/brokers/topics/<t>/partitions/<p>/state` and the version of that znode (the partition epoch)."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int
    zk_version: int = 0
    leader_recovery_state: int = 0

    def new_leader_and_isr(self, leader: int, isr: tuple[int, ...], controller_epoch: int) -> LeaderAndIsr:
        """A new leader (or none): the leader epoch moves."""
        return replace(
            self,
            leader=leader,
            isr=tuple(isr),
            leader_epoch=self.leader_epoch + 1,
            controller_epoch=controller_epoch,
        )

    def new_isr(self, isr: tuple[int, ...], controller_epoch: int) -> LeaderAndIsr:
        """The same leader with another ISR: the leader epoch stays (AlterPartition)."""
        return replace(self, isr=tuple(isr), controller_epoch=controller_epoch)


@dataclass(frozen=True, slots=True)
class TopicAssignment:
    """`/brokers/topics/<t>`: the topic id and each partition's replicas."""

    topic_id: Uuid
    partitions: dict[int, tuple[int, ...]]
