"""The requests a ZooKeeper-mode controller sends brokers, batched per event (Kafka's
ControllerBrokerRequestBatch).

An event adds LeaderAndIsr, UpdateMetadata and StopReplica entries as its state machines move; at
the end `build` gives one request of each kind per broker. Adding a partition's LeaderAndIsr also
adds it to the UpdateMetadata every live broker gets, as Kafka does, so no broker's metadata cache
lags the leaders. Per broker they leave in Kafka's order: LeaderAndIsr, UpdateMetadata, StopReplica.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from controller.zk.model import LeaderAndIsr, LiveBroker, TopicPartition
from protocol.uuid import Uuid


@dataclass(frozen=True, slots=True)
class PartitionStateOut:
    tp: TopicPartition
    topic_id: Uuid
    state: LeaderAndIsr
    replicas: tuple[int, ...]
    is_new: bool = False
    offline_replicas: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class LeaderAndIsrOut:
    broker_id: int
    broker_epoch: int
    partitions: tuple[PartitionStateOut, ...]
    live_leaders: tuple[LiveBroker, ...]
    full: bool = False


@dataclass(frozen=True, slots=True)
class UpdateMetadataOut:
    broker_id: int
    broker_epoch: int
    partitions: tuple[PartitionStateOut, ...]
    live_brokers: tuple[LiveBroker, ...]


@dataclass(frozen=True, slots=True)
class StopReplicaOut:
    broker_id: int
    broker_epoch: int
    partitions: tuple[tuple[TopicPartition, int, bool], ...]
    """(partition, leader epoch, delete the log)."""


BrokerRequest = LeaderAndIsrOut | UpdateMetadataOut | StopReplicaOut


@dataclass
class RequestBatch:
    live: dict[int, LiveBroker]
    leader_and_isr: dict[int, dict[TopicPartition, PartitionStateOut]] = field(default_factory=dict)
    update_metadata: dict[int, dict[TopicPartition, PartitionStateOut]] = field(default_factory=dict)
    update_metadata_brokers: set[int] = field(default_factory=set)
    stop_replica: dict[int, dict[TopicPartition, tuple[int, bool]]] = field(default_factory=dict)
    full_leader_and_isr: set[int] = field(default_factory=set)

    def add_leader_and_isr(self, brokers: list[int] | set[int], ps: PartitionStateOut) -> None:
        for b in brokers:
            if b not in self.live:
                continue
            prev = self.leader_and_isr.setdefault(b, {}).get(ps.tp)
            # A replica that is new stays new for the whole batch (Kafka keeps IsNew once set).
            is_new = ps.is_new or (prev is not None and prev.is_new)
            self.leader_and_isr[b][ps.tp] = PartitionStateOut(
                ps.tp, ps.topic_id, ps.state, ps.replicas, is_new
            )
        self.add_update_metadata(set(self.live), [ps])

    def add_update_metadata(self, brokers: set[int], partitions: list[PartitionStateOut]) -> None:
        for b in brokers:
            if b not in self.live:
                continue
            self.update_metadata_brokers.add(b)
            per = self.update_metadata.setdefault(b, {})
            for ps in partitions:
                per[ps.tp] = ps

    def add_stop_replica(self, broker: int, tp: TopicPartition, leader_epoch: int, delete: bool) -> None:
        if broker not in self.live:
            return
        prev = self.stop_replica.setdefault(broker, {}).get(tp)
        self.stop_replica[broker][tp] = (leader_epoch, delete or (prev is not None and prev[1]))

    def build(self, offline_replicas: dict[TopicPartition, tuple[int, ...]]) -> list[BrokerRequest]:
        """Every request, per broker in Kafka's order; `offline_replicas` fills UpdateMetadata's
        OfflineReplicas as the event leaves them."""
        live_brokers = tuple(self.live[b] for b in sorted(self.live))
        out: list[BrokerRequest] = []
        for b in sorted(set(self.leader_and_isr) | self.update_metadata_brokers | set(self.stop_replica)):
            broker = self.live[b]
            lai = self.leader_and_isr.get(b)
            if lai:
                leaders = {p.state.leader for p in lai.values()}
                out.append(
                    LeaderAndIsrOut(
                        b,
                        broker.epoch,
                        tuple(lai[tp] for tp in sorted(lai)),
                        tuple(self.live[x] for x in sorted(leaders) if x in self.live),
                        full=b in self.full_leader_and_isr,
                    )
                )
            if b in self.update_metadata_brokers:
                um = self.update_metadata.get(b, {})
                parts = tuple(
                    PartitionStateOut(
                        tp, ps.topic_id, ps.state, ps.replicas, offline_replicas=offline_replicas.get(tp, ())
                    )
                    for tp, ps in sorted(um.items())
                )
                out.append(UpdateMetadataOut(b, broker.epoch, parts, live_brokers))
            sr = self.stop_replica.get(b)
            if sr:
                out.append(
                    StopReplicaOut(b, broker.epoch, tuple((tp, e, d) for tp, (e, d) in sorted(sr.items())))
                )
        return out
