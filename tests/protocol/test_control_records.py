"""Control records: key layout, unframed values, hand-computed bytes and unknown types."""

from __future__ import annotations

from typing import Any

import pytest

from protocol.control_records import (
    ControlRecordType,
    KRaftVersionRecord,
    LeaderChangeMessage,
    SnapshotFooterRecord,
    SnapshotHeaderRecord,
    UnknownControlRecord,
    VotersRecord,
    control_record_name,
    decode_control_record,
    encode_control_record,
)
from protocol.framing import ApiMessageAndVersion
from protocol.message import MessageDecodeError, MessageEncodeError
from protocol.metadata_records import NoOpRecord
from protocol.uuid import Uuid

D = Uuid.from_string("XHhkr4tkSsD900pOQ8pPfg")

TABLE: list[tuple[str, Any, str, str]] = [
    (
        "snapshot header",
        SnapshotHeaderRecord(Version=0, LastContainedLogTimestamp=0),
        "00000003",
        "0000 0000000000000000 00",
    ),
    ("snapshot footer", SnapshotFooterRecord(), "00000004", "0000 00"),
    ("kraft version", KRaftVersionRecord(KRaftVersion=1), "00000005", "0000 0001 00"),
    (
        "leader change v0",
        LeaderChangeMessage(
            LeaderId=1,
            Voters=[LeaderChangeMessage.Voter(VoterId=1)],
            GrantingVoters=[LeaderChangeMessage.Voter(VoterId=1)],
        ),
        "00000002",
        "0000 00000001 02 00000001 00 02 00000001 00 00",
    ),
    (
        "voters",
        VotersRecord(
            Voters=[
                VotersRecord.Voter(
                    VoterId=1,
                    VoterDirectoryId=D,
                    Endpoints=[VotersRecord.Endpoint(Name="C", Host="h", Port=9093)],
                    KRaftVersionFeature=VotersRecord.KRaftVersionFeature(
                        MinSupportedVersion=0, MaxSupportedVersion=1
                    ),
                )
            ]
        ),
        "00000006",
        "0000 02 00000001 " + D.bytes.hex() + " 02 02 43 02 68 2385 00 0000 0001 00 00 00",
    ),
]


@pytest.mark.parametrize(("label", "record", "key", "value"), TABLE, ids=[t[0] for t in TABLE])
def test_both_directions(label: str, record: Any, key: str, value: str) -> None:
    raw_key = bytes.fromhex(key)
    raw_value = bytes.fromhex(value.replace(" ", ""))
    assert encode_control_record(record) == (raw_key, raw_value)
    assert decode_control_record(raw_key, raw_value) == ApiMessageAndVersion(record, 0)


def test_leader_change_v1_carries_directory_ids() -> None:
    msg = LeaderChangeMessage(
        Version=1, LeaderId=2, Voters=[LeaderChangeMessage.Voter(VoterId=2, VoterDirectoryId=D)]
    )
    key, value = encode_control_record(msg)
    assert len(value) == 2 + 4 + 1 + 4 + 16 + 1 + 1 + 1
    assert decode_control_record(key, value) == ApiMessageAndVersion(msg, 1)
    with pytest.raises(MessageEncodeError):
        encode_control_record(ApiMessageAndVersion(msg, 0))


def test_types_and_names() -> None:
    assert SnapshotHeaderRecord.CONTROL_TYPE == ControlRecordType.SNAPSHOT_HEADER == 3
    assert VotersRecord.CONTROL_TYPE == ControlRecordType.KRAFT_VOTERS == 6
    assert control_record_name(SnapshotFooterRecord()) == "SnapshotFooterRecord"


def test_unknown_control_types_do_not_stop_a_reader() -> None:
    commit_marker = decode_control_record(
        bytes.fromhex("00000001"), bytes.fromhex("0000 00000005".replace(" ", ""))
    )
    assert isinstance(commit_marker, UnknownControlRecord)
    assert control_record_name(commit_marker) == "UnknownControlRecord(COMMIT)"
    assert encode_control_record(commit_marker) == (bytes.fromhex("00000001"), bytes.fromhex("000000000005"))
    odd = decode_control_record(bytes.fromhex("00000063"), b"\x00\x00")
    assert control_record_name(odd) == "UnknownControlRecord(type=99)"


def test_bad_control_records() -> None:
    with pytest.raises(MessageDecodeError, match="key"):
        decode_control_record(b"\x00", b"")
    with pytest.raises(MessageDecodeError, match="garbage"):
        decode_control_record(bytes.fromhex("00000004"), bytes.fromhex("00000000"))
    with pytest.raises(MessageEncodeError, match="not a control record"):
        encode_control_record(NoOpRecord())
