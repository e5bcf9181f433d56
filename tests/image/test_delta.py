from __future__ import annotations

import pytest

from kraftpy.image import (
    ConfigResourceType,
    MetadataDelta,
    MetadataImage,
    MetadataReplayError,
    UnknownMetadataRecordError,
    ZkMigrationState,
)
from protocol import metadata_records as mr
from protocol.framing import ApiMessageAndVersion
from protocol.uuid import Uuid
from tests.image.records import (
    DIR_1A,
    DIR_1B,
    TOPIC_A,
    TOPIC_B,
    change,
    feature,
    partition,
    register_broker,
    topic,
)


def replay(image: MetadataImage, *records: object, start: int = 0) -> MetadataImage:
    d = MetadataDelta(image)
    for i, r in enumerate(records):
        d.replay(r, start + i)
    return d.apply()


# -- cluster ------------------------------------------------------------------------------------


def test_register_broker_keeps_sorted_log_dirs_and_state() -> None:
    img = replay(MetadataImage.EMPTY, register_broker(1, 10, [DIR_1B, DIR_1A], rack="r1"))
    b = img.cluster.brokers[1]
    assert (b.epoch, b.rack, b.fenced, b.state) == (10, "r1", True, "fenced")
    assert b.directories == tuple(sorted([DIR_1A, DIR_1B]))
    assert b.listener("PLAINTEXT") is not None
    assert b.listener("PLAINTEXT").port == 9093


def test_registration_change_fenced_values_and_controlled_shutdown() -> None:
    img = replay(MetadataImage.EMPTY, register_broker(1, 10, [DIR_1A, DIR_1B]))
    img = replay(img, change(1, 10, fenced=-1))
    assert img.cluster.brokers[1].state == "unfenced"
    img = replay(img, change(1, 10, fenced=0, shutdown=1))
    assert img.cluster.brokers[1].state == "controlled_shutdown"
    assert img.cluster.brokers[1].in_controlled_shutdown
    img = replay(img, change(1, 10, fenced=1))
    assert img.cluster.brokers[1].fenced


def test_registration_change_log_dirs_empty_means_no_change() -> None:
    img = replay(MetadataImage.EMPTY, register_broker(1, 10, [DIR_1A, DIR_1B]))
    img = replay(img, change(1, 10, dirs=[]))
    assert img.cluster.brokers[1].directories == tuple(sorted([DIR_1A, DIR_1B]))
    img = replay(img, change(1, 10, dirs=[DIR_1A]))
    assert img.cluster.brokers[1].directories == (DIR_1A,)


def test_legacy_fence_and_unfence_records() -> None:
    img = replay(MetadataImage.EMPTY, register_broker(2, 5))
    img = replay(img, mr.UnfenceBrokerRecord(Id=2, Epoch=5))
    assert not img.cluster.brokers[2].fenced
    img = replay(img, mr.FenceBrokerRecord(Id=2, Epoch=5))
    assert img.cluster.brokers[2].fenced


def test_stale_epoch_and_unknown_broker_are_replay_errors_naming_the_offset() -> None:
    img = replay(MetadataImage.EMPTY, register_broker(1, 10))
    with pytest.raises(MetadataReplayError, match=r"epoch 9, registration has 10 \(record at offset 42\)"):
        replay(img, change(1, 9, fenced=-1), start=42)
    with pytest.raises(MetadataReplayError, match="broker 7: it is not registered"):
        replay(img, mr.UnfenceBrokerRecord(Id=7, Epoch=1))
    with pytest.raises(MetadataReplayError, match="invalid Fenced value 3"):
        replay(img, change(1, 10, fenced=3))


def test_unregister_and_reregister() -> None:
    img = replay(MetadataImage.EMPTY, register_broker(1, 10))
    img = replay(img, mr.UnregisterBrokerRecord(BrokerId=1, BrokerEpoch=10))
    assert 1 not in img.cluster.brokers
    img = replay(img, register_broker(1, 11, [DIR_1A]))
    assert img.cluster.broker_epoch(1) == 11
    assert img.cluster.directory_to_broker() == {DIR_1A: 1}


def test_register_controller() -> None:
    rec = mr.RegisterControllerRecord(
        ControllerId=3000,
        IncarnationId=Uuid.random(),
        ZkMigrationReady=False,
        EndPoints=[
            mr.RegisterControllerRecord.ControllerEndpoint(
                Name="CONTROLLER", Host="h", Port=9093, SecurityProtocol=0
            )
        ],
    )
    img = replay(MetadataImage.EMPTY, rec)
    assert img.cluster.controllers[3000].listeners[0].name == "CONTROLLER"


