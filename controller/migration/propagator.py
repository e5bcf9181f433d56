"""What a migrating KRaft controller tells the ZooKeeper-mode brokers (Kafka's MigrationPropagator).

ZooKeeper-mode brokers still learn leaders only from LeaderAndIsr and UpdateMetadata, so during
the migration the KRaft controller speaks to them as their controller did: the ZooKeeper controller
epoch it claimed, its own node id, isKRaftController set. The requests are built from metadata
images with the ZooKeeper-mode controller's request batch, so both controllers send the same shape:

- `full_requests`: every partition, to every ZooKeeper broker (after the claim, Kafka's
  KRAFT_CONTROLLER_TO_BROKER_COMM);
- `delta_requests`: what changed between two images (dual write).

UpdateMetadata lists every live broker, ZooKeeper-mode or KRaft, so a ZooKeeper broker finds a
leader that already runs as a KRaft broker. A ZooKeeper broker is addressed with the larger of its
`/brokers/ids` znode's epoch and its KRaft registration's: it fences with the latter once registered.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

from controller.zk.model import LEADER_DURING_DELETE, Endpoint, LeaderAndIsr, LiveBroker, TopicPartition
from controller.zk.requests import BrokerRequest, PartitionStateOut, RequestBatch
from kraftpy.config import SECURITY_PROTOCOLS
from kraftpy.image import MetadataImage
from kraftpy.metadata import PartitionRegistration

_PROTOCOL_NAMES = {v: k for k, v in SECURITY_PROTOCOLS.items()}


def live_brokers(image: MetadataImage, zk_live: Mapping[int, LiveBroker]) -> dict[int, LiveBroker]:
    out: dict[int, LiveBroker] = {}
    for b in image.cluster.brokers.values():
        if b.fenced:
            continue
        endpoints = tuple(
            Endpoint(ep.name, ep.host, ep.port, _PROTOCOL_NAMES.get(ep.security_protocol, "PLAINTEXT"))
            for ep in b.listeners
        )
        out[b.id] = LiveBroker(b.id, b.epoch, endpoints, b.rack)
    for b_id, zk in zk_live.items():
        # A ZooKeeper broker fences a KRaft controller's requests with its KRaft registration's
        # epoch once it has one, else with its znode's (Kafka's BrokerEpochManager): addressed with
        # the larger of the two it is accepted either way; a registration the image does not show
        # yet is caught up by re-sending when it does (the shell treats it as a restart).
        reg = image.cluster.brokers.get(b_id)
        epoch = zk.epoch if reg is None else max(zk.epoch, reg.epoch)
        out[b_id] = LiveBroker(b_id, epoch, zk.endpoints, zk.rack)
    return out


def _state(reg: PartitionRegistration, zk_controller_epoch: int) -> LeaderAndIsr:
    return LeaderAndIsr(
        reg.leader,
        reg.leader_epoch,
        tuple(reg.isr),
        zk_controller_epoch,
        reg.partition_epoch,
        int(reg.leader_recovery_state),
    )


def _changed(old: PartitionRegistration, new: PartitionRegistration) -> bool:
    # A directory assignment alone is nothing a ZooKeeper broker is told about.
    return (old.replicas, old.isr, old.leader, old.leader_epoch, old.partition_epoch) != (
        new.replicas,
        new.isr,
        new.leader,
        new.leader_epoch,
        new.partition_epoch,
    )


def _offline(image: MetadataImage) -> dict[TopicPartition, tuple[int, ...]]:
    return {
        (tp.topic_name, tp.partition): tuple(r) for tp, r in image.partitions_with_offline_replicas().items()
    }


def _finish(batch: RequestBatch, image: MetadataImage, targets: Iterable[int]) -> list[BrokerRequest]:
    wanted = set(targets)
    return [r for r in batch.build(_offline(image)) if r.broker_id in wanted]


def full_requests(
    image: MetadataImage, zk_live: Mapping[int, LiveBroker], zk_controller_epoch: int
) -> list[BrokerRequest]:
    batch = RequestBatch(live_brokers(image, zk_live))
    for tp, reg in image.topics.partitions():
        ps = PartitionStateOut(
            (tp.topic_name, tp.partition), tp.topic_id, _state(reg, zk_controller_epoch), tuple(reg.replicas)
        )
        batch.add_leader_and_isr([r for r in reg.replicas if r in zk_live], ps)
    batch.add_update_metadata(set(zk_live), [])
    batch.full_leader_and_isr = set(zk_live)
    return _finish(batch, image, zk_live)


def delta_requests(
    previous: MetadataImage,
    image: MetadataImage,
    zk_live: Mapping[int, LiveBroker],
    zk_controller_epoch: int,
    *,
    brokers_changed: bool = False,
    restarted: Collection[int] = (),
) -> list[BrokerRequest]:
    """`brokers_changed`: the live broker set moved, so every ZooKeeper broker gets the whole
    UpdateMetadata again (Kafka sends it on every broker change). `restarted`: ZooKeeper brokers
    that came (back) since the last requests; they get LeaderAndIsr for every partition they host,
    as a ZooKeeper controller sends a broker that starts."""
    batch = RequestBatch(live_brokers(image, zk_live))
    everything: list[PartitionStateOut] = []
    whole = brokers_changed or bool(restarted)
    for name in sorted(image.topics.topics_by_name):
        topic = image.topics.topics_by_name[name]
        before = previous.topics.get_topic(topic.id)
        if before is topic and not whole:
            continue  # images share a topic no record touched: nothing to tell anyone about it
        for p in sorted(topic.partitions):
            reg = topic.partitions[p]
            ps = PartitionStateOut((name, p), topic.id, _state(reg, zk_controller_epoch), tuple(reg.replicas))
            everything.append(ps)
            old = before.partitions.get(p) if before is not None else None
            if old is None or _changed(old, reg):
                new = PartitionStateOut(ps.tp, ps.topic_id, ps.state, ps.replicas, is_new=old is None)
                batch.add_leader_and_isr([r for r in reg.replicas if r in zk_live], new)
            elif restarted:
                batch.add_leader_and_isr([r for r in reg.replicas if r in restarted and r in zk_live], ps)
    for tp, reg in previous.topics.partitions():
        if image.topics.get_topic(tp.topic_id) is not None:
            continue
        key = (tp.topic_name, tp.partition)
        for r in reg.replicas:
            if r in zk_live:
                batch.add_stop_replica(r, key, LEADER_DURING_DELETE, True)
        gone = LeaderAndIsr(LEADER_DURING_DELETE, reg.leader_epoch, tuple(reg.isr), zk_controller_epoch)
        batch.add_update_metadata(
            set(zk_live), [PartitionStateOut(key, tp.topic_id, gone, tuple(reg.replicas))]
        )
    if brokers_changed:
        batch.add_update_metadata(set(zk_live), everything)
    return _finish(batch, image, zk_live)
