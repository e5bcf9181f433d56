"""One table of (record, version, bytes), checked in both directions, plus the codec's errors.

Bytes were worked out by hand from the serialization rules (reference 8.3). {T} is a topic id,
{D} a directory id.
"""

from __future__ import annotations

from typing import Any

import pytest

from protocol.framing import (
    ApiMessageAndVersion,
    RecordFrameError,
    decode_record,
    default_version,
    encode_record,
)
from protocol.message import MessageDecodeError, MessageEncodeError, UnsupportedVersionError
from protocol.metadata_records import (
    RECORD_CLASSES,
    AbortTransactionRecord,
    BeginTransactionRecord,
    BrokerRegistrationChangeRecord,
    ClientQuotaRecord,
    ConfigRecord,
    EndTransactionRecord,
    FeatureLevelRecord,
    MetadataRecordType,
    NoOpRecord,
    PartitionChangeRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    RemoveTopicRecord,
    TopicRecord,
    UnknownRecord,
    ZkMigrationStateRecord,
)
from protocol.uuid import Uuid

T = Uuid.from_longs(0x0123456789ABCDEF, 0x0FEDCBA987654321)
D = Uuid.from_string("XHhkr4tkSsD900pOQ8pPfg")
HEX = {"T": T.bytes.hex(), "D": D.bytes.hex()}

TABLE: list[tuple[str, Any, int, str]] = [
    ("noop (reference example)", NoOpRecord(), 0, "01 14 00 00"),
    (
        "metadata.version 21 (reference example)",
        FeatureLevelRecord(Name="metadata.version", FeatureLevel=21),
        0,
        "01 0c 00 11" + b"metadata.version".hex() + "0015 00",
    ),
    ("end transaction", EndTransactionRecord(), 0, "01 18 00 00"),
    ("begin transaction, tagged name", BeginTransactionRecord(Name="x"), 0, "01 17 00 01 00 02 02 78"),
    ("abort transaction, no reason", AbortTransactionRecord(), 0, "01 19 00 00"),
    ("topic", TopicRecord(Name="t", TopicId=T), 0, "01 02 00 02 74 {T} 00"),
    ("remove topic", RemoveTopicRecord(TopicId=T), 0, "01 09 00 {T} 00"),
    ("zk migration NONE", ZkMigrationStateRecord(ZkMigrationState=0), 0, "01 15 00 00 00"),
    (
        "config delete (null value)",
        ConfigRecord(ResourceType=2, ResourceName="t", Name="k", Value=None),
        0,
        "01 04 00 02 02 74 02 6b 00 00",
    ),
    (
        "producer ids",
        ProducerIdsRecord(BrokerId=1, BrokerEpoch=5, NextProducerId=1000),
        0,
        "01 0f 00 00000001 0000000000000005 00000000000003e8 00",
    ),
    (
        "partition change: isr and leader, tags in order",
        PartitionChangeRecord(PartitionId=0, TopicId=T, Isr=[1, 2], Leader=1),
        0,
        "01 05 00 00000000 {T} 02 00 09 03 00000001 00000002 01 04 00000001",
    ),
    (
        "partition change v1: directories is tag 8",
        PartitionChangeRecord(PartitionId=3, TopicId=T, Directories=[D]),
        1,
        "01 05 01 00000003 {T} 01 08 11 02 {D}",
    ),
    (
        "partition change: no leader (-1) is written, -2 is not",
        PartitionChangeRecord(PartitionId=0, TopicId=T, Leader=-1, LeaderRecoveryState=0),
        0,
        "01 05 00 00000000 {T} 02 01 04 ffffffff 05 01 00",
    ),
    (
        "partition v1: directories untagged after the epochs",
        PartitionRecord(
            PartitionId=0,
            TopicId=T,
            Replicas=[1],
            Isr=[1],
            Leader=1,
            LeaderEpoch=0,
            PartitionEpoch=0,
            Directories=[D],
        ),
        1,
        "01 03 01 00000000 {T} 02 00000001 02 00000001 01 01 00000001 00000000 00000000 02 {D} 00",
    ),
    (
        "partition v2: ELR as tags 1 and 2",
        PartitionRecord(
            PartitionId=0,
            TopicId=T,
            Replicas=[1],
            Isr=[1],
            Leader=1,
            LeaderEpoch=0,
            PartitionEpoch=0,
            Directories=[D],
            EligibleLeaderReplicas=[2],
            LastKnownElr=[],
        ),
        2,
        "01 03 02 00000000 {T} 02 00000001 02 00000001 01 01 00000001 00000000 00000000 02 {D}"
        " 02 01 05 02 00000002 02 01 01",
    ),
    (
        "broker registration change v2: unfence with dirs",
        BrokerRegistrationChangeRecord(BrokerId=1, BrokerEpoch=6, Fenced=-1, LogDirs=[D]),
        2,
        "01 11 02 00000001 0000000000000006 02 00 01 ff 02 11 02 {D}",
    ),
    (
        "register broker v3",
        RegisterBrokerRecord(
            BrokerId=1,
            IncarnationId=T,
            BrokerEpoch=6,
            EndPoints=[
                RegisterBrokerRecord.BrokerEndpoint(Name="P", Host="h", Port=9092, SecurityProtocol=0)
            ],
            Features=[
                RegisterBrokerRecord.BrokerFeature(Name="m", MinSupportedVersion=1, MaxSupportedVersion=21)
            ],
            Rack=None,
            LogDirs=[D],
        ),
        3,
        "01 00 03 00000001 00 {T} 0000000000000006 02 02 50 02 68 2384 0000 00 02 02 6d 0001 0015 00 00 01 00"
        " 01 00 11 02 {D}",
    ),
    (
        "register broker v0: no migrating flag, no controlled shutdown",
        RegisterBrokerRecord(BrokerId=2, IncarnationId=T, BrokerEpoch=1, Rack="r", Fenced=False),
        0,
        "01 00 00 00000002 {T} 0000000000000001 01 01 02 72 00 00",
    ),
    (
        "client quota: nullable struct string and float64",
        ClientQuotaRecord(
            Entity=[ClientQuotaRecord.EntityData(EntityType="user", EntityName=None)], Key="k", Value=1.5
        ),
        0,
        "01 0e 00 02 05 75736572 00 00 02 6b 3ff8000000000000 00 00",
    ),
]


