"""What the KRaft controller sends ZooKeeper brokers during a migration, built from images."""

from __future__ import annotations

from controller.migration.propagator import delta_requests, full_requests
from controller.migration.zk_metadata import ZkMetadata, begin_migration, end_migration, migration_records
from controller.zk.model import LEADER_DURING_DELETE, Endpoint, LeaderAndIsr, LiveBroker, TopicAssignment
from controller.zk.requests import LeaderAndIsrOut, StopReplicaOut, UpdateMetadataOut
from controller.zk.wire import RequestWire
from protocol import metadata_records as mr
from protocol.uuid import Uuid
from tests.migration.images import build, pre_migration, zk_broker

T = Uuid.random()
ZK_LIVE = {b: LiveBroker(b, 4294967300 + b, (Endpoint("PLAINTEXT", "127.0.0.1", 9090 + b),)) for b in (1, 2)}


def migrated():  # type: ignore[no-untyped-def]
    zk = ZkMetadata(
        topics={"orders": TopicAssignment(T, {0: (1, 2), 1: (2, 3)})},
        states={
            ("orders", 0): LeaderAndIsr(1, 3, (1, 2), 4, 5),
            ("orders", 1): LeaderAndIsr(3, 1, (3, 2), 4, 2),
        },
    )
    kraft_broker = mr.RegisterBrokerRecord(
        BrokerId=3,
        IncarnationId=Uuid.random(),
        BrokerEpoch=77,
        EndPoints=[
            mr.RegisterBrokerRecord.BrokerEndpoint(
                Name="PLAINTEXT", Host="127.0.0.1", Port=9093, SecurityProtocol=0
            )
        ],
        Features=[],
        Rack=None,
        Fenced=False,
    )
    base = build([zk_broker(1), zk_broker(2), kraft_broker], pre_migration())
    return build([begin_migration(), *migration_records(zk), *end_migration()], base)


def by_kind(requests, kind):  # type: ignore[no-untyped-def]
    return {r.broker_id: r for r in requests if isinstance(r, kind)}


def test_full_requests_go_to_zookeeper_brokers_only_and_name_kraft_brokers_as_live() -> None:
    image = migrated()
    requests = full_requests(image, ZK_LIVE, zk_controller_epoch=9)
    assert {r.broker_id for r in requests} == {1, 2}, "broker 3 runs in KRaft mode: it reads the log"
    lai = by_kind(requests, LeaderAndIsrOut)
    assert [p.tp for p in lai[1].partitions] == [("orders", 0)]
    assert [p.tp for p in lai[2].partitions] == [("orders", 0), ("orders", 1)]
    assert lai[1].broker_epoch == ZK_LIVE[1].epoch, "a ZooKeeper broker fences with its znode's epoch"
    state = lai[2].partitions[1].state
    assert (state.leader, state.controller_epoch, state.zk_version) == (3, 9, 2)
    um = by_kind(requests, UpdateMetadataOut)
    assert {b.id for b in um[1].live_brokers} == {1, 2, 3}
    wire = RequestWire(3000, 9, kraft_controller=True).leader_and_isr(lai[1])
    assert wire.isKRaftController is True and wire.ControllerId == 3000 and wire.ControllerEpoch == 9


def test_a_delta_sends_what_changed_and_stops_deleted_replicas() -> None:
    image = migrated()
    new_topic = Uuid.random()
    later = build(
        [
            mr.PartitionChangeRecord(PartitionId=0, TopicId=T, Leader=2, Isr=[2]),
            mr.TopicRecord(Name="fresh", TopicId=new_topic),
            mr.PartitionRecord(
                PartitionId=0,
                TopicId=new_topic,
                Replicas=[1],
                Isr=[1],
                Leader=1,
                LeaderEpoch=0,
                PartitionEpoch=0,
            ),
        ],
        image,
    )
    requests = delta_requests(image, later, ZK_LIVE, 9)
    lai = by_kind(requests, LeaderAndIsrOut)
    assert sorted(p.tp for p in lai[1].partitions) == [("fresh", 0), ("orders", 0)]
    assert next(p for p in lai[1].partitions if p.tp == ("fresh", 0)).is_new
    assert [p.tp for p in lai[2].partitions] == [("orders", 0)], "orders-1 did not change"

    gone = build([mr.RemoveTopicRecord(TopicId=T)], later)
    requests = delta_requests(later, gone, ZK_LIVE, 9)
    stops = by_kind(requests, StopReplicaOut)
    assert stops[2].partitions == (
        (("orders", 0), LEADER_DURING_DELETE, True),
        (("orders", 1), LEADER_DURING_DELETE, True),
    )
    um = by_kind(requests, UpdateMetadataOut)
    assert {p.state.leader for p in um[1].partitions} == {LEADER_DURING_DELETE}


def test_a_restarted_zookeeper_broker_gets_every_partition_it_hosts() -> None:
    image = migrated()
    requests = delta_requests(image, image, ZK_LIVE, 9, brokers_changed=True, restarted={2})
    lai = by_kind(requests, LeaderAndIsrOut)
    assert set(lai) == {2}
    assert [p.tp for p in lai[2].partitions] == [("orders", 0), ("orders", 1)]
    assert set(by_kind(requests, UpdateMetadataOut)) == {1, 2}


def test_a_zookeeper_broker_registered_with_kraft_is_addressed_with_an_epoch_it_accepts() -> None:
    """It fences a KRaft controller's requests with its KRaft registration's epoch once it has one,
    with its znode's before: the larger of the two passes both fences (the epochs come from unrelated
    counters, so either may be larger)."""
    image = migrated()
    low_znodes = {b: LiveBroker(b, 5, x.endpoints) for b, x in ZK_LIVE.items()}
    lai = by_kind(full_requests(image, low_znodes, zk_controller_epoch=9), LeaderAndIsrOut)
    assert lai[1].broker_epoch == 10, "its KRaft registration (epoch 10) is newer than the znode's 5"
    lai = by_kind(full_requests(image, ZK_LIVE, zk_controller_epoch=9), LeaderAndIsrOut)
    assert lai[1].broker_epoch == ZK_LIVE[1].epoch
