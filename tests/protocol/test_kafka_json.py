"""Records as Kafka's generated JsonConverter writes them, and Jackson's JSON text (tools/cli/_kafka_json.py).

Expected values follow Kafka 3.9's generator (JsonConverterGenerator.generateWrite,
FieldSpec.generateNonDefaultValueCheck), Jackson's WriterBasedJsonGenerator and Java's Double.toString.
"""

from __future__ import annotations

import json

import pytest

from protocol.control_records import VotersRecord
from protocol.metadata_records import (
    ClientQuotaRecord,
    ConfigRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    UserScramCredentialRecord,
)
from protocol.uuid import Uuid
from tools.cli._kafka_json import KAFKA_FIELD_ORDER, camel_case, dumps, java_double, message_json

TID = Uuid.from_string("gSnfpEbtQfSDpxM2lhEn9A")
DIR = Uuid.from_string("XHhkr4tkSsD900pOQ8pPfg")


def test_names_are_camel_case_and_tagged_defaults_are_left_out() -> None:
    # PartitionRecord v1: LeaderRecoveryState is tagged with default 0, so a 0 is not written;
    # Directories exists from v1; the v2 tagged ELR fields do not exist at v1
    rec = PartitionRecord(
        PartitionId=0, TopicId=TID, Replicas=[1], Isr=[1], Leader=1, LeaderEpoch=0, PartitionEpoch=0,
        Directories=[DIR],
    )  # fmt: skip
    assert dumps(message_json(rec, 1)) == (
        '{"partitionId":0,"topicId":"gSnfpEbtQfSDpxM2lhEn9A","replicas":[1],"isr":[1],'
        '"removingReplicas":[],"addingReplicas":[],"leader":1,"leaderEpoch":0,"partitionEpoch":0,'
        '"directories":["XHhkr4tkSsD900pOQ8pPfg"]}'
    )
    recovering = rec.replace(LeaderRecoveryState=1)
    assert '"leader":1,"leaderRecoveryState":1,"leaderEpoch":0' in dumps(message_json(recovering, 1))
    # v0 has no Directories at all
    assert "directories" not in message_json(rec, 0)


def test_partition_change_in_kafka_field_order() -> None:
    # PartitionChangeRecord.json declares Directories before EligibleLeaderReplicas/LastKnownElr;
    # tagged arrays defaulting to null are written when not null, ints when not -2 / -1
    rec = PartitionChangeRecord(
        PartitionId=3, TopicId=TID, Isr=[1, 2], Leader=2, Directories=[DIR, DIR], EligibleLeaderReplicas=[]
    )
    assert dumps(message_json(rec, 2)) == (
        '{"partitionId":3,"topicId":"gSnfpEbtQfSDpxM2lhEn9A","isr":[1,2],"leader":2,'
        '"directories":["XHhkr4tkSsD900pOQ8pPfg","XHhkr4tkSsD900pOQ8pPfg"],"eligibleLeaderReplicas":[]}'
    )
    assert dumps(message_json(PartitionChangeRecord(PartitionId=3, TopicId=TID), 0)) == (
        '{"partitionId":3,"topicId":"gSnfpEbtQfSDpxM2lhEn9A"}'
    )


def test_field_order_override_names_exactly_the_schema_fields() -> None:
    from protocol.metadata_records import RECORD_CLASSES_BY_NAME

    for name, order in KAFKA_FIELD_ORDER.items():
        assert sorted(order) == sorted(f.name for f in RECORD_CLASSES_BY_NAME[name]._FIELDS)


def test_tagged_array_with_empty_default_and_nullable_strings() -> None:
    broker = RegisterBrokerRecord(BrokerId=1, IncarnationId=TID, BrokerEpoch=6, Rack=None)
    data = message_json(broker, 3)
    assert "logDirs" not in data  # tagged, default empty, empty
    assert data["rack"] is None and list(data)[:4] == [
        "brokerId",
        "isMigratingZkBroker",
        "incarnationId",
        "brokerEpoch",
    ]
    assert message_json(broker.replace(LogDirs=[DIR]), 3)["logDirs"] == [str(DIR)]
    assert "isMigratingZkBroker" not in message_json(broker, 1)  # a v2+ field


def test_bytes_are_standard_base64_with_padding() -> None:
    rec = UserScramCredentialRecord(
        Name="alice", Mechanism=1, Salt=b"\xfb\xff", StoredKey=b"", ServerKey=b"\x00", Iterations=4096
    )
    assert dumps(message_json(rec, 0)) == (
        '{"name":"alice","mechanism":1,"salt":"+/8=","storedKey":"","serverKey":"AA==","iterations":4096}'
    )


def test_nested_structs_of_a_control_record() -> None:
    voters = VotersRecord(
        Version=0,
        Voters=[
            VotersRecord.Voter(
                VoterId=1,
                VoterDirectoryId=DIR,
                Endpoints=[VotersRecord.Endpoint(Name="CONTROLLER", Host="h", Port=9093)],
                KRaftVersionFeature=VotersRecord.KRaftVersionFeature(
                    MinSupportedVersion=0, MaxSupportedVersion=1
                ),
            )
        ],
    )
    assert dumps(message_json(voters, 0)) == (
        '{"version":0,"voters":[{"voterId":1,"voterDirectoryId":"XHhkr4tkSsD900pOQ8pPfg",'
        '"endpoints":[{"name":"CONTROLLER","host":"h","port":9093}],'
        '"kRaftVersionFeature":{"minSupportedVersion":0,"maxSupportedVersion":1}}]}'
    )


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1048576.0, "1048576.0"),
        (0.5, "0.5"),
        (0.001, "0.001"),
        (0.0001, "1.0E-4"),
        (1e7, "1.0E7"),
        (9999999.5, "9999999.5"),
        (12345678.9, "1.23456789E7"),
        (1.5e-5, "1.5E-5"),
        (-2.0, "-2.0"),
        (0.0, "0.0"),
        (-0.0, "-0.0"),
        (1e300, "1.0E300"),
    ],
)
def test_doubles_print_as_java_does(value: float, text: str) -> None:
    assert java_double(value) == text
    assert float(text) == value


def test_client_quota_value_is_a_java_double() -> None:
    rec = ClientQuotaRecord(
        Entity=[ClientQuotaRecord.EntityData(EntityType="user", EntityName=None)],
        Key="producer_byte_rate",
        Value=1e7,
    )
    assert dumps(message_json(rec, 0)) == (
        '{"entity":[{"entityType":"user","entityName":null}],"key":"producer_byte_rate",'
        '"value":1.0E7,"remove":false}'
    )
    assert dumps(float("nan")) == '"NaN"' and dumps(float("-inf")) == '"-Infinity"'


def test_strings_escape_as_jackson_writes_to_a_string() -> None:
    rec = ConfigRecord(ResourceType=2, ResourceName="t", Name="x", Value='a"b\\c\n\x01\x1f\x7fé😀/')
    text = dumps(message_json(rec, 0))
    assert text.endswith(r'"value":"a\"b\\c\n\u0001\u001F' + '\x7fé😀/"}')
    assert json.loads(text)["value"] == rec.Value


def test_camel_case_lowers_only_the_first_letter() -> None:
    assert camel_case("KRaftVersionFeature") == "kRaftVersionFeature"
    assert camel_case("IsMigratingZkBroker") == "isMigratingZkBroker"