def _bytes(pattern: str) -> bytes:
    return bytes.fromhex(pattern.format(**HEX).replace(" ", ""))


@pytest.mark.parametrize(("label", "record", "version", "pattern"), TABLE, ids=[t[0] for t in TABLE])
def test_encode(label: str, record: Any, version: int, pattern: str) -> None:
    assert encode_record(ApiMessageAndVersion(record, version)).hex() == _bytes(pattern).hex()


@pytest.mark.parametrize(("label", "record", "version", "pattern"), TABLE, ids=[t[0] for t in TABLE])
def test_decode(label: str, record: Any, version: int, pattern: str) -> None:
    amv = decode_record(_bytes(pattern))
    assert amv == ApiMessageAndVersion(record, version)
    assert type(amv.message) is type(record)


def test_defaults_are_kafkas() -> None:
    assert PartitionChangeRecord().Leader == -2
    assert PartitionChangeRecord().Isr is None
    assert PartitionChangeRecord().Directories is None
    assert PartitionChangeRecord().LeaderRecoveryState == -1
    assert PartitionRecord().PartitionId == -1
    assert PartitionRecord().Leader == -1
    assert PartitionRecord().Directories == []
    assert PartitionRecord().EligibleLeaderReplicas is None
    assert RegisterBrokerRecord().Fenced is True
    assert RegisterBrokerRecord().IncarnationId == Uuid.ZERO
    assert RegisterBrokerRecord().Rack == ""  # nullable without a null default, as Kafka generates it
    assert ProducerIdsRecord().BrokerEpoch == -1
    assert BeginTransactionRecord().Name is None
    assert BrokerRegistrationChangeRecord().Fenced == 0


def test_defaults_are_not_shared_between_instances() -> None:
    a, b = PartitionRecord(), PartitionRecord()
    assert a.Replicas is not b.Replicas


def test_every_record_type_of_the_reference_has_a_class() -> None:
    assert sorted(RECORD_CLASSES) == sorted(m.value for m in MetadataRecordType)
    assert set(RECORD_CLASSES) == set(range(28)) - {6, 13, 16}
    for key, cls in RECORD_CLASSES.items():
        assert key == cls.API_KEY and cls.__name__ == cls.NAME
        assert MetadataRecordType(key).record_class is cls
    assert (RegisterBrokerRecord.LOWEST_VERSION, RegisterBrokerRecord.HIGHEST_VERSION) == (0, 3)
    assert PartitionChangeRecord.HIGHEST_VERSION == 2
    assert BrokerRegistrationChangeRecord.HIGHEST_VERSION == 2