# -- transactions -------------------------------------------------------------------------------


def test_transaction_records_are_held_until_end() -> None:
    d = MetadataDelta(MetadataImage.EMPTY)
    d.replay(feature("metadata.version", 21), 0)
    d.replay(mr.BeginTransactionRecord(Name="Bootstrap records"), 1)
    d.replay(register_broker(1, 10), 2)
    assert d.in_transaction
    mid = d.apply()
    assert mid.cluster.brokers == {}
    assert mid.provenance.offset == 0  # the Begin at 1 is not in the image
    d.replay(mr.EndTransactionRecord(), 3)
    img = d.apply()
    assert 1 in img.cluster.brokers
    assert img.provenance.offset == 3
    assert not d.in_transaction


def test_aborted_transaction_is_dropped() -> None:
    d = MetadataDelta(MetadataImage.EMPTY)
    d.replay(mr.BeginTransactionRecord(Name="migration"), 0)
    d.replay(register_broker(1, 10), 1)
    d.replay(mr.AbortTransactionRecord(Reason="Controller failover"), 2)
    d.replay(register_broker(2, 11), 3)
    img = d.apply()
    assert list(img.cluster.brokers) == [2]


def test_open_transaction_carries_into_the_next_delta() -> None:
    d = MetadataDelta(MetadataImage.EMPTY)
    d.replay(mr.BeginTransactionRecord(), 0)
    d.replay(register_broker(1, 10), 1)
    img = d.apply()
    d2 = d.next_delta(img)
    assert d2.in_transaction
    d2.replay(mr.EndTransactionRecord(), 2)
    assert 1 in d2.apply().cluster.brokers


def test_transaction_marker_misuse_is_an_error() -> None:
    d = MetadataDelta(MetadataImage.EMPTY)
    with pytest.raises(MetadataReplayError, match="EndTransactionRecord without an open transaction"):
        d.replay(mr.EndTransactionRecord(), 5)
    d.replay(mr.BeginTransactionRecord(Name="a"), 6)
    with pytest.raises(MetadataReplayError, match="still open"):
        d.replay(mr.BeginTransactionRecord(Name="b"), 7)


# -- topics, configs, features ------------------------------------------------------------------


def test_topics_by_id_and_name_and_remove_topic_drops_its_configs() -> None:
    cfg = mr.ConfigRecord(
        ResourceType=ConfigResourceType.TOPIC, ResourceName="a", Name="retention.ms", Value="1"
    )
    img = replay(
        MetadataImage.EMPTY,
        topic("a", TOPIC_A),
        partition(TOPIC_A, 0, [1]),
        partition(TOPIC_A, 1, [1]),
        topic("b", TOPIC_B),
        cfg,
    )
    assert img.topics.get_topic("a").id == TOPIC_A
    assert img.topics.get_topic(TOPIC_A).partition_ids() == [0, 1]
    assert img.configs.configs(ConfigResourceType.TOPIC, "a") == {"retention.ms": "1"}
    img = replay(img, mr.RemoveTopicRecord(TopicId=TOPIC_A))
    assert img.topics.get_topic("a") is None
    assert img.topics.get_topic(TOPIC_A) is None
    assert img.configs.configs(ConfigResourceType.TOPIC, "a") == {}
    assert img.topics.get_topic("b") is not None


def test_topic_deleted_and_recreated_under_the_same_name_in_one_delta() -> None:
    img = replay(MetadataImage.EMPTY, topic("a", TOPIC_A), partition(TOPIC_A, 0, [1]))
    img = replay(img, mr.RemoveTopicRecord(TopicId=TOPIC_A), topic("a", TOPIC_B), partition(TOPIC_B, 0, [2]))
    assert img.topics.get_topic("a").id == TOPIC_B
    assert list(img.topics.topics_by_id) == [TOPIC_B]


