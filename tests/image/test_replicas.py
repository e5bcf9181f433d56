"""Local changes for a broker, offline replicas (the one rule of kraftpy.metadata.replicas), leaderless and by-directory views."""

from __future__ import annotations

from kraftpy.image import MetadataDelta, MetadataImage, TopicIdPartition, is_acceptable_leader
from protocol import metadata_records as mr
from protocol.uuid import LOST, MIGRATING, UNASSIGNED
from tests.image.records import (
    DIR_1A,
    DIR_1B,
    DIR_2A,
    DIR_3A,
    TOPIC_A,
    TOPIC_B,
    change,
    partition,
    register_broker,
    topic,
)


def replay(image: MetadataImage, *records: object) -> MetadataImage:
    d = MetadataDelta(image)
    for r in records:
        d.replay(r)
    return d.apply()


def cluster() -> MetadataImage:
    return replay(
        MetadataImage.EMPTY,
        register_broker(1, 10, [DIR_1A, DIR_1B], fenced=False),
        register_broker(2, 20, [DIR_2A], fenced=False),
        register_broker(3, 30, [], fenced=False),  # registered before JBOD: every dir online
        topic("a", TOPIC_A),
        partition(TOPIC_A, 0, [1, 2, 3], [DIR_1A, DIR_2A, MIGRATING]),
        partition(TOPIC_A, 1, [2, 1], [DIR_2A, DIR_1B]),
    )


def test_offline_replicas_follow_kip_858_rules() -> None:
    img = cluster()
    assert img.offline_replicas("a", 0) == []
    # broker 1 loses DIR_1A: its replica of a-0 goes offline, a-1 (on DIR_1B) stays
    img2 = replay(img, change(1, 10, dirs=[DIR_1B]))
    assert img2.offline_replicas("a", 0) == [1]
    assert img2.offline_replicas("a", 1) == []
    # LOST is offline even for a pre-JBOD registration; an unknown id is online there
    img3 = replay(
        img, mr.PartitionChangeRecord(TopicId=TOPIC_A, PartitionId=0, Directories=[DIR_1A, LOST, DIR_3A])
    )
    assert img3.offline_replicas("a", 0) == [2]
    # UNASSIGNED counts as online on a broker registered with one dir (or none)...
    img4 = replay(
        img,
        mr.PartitionChangeRecord(
            TopicId=TOPIC_A, PartitionId=0, Directories=[DIR_1A, UNASSIGNED, UNASSIGNED]
        ),
    )
    assert img4.offline_replicas("a", 0) == []
    # ...and offline on one registered with several, until it is placed (docs/kip-deviations.md)
    img4b = replay(
        img,
        mr.PartitionChangeRecord(TopicId=TOPIC_A, PartitionId=0, Directories=[UNASSIGNED, DIR_2A, DIR_3A]),
    )
    assert img4b.offline_replicas("a", 0) == [1]
    # fenced and missing brokers
    img5 = replay(img, change(2, 20, fenced=1), mr.UnregisterBrokerRecord(BrokerId=3, BrokerEpoch=30))
    assert img5.offline_replicas("a", 0) == [2, 3]
    assert img5.partitions_with_offline_replicas() == {
        TopicIdPartition(TOPIC_A, "a", 0): [2, 3],
        TopicIdPartition(TOPIC_A, "a", 1): [2],
    }


def test_acceptable_leader_also_excludes_controlled_shutdown() -> None:
    img = replay(cluster(), change(1, 10, shutdown=1))
    reg = img.partition("a", 0)
    assert img.offline_replicas("a", 0) == []
    assert not is_acceptable_leader(img.cluster, reg, 1)
    assert is_acceptable_leader(img.cluster, reg, 2)


def test_leaderless_and_by_directory() -> None:
    img = replay(cluster(), mr.PartitionChangeRecord(TopicId=TOPIC_A, PartitionId=1, Leader=-1))
    assert img.topics.leaderless_partitions() == [TopicIdPartition(TOPIC_A, "a", 1)]
    assert img.topics.replicas_by_directory(1) == {
        DIR_1A: [TopicIdPartition(TOPIC_A, "a", 0)],
        DIR_1B: [TopicIdPartition(TOPIC_A, "a", 1)],
    }
    assert img.topics.replicas_by_directory(3) == {MIGRATING: [TopicIdPartition(TOPIC_A, "a", 0)]}


def test_local_changes_leaders_followers_deletes_and_directories() -> None:
    img = cluster()
    a0 = TopicIdPartition(TOPIC_A, "a", 0)
    a1 = TopicIdPartition(TOPIC_A, "a", 1)

    # from nothing: every partition is new to broker 1
    d = MetadataDelta(MetadataImage.EMPTY)
    for r in img.write(21):
        d.replay(r)
    first = d.local_changes(1)
    assert set(first.leaders) == {a0} and set(first.elected_leaders) == {a0}
    assert set(first.followers) == {a1}
    assert first.directory_ids == {a0: DIR_1A, a1: DIR_1B}

    # a directory move for broker 1 on a-1, broker 1 dropped from a-0, topic b created then deleted
    d = MetadataDelta(img)
    d.replay(mr.PartitionChangeRecord(TopicId=TOPIC_A, PartitionId=1, Directories=[DIR_2A, DIR_1A]))
    d.replay(
        mr.PartitionChangeRecord(
            TopicId=TOPIC_A,
            PartitionId=0,
            Replicas=[2, 3],
            Isr=[2, 3],
            Leader=2,
            Directories=[DIR_2A, MIGRATING],
        )
    )
    changes = d.local_changes(1)
    assert changes.deletes == {a0}
    assert set(changes.followers) == {a1}
    assert changes.directory_ids == {a1: DIR_1A}
    assert d.local_changes(2).leaders.keys() == {a0, a1}  # any partition epoch change reaches the leader
    assert d.local_changes(2).directory_ids == {}

    # deleting a topic deletes its local replicas
    img2 = replay(img, topic("b", TOPIC_B), partition(TOPIC_B, 0, [1]))
    d = MetadataDelta(img2)
    d.replay(mr.RemoveTopicRecord(TopicId=TOPIC_B))
    assert d.local_changes(1).deletes == {TopicIdPartition(TOPIC_B, "b", 0)}
    assert d.local_changes(2).is_empty()