def test_value_semantics_and_replace() -> None:
    a = PartitionChangeRecord(PartitionId=1, TopicId=T, Isr=[1])
    assert a == PartitionChangeRecord(PartitionId=1, TopicId=T, Isr=[1])
    assert a != PartitionChangeRecord(PartitionId=1, TopicId=T, Isr=[2])
    b = a.replace(Leader=3)
    assert (b.Leader, a.Leader, b.Isr) == (3, -2, [1])
    with pytest.raises(TypeError):
        a.replace(Nope=1)
    with pytest.raises(TypeError):
        PartitionChangeRecord(Nope=1)
    assert "PartitionChangeRecord(PartitionId=1" in repr(a)


def test_json_dict_uses_kafka_names_and_text_uuids() -> None:
    rec = PartitionRecord(PartitionId=0, TopicId=T, Replicas=[1], Directories=[D])
    data = rec.to_json_dict()
    assert data["TopicId"] == str(T) and data["Directories"] == ["XHhkr4tkSsD900pOQ8pPfg"]
    assert "EligibleLeaderReplicas" in data
    assert "Directories" not in rec.to_json_dict(version=0)
    assert "EligibleLeaderReplicas" not in rec.to_json_dict(version=1)
    assert PartitionRecord.from_json_dict(data) == rec
    broker = RegisterBrokerRecord(
        EndPoints=[RegisterBrokerRecord.BrokerEndpoint(Name="P", Host="h", Port=1, SecurityProtocol=0)]
    )
    assert broker.to_json_dict()["EndPoints"] == [
        {"Name": "P", "Host": "h", "Port": 1, "SecurityProtocol": 0}
    ]
    assert RegisterBrokerRecord.from_json_dict(broker.to_json_dict()) == broker


def test_unknown_record_type_is_kept_raw() -> None:
    amv = decode_record(bytes.fromhex("01 63 00 abcd".replace(" ", "")))
    assert amv.message == UnknownRecord(99, 0, b"\xab\xcd")
    assert amv.version == 0
    assert encode_record(amv) == bytes.fromhex("016300abcd")


def test_unknown_version_of_a_known_type_is_kept_raw() -> None:
    amv = decode_record(bytes.fromhex("01 05 09 0102"))
    assert amv.message == UnknownRecord(5, 9, b"\x01\x02")
    assert encode_record(amv) == bytes.fromhex("01050901 02".replace(" ", ""))


def test_unknown_tagged_fields_survive_a_round_trip() -> None:
    # PartitionChangeRecord v0 with tag 1 (Leader) and an unknown tag 40 holding 3 bytes
    raw = _bytes("01 05 00 00000000 {T} 02 01 04 00000002 28 03 aabbcc")
    amv = decode_record(raw)
    assert amv.message.Leader == 2
    assert amv.message.unknown_tagged_fields == [(40, b"\xaa\xbb\xcc")]
    assert encode_record(amv) == raw
    # Directories (tag 8) exists only from v1: at v0 it is an unknown tag, kept as such
    raw_v0 = _bytes("01 05 00 00000000 {T} 01 08 11 02 {D}")
    message = decode_record(raw_v0).message
    assert message.Directories is None and message.unknown_tagged_fields[0][0] == 8
    assert encode_record(ApiMessageAndVersion(message, 0)) == raw_v0


def test_frame_version_zero_and_others_are_refused() -> None:
    with pytest.raises(RecordFrameError, match=r"2\.8"):
        decode_record(bytes.fromhex("00140000"))
    with pytest.raises(RecordFrameError, match="frame version 2"):
        decode_record(bytes.fromhex("02140000"))
    with pytest.raises(RecordFrameError, match="empty"):
        decode_record(b"")
    with pytest.raises(RecordFrameError, match="apiKey"):
        decode_record(bytes.fromhex("01ffff0300"))


def test_trailing_garbage_is_an_error() -> None:
    with pytest.raises(MessageDecodeError, match="1 byte\\(s\\) of garbage"):
        decode_record(bytes.fromhex("0114000000"))


@pytest.mark.parametrize(
    "raw",
    [
        "01 02 00 05 74",  # TopicRecord with a 4-byte name but only 1 byte
        "01 02 00 00",  # TopicRecord name null
        "01 0c 00 11 6d",  # FeatureLevelRecord cut short
        "01 05 00 00000000",  # PartitionChangeRecord without its topic id
        "01 05 00 00000000 0123456789abcdef0fedcba987654321 01 01 09 02",  # tag size larger than the value
    ],
)
def test_malformed_records_are_decode_errors(raw: str) -> None:
    with pytest.raises(MessageDecodeError):
        decode_record(bytes.fromhex(raw.replace(" ", "")))


