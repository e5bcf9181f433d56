"""ZooKeeper's metadata as a value: the copy into records, and the writes that mirror an image back."""

from __future__ import annotations

from dataclasses import replace

from controller.migration.zk_metadata import (
    DeleteTree,
    Upsert,
    ZkMetadata,
    begin_migration,
    end_migration,
    migration_records,
    zk_writes,
)
from controller.zk.model import LeaderAndIsr, TopicAssignment
from kraftpy.metadata import ZkMigrationState
from protocol import znodes
from protocol.uuid import MIGRATING, Uuid
from tests.migration.images import build, pre_migration, zk_broker

T1, T2 = Uuid.random(), Uuid.random()


def zk_cluster() -> ZkMetadata:
    return ZkMetadata(
        topics={
            "orders": TopicAssignment(T1, {0: (1, 2), 1: (2, 1)}),
            "audit": TopicAssignment(T2, {0: (2,)}),
        },
        states={
            ("orders", 0): LeaderAndIsr(1, 4, (1, 2), 3, zk_version=9),
            ("orders", 1): LeaderAndIsr(2, 0, (2,), 3, zk_version=1, leader_recovery_state=1),
            ("audit", 0): LeaderAndIsr(2, 2, (2,), 3, zk_version=3),
        },
        topic_configs={"orders": {"retention.ms": "1000", "min.insync.replicas": "2"}, "audit": {}},
        next_producer_id=3000,
    )


def migrated(zk: ZkMetadata):  # type: ignore[no-untyped-def]
    base = build([zk_broker(1), zk_broker(2)], pre_migration())
    return build([begin_migration(), *migration_records(zk), *end_migration()], base)


def test_the_copy_keeps_every_fact_and_leaves_replicas_migrating() -> None:
    image = migrated(zk_cluster())
    assert image.migration_state == ZkMigrationState.MIGRATION
    p = image.partition("orders", 0)
    assert p is not None
    assert (p.leader, p.leader_epoch, p.isr, p.partition_epoch) == (1, 4, (1, 2), 9)
    assert p.directories == (MIGRATING, MIGRATING)
    assert int(image.partition("orders", 1).leader_recovery_state) == 1  # type: ignore[union-attr]
    assert image.topics.get_topic("audit").id == T2  # type: ignore[union-attr]
    assert dict(image.configs.configs(2, "orders")) == {"retention.ms": "1000", "min.insync.replicas": "2"}
    assert image.producer_ids.next_producer_id == 3000


def test_the_copy_is_one_transaction_ending_in_migration() -> None:
    records = [begin_migration(), *migration_records(zk_cluster()), *end_migration()]
    names = [type(r.message).__name__ for r in records]
    assert names[0] == "BeginTransactionRecord" and records[0].message.Name == "ZK Migration"
    assert names[-2:] == ["ZkMigrationStateRecord", "EndTransactionRecord"]
    assert all(r.version == 0 for r in records if names[records.index(r)] == "PartitionRecord")


def test_an_image_of_the_copy_needs_no_write_back() -> None:
    zk = zk_cluster()
    assert zk_writes(zk, ZkMetadata.of_image(migrated(zk), controller_epoch=7)) == []


def test_a_topic_deleted_in_zookeeper_by_hand_is_written_back() -> None:
    zk = zk_cluster()
    image_view = ZkMetadata.of_image(migrated(zk), controller_epoch=7)
    by_hand = replace(
        zk,
        topics={"audit": zk.topics["audit"]},
        states={k: v for k, v in zk.states.items() if k[0] == "audit"},
        topic_configs={"audit": {}},
    )
    writes = zk_writes(by_hand, image_view)
    paths = [w.path for w in writes]
    assert paths[0] == "/brokers/topics/orders"
    assert "/brokers/topics/orders/partitions/0/state" in paths
    assert "/config/topics/orders" in paths
    topic = znodes.TopicZnode.from_bytes(writes[0].data)  # type: ignore[union-attr]
    assert topic.topic_id == T1 and topic.partitions == {0: [1, 2], 1: [2, 1]}
    state = znodes.PartitionStateZnode.from_bytes(
        next(w for w in writes if w.path.endswith("orders/partitions/0/state")).data  # type: ignore[union-attr]
    )
    assert (state.leader, state.leader_epoch, state.isr, state.controller_epoch) == (1, 4, [1, 2], 7)


def test_changes_become_upserts_and_deletions_trees() -> None:
    zk = zk_cluster()
    new_leader = replace(zk.states[("orders", 0)], leader=2, leader_epoch=5, isr=(2,))
    target = replace(
        zk,
        topics={"orders": zk.topics["orders"]},
        states={**{k: v for k, v in zk.states.items() if k[0] == "orders"}, ("orders", 0): new_leader},
        topic_configs={"orders": {"retention.ms": "5"}},
    )
    writes = zk_writes(zk, target)
    assert writes[:3] == [
        DeleteTree("/brokers/topics/audit"),
        DeleteTree("/config/topics/audit"),
        DeleteTree("/admin/delete_topics/audit"),
    ]
    assert [w.path for w in writes[3:]] == [
        "/brokers/topics/orders/partitions/0/state",
        "/config/topics/orders",
    ]
    assert isinstance(writes[3], Upsert)


def test_a_state_differing_only_in_who_wrote_it_is_not_rewritten() -> None:
    zk = zk_cluster()
    restamped = replace(
        zk, states={k: replace(v, controller_epoch=99, zk_version=0) for k, v in zk.states.items()}
    )
    assert zk_writes(zk, restamped) == []


def test_a_topic_recreated_under_its_name_replaces_the_old_one() -> None:
    zk = zk_cluster()
    new_id = Uuid.random()
    target = replace(zk, topics={**zk.topics, "audit": TopicAssignment(new_id, {0: (1,)})})
    writes = zk_writes(zk, target)
    assert writes[0] == DeleteTree("/brokers/topics/audit")
    assert znodes.TopicZnode.from_bytes(writes[1].data).topic_id == new_id  # type: ignore[union-attr]


def test_producer_ids_handed_out_by_kraft_are_written_as_a_block_beyond_them() -> None:
    zk = zk_cluster()
    view = replace(ZkMetadata.of_image(migrated(zk), 7), next_producer_id=5000)
    writes = zk_writes(zk, view)
    assert writes == [
        Upsert("/latest_producer_id_block", znodes.ProducerIdBlockZnode(-1, 5000, 5999).to_bytes())
    ]
    assert zk_writes(replace(zk, next_producer_id=6000), view) == [], "ZooKeeper ahead of KRaft is left alone"
