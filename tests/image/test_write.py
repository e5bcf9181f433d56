"""image -> records -> image, whole and split into batches at any points."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from kraftpy.image import MetadataDelta, MetadataImage
from protocol import metadata_records as mr
from protocol.framing import ApiMessageAndVersion, decode_record, encode_record
from protocol.uuid import LOST, MIGRATING, UNASSIGNED, Uuid
from tests.image.records import (
    DIR_1A,
    DIR_1B,
    DIR_2A,
    TOPIC_A,
    TOPIC_B,
    change,
    feature,
    partition,
    register_broker,
    topic,
)


def rich_image(mv: int = 21) -> MetadataImage:
    d = MetadataDelta(MetadataImage.EMPTY)
    records = [
        feature("metadata.version", mv),
        feature("group.version", 1),
        mr.ZkMigrationStateRecord(ZkMigrationState=0),
        register_broker(1, 10, [DIR_1A, DIR_1B], fenced=False, rack="r1"),
        register_broker(2, 20, [DIR_2A], fenced=False),
        change(2, 20, shutdown=1),
        register_broker(3, 30, []),
        mr.RegisterControllerRecord(
            ControllerId=3000,
            IncarnationId=Uuid.from_longs(5, 6),
            EndPoints=[
                mr.RegisterControllerRecord.ControllerEndpoint(
                    Name="CONTROLLER", Host="h", Port=1, SecurityProtocol=0
                )
            ],
            Features=[
                mr.RegisterControllerRecord.ControllerFeature(
                    Name="kraft.version", MinSupportedVersion=0, MaxSupportedVersion=1
                )
            ],
        ),
        topic("a", TOPIC_A),
        partition(TOPIC_A, 0, [1, 2], [DIR_1A, DIR_2A]),
        partition(TOPIC_A, 1, [2, 1], [UNASSIGNED, LOST]),
        mr.PartitionChangeRecord(TopicId=TOPIC_A, PartitionId=1, Leader=1, Isr=[1], LeaderRecoveryState=1),
        topic("b", TOPIC_B),
        partition(TOPIC_B, 0, [3], None),
        mr.ConfigRecord(ResourceType=2, ResourceName="a", Name="cleanup.policy", Value="compact"),
        mr.ConfigRecord(ResourceType=4, ResourceName="", Name="log.retention.ms", Value="100"),
        mr.ClientQuotaRecord(
            Entity=[mr.ClientQuotaRecord.EntityData(EntityType="user", EntityName="alice")],
            Key="producer_byte_rate",
            Value=1024.0,
        ),
        mr.ProducerIdsRecord(BrokerId=1, BrokerEpoch=10, NextProducerId=5000),
        mr.AccessControlEntryRecord(
            Id=Uuid.from_longs(7, 8),
            ResourceType=2,
            ResourceName="a",
            PatternType=3,
            Principal="User:alice",
            Host="*",
            Operation=3,
            PermissionType=3,
        ),
        mr.UserScramCredentialRecord(
            Name="alice", Mechanism=1, Salt=b"salt", StoredKey=b"sk", ServerKey=b"vk", Iterations=4096
        ),
        mr.DelegationTokenRecord(
            Owner="User:alice", Requester="User:alice", Renewers=["User:bob"], TokenId="tok", MaxTimestamp=9
        ),
    ]
    for i, r in enumerate(records):
        d.replay(r, i)
    return d.apply()


def through_bytes(records: list[ApiMessageAndVersion]) -> list[ApiMessageAndVersion]:
    return [decode_record(encode_record(r)) for r in records]


def same_state(a: MetadataImage, b: MetadataImage) -> bool:
    return replace(a, provenance=b.provenance) == b


def test_write_starts_with_metadata_version_and_round_trips() -> None:
    img = rich_image()
    records = img.write()
    assert records[0].message == mr.FeatureLevelRecord(Name="metadata.version", FeatureLevel=21)
    names = [type(r.message).__name__ for r in records]
    assert names.index("RegisterBrokerRecord") < names.index("TopicRecord") < names.index("ConfigRecord")
    d = MetadataDelta(MetadataImage.EMPTY)
    for r in through_bytes(records):
        d.replay(r)
    assert same_state(d.apply(), img)


def test_record_versions_follow_metadata_version() -> None:
    img = rich_image()
    by_type = {type(r.message).__name__: r.version for r in img.write(21)}
    assert by_type["RegisterBrokerRecord"] == 3
    assert by_type["PartitionRecord"] == 1
    old = {type(r.message).__name__: r.version for r in img.write(14)}
    assert old["RegisterBrokerRecord"] == 2
    assert old["PartitionRecord"] == 0
    assert "RegisterControllerRecord" not in old
    # below JBOD's metadata.version directories cannot be written: they come back MIGRATING
    d = MetadataDelta(MetadataImage.EMPTY)
    for r in through_bytes(img.write(14)):
        d.replay(r)
    back = d.apply()
    assert back.partition("a", 0).directories == (MIGRATING, MIGRATING)
    assert back.cluster.brokers[1].directories == ()
    assert back.metadata_version == 14


def test_elr_is_written_from_metadata_version_22() -> None:
    d = MetadataDelta(rich_image(22))
    d.replay(
        mr.PartitionChangeRecord(TopicId=TOPIC_A, PartitionId=0, EligibleLeaderReplicas=[2], LastKnownElr=[1])
    )
    img = d.apply()
    recs = img.write()
    assert {r.version for r in recs if isinstance(r.message, mr.PartitionRecord)} == {2}
    d = MetadataDelta(MetadataImage.EMPTY)
    for r in through_bytes(recs):
        d.replay(r)
    assert d.apply().partition("a", 0).elr == (2,)


def test_empty_image_writes_nothing() -> None:
    assert MetadataImage.EMPTY.write() == []


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_round_trip_at_every_batch_split(data: st.DataObject) -> None:
    img = rich_image()
    records = img.write()
    cuts = sorted(data.draw(st.sets(st.integers(1, len(records) - 1), max_size=len(records) - 1)))
    image = MetadataImage.EMPTY
    offset = 0
    for lo, hi in zip([0, *cuts], [*cuts, len(records)], strict=True):
        d = MetadataDelta(image)
        for r in records[lo:hi]:
            d.replay(r, offset)
            offset += 1
        image = d.apply()
    assert same_state(image, img)
    assert image.provenance.offset == len(records) - 1