def test_writing_a_field_the_version_lacks_is_refused() -> None:
    with pytest.raises(UnsupportedVersionError, match="Directories"):
        encode_record(ApiMessageAndVersion(PartitionRecord(TopicId=T, Directories=[D]), 0))
    with pytest.raises(UnsupportedVersionError, match="LogDirs"):
        encode_record(ApiMessageAndVersion(RegisterBrokerRecord(LogDirs=[D]), 2))
    with pytest.raises(UnsupportedVersionError):
        encode_record(ApiMessageAndVersion(NoOpRecord(), 1))
    # default values may be written at any version
    encode_record(ApiMessageAndVersion(PartitionRecord(TopicId=T), 0))


def test_bad_values_are_encode_errors() -> None:
    with pytest.raises(MessageEncodeError, match=r"TopicRecord\.Name"):
        encode_record(ApiMessageAndVersion(TopicRecord(Name=None, TopicId=T), 0))
    with pytest.raises(MessageEncodeError, match="PartitionRecord"):
        encode_record(ApiMessageAndVersion(PartitionRecord(PartitionId=2**40, TopicId=T), 0))
    with pytest.raises(MessageEncodeError, match="not a metadata record"):
        encode_record(ApiMessageAndVersion("hello", 0))
    # Only a Uuid goes in as its own bytes: 16 plain bytes are refused wherever a uuid is written.
    raw = T.bytes
    for record, version in (
        (TopicRecord(Name="t", TopicId=raw), 0),  # a fixed-width run
        (PartitionRecord(TopicId=T, Replicas=[1], Directories=[raw]), 1),  # an array
        (PartitionChangeRecord(TopicId=raw, Leader=1), 0),  # a fixed-width run before the tags
    ):
        with pytest.raises(MessageEncodeError, match="no attribute 'bytes'"):
            encode_record(ApiMessageAndVersion(record, version))


@pytest.mark.parametrize(
    ("cls", "mv", "version"),
    [
        (RegisterBrokerRecord, 1, 0),
        (RegisterBrokerRecord, 7, 1),
        (RegisterBrokerRecord, 8, 2),
        (RegisterBrokerRecord, 17, 3),
        (RegisterBrokerRecord, 21, 3),
        (PartitionRecord, 16, 0),
        (PartitionRecord, 17, 1),
        (PartitionRecord, 22, 2),
        (PartitionChangeRecord, 21, 1),
        (PartitionChangeRecord, 22, 2),
        (BrokerRegistrationChangeRecord, 6, 0),
        (BrokerRegistrationChangeRecord, 7, 1),
        (BrokerRegistrationChangeRecord, 17, 2),
        (FeatureLevelRecord, 21, 0),
        (NoOpRecord, 21, 0),
    ],
)
def test_default_version_follows_metadata_version(cls: Any, mv: int, version: int) -> None:
    assert default_version(cls, mv) == version


@pytest.mark.parametrize("count", [1, 3, 64, 65, 200])
def test_uuid_arrays_of_every_length_come_back_as_the_same_ids(count: int) -> None:
    # Arrays of up to 64 ids are unpacked in one call, longer ones id by id: both give Uuids.
    dirs = [Uuid(bytes([i % 256, i // 256]) + bytes(14)) for i in range(count)]
    rec = PartitionRecord(TopicId=T, Replicas=list(range(count)), Isr=[0], Directories=dirs)
    back = decode_record(encode_record(ApiMessageAndVersion(rec, 1))).message
    assert back == rec
    assert all(type(d) is Uuid for d in back.Directories)
    # Ids are shared: the same value read twice is the same object.
    again = decode_record(encode_record(ApiMessageAndVersion(rec, 1))).message
    assert all(a is b for a, b in zip(back.Directories, again.Directories, strict=True))


@pytest.mark.parametrize("count", [3, 65])
def test_a_uuid_array_cut_short_is_a_decode_error(count: int) -> None:
    dirs = [Uuid(bytes([i % 256, 1]) + bytes(14)) for i in range(count)]
    rec = PartitionRecord(TopicId=T, Replicas=list(range(count)), Isr=[0], Directories=dirs)
    data = encode_record(ApiMessageAndVersion(rec, 1))
    # Cut inside the last id, keeping the record's own frame so the array is what runs short.
    cut = data.index(dirs[-1].bytes) + 8
    with pytest.raises(MessageDecodeError):
        decode_record(data[:cut])