def test_a_topic_keeps_its_partitions_in_partition_order() -> None:
    """New partitions, in whatever order they come, take their places; a change to an existing
    one leaves the order as it was (an apply no longer sorts a topic's partitions every time)."""
    img = replay(
        MetadataImage.EMPTY, topic("a", TOPIC_A), partition(TOPIC_A, 2, [1]), partition(TOPIC_A, 0, [1])
    )
    assert list(img.topics.get_topic("a").partitions) == [0, 2]
    img = replay(img, mr.PartitionChangeRecord(TopicId=TOPIC_A, PartitionId=2, Leader=-1))
    assert list(img.topics.get_topic("a").partitions) == [0, 2]
    assert img.topics.get_topic("a").partitions[2].leader == -1
    img = replay(
        img,
        partition(TOPIC_A, 3, [1]),
        mr.PartitionChangeRecord(TopicId=TOPIC_A, PartitionId=0, Leader=-1),
        partition(TOPIC_A, 1, [1]),
    )
    assert list(img.topics.get_topic("a").partitions) == [0, 1, 2, 3]


def test_partition_records_for_unknown_topics_or_partitions_fail() -> None:
    with pytest.raises(MetadataReplayError, match="PartitionRecord for unknown topic id"):
        replay(MetadataImage.EMPTY, partition(TOPIC_A, 0, [1]))
    img = replay(MetadataImage.EMPTY, topic("a", TOPIC_A))
    with pytest.raises(MetadataReplayError, match="unknown partition a-3"):
        replay(img, mr.PartitionChangeRecord(TopicId=TOPIC_A, PartitionId=3, Leader=1))


def test_config_set_and_delete() -> None:
    set_ = mr.ConfigRecord(ResourceType=ConfigResourceType.BROKER, ResourceName="1", Name="k", Value="v")
    delete = mr.ConfigRecord(ResourceType=ConfigResourceType.BROKER, ResourceName="1", Name="k", Value=None)
    img = replay(MetadataImage.EMPTY, set_)
    assert img.configs.configs(4, "1") == {"k": "v"}
    img = replay(img, delete)
    assert img.configs.is_empty()


def test_features_and_migration_state() -> None:
    img = replay(
        MetadataImage.EMPTY,
        feature("metadata.version", 17),
        feature("group.version", 1),
        mr.ZkMigrationStateRecord(ZkMigrationState=3),
    )
    assert img.metadata_version == 17
    assert img.features.level("group.version") == 1
    assert img.migration_state is ZkMigrationState.POST_MIGRATION
    img = replay(img, feature("group.version", 0), feature("metadata.version", 21))
    assert dict(img.features.finalized_versions) == {}
    assert img.metadata_version == 21


def test_producer_ids_and_opaque_stores() -> None:
    acl = mr.AccessControlEntryRecord(Id=Uuid.random(), ResourceType=2, ResourceName="t", Principal="User:x")
    img = replay(
        MetadataImage.EMPTY,
        mr.ProducerIdsRecord(BrokerId=1, BrokerEpoch=10, NextProducerId=2000),
        acl,
        mr.UserScramCredentialRecord(
            Name="alice", Mechanism=1, Salt=b"s", StoredKey=b"k", ServerKey=b"v", Iterations=4096
        ),
    )
    assert img.producer_ids.next_producer_id == 2000
    assert len(img.acls) == 1 and len(img.scram) == 1
    img = replay(
        img,
        mr.RemoveAccessControlEntryRecord(Id=acl.Id),
        mr.RemoveUserScramCredentialRecord(Name="alice", Mechanism=1),
    )
    assert img.acls.is_empty() and img.scram.is_empty()


def test_unknown_records_fail_strict_deltas_and_are_counted_otherwise() -> None:
    unknown = mr.UnknownRecord(99, 0, b"\x00")
    with pytest.raises(UnknownMetadataRecordError):
        MetadataDelta(MetadataImage.EMPTY).replay(ApiMessageAndVersion(unknown, 0), 1)
    d = MetadataDelta(MetadataImage.EMPTY, strict=False)
    d.replay(ApiMessageAndVersion(unknown, 0), 1)
    d.replay(mr.NoOpRecord(), 2)
    assert d.unknown_records == {(99, 0): 1}
    assert d.apply().provenance.offset == 2


def test_apply_leaves_the_old_image_alone() -> None:
    base = replay(
        MetadataImage.EMPTY, register_broker(1, 10), topic("a", TOPIC_A), partition(TOPIC_A, 0, [1])
    )
    before = repr(base)
    d = MetadataDelta(base)
    d.replay(change(1, 10, fenced=-1))
    d.replay(mr.PartitionChangeRecord(TopicId=TOPIC_A, PartitionId=0, Isr=[]))
    after = d.apply()
    assert repr(base) == before
    assert after.topics.get_partition("a", 0).isr == ()
    assert after.features is base.features  # untouched areas are shared
    with pytest.raises(TypeError):
        base.cluster.brokers[5] = None  # type: ignore[index]
