"""The values of KRaft control records (the records of control batches), as shipped in Kafka 3.9.

They are written at their version with no ApiMessageAndVersion frame; the record key
(int16 version, int16 type) says which one it is. `api_key` here is that control type.
"""

from __future__ import annotations

from protocol.schema import Field as F
from protocol.schema import MessageSchema


def _voter_list(name: str) -> F:
    return F(
        name,
        "[]Voter",
        fields=(
            F("VoterId", "int32"),
            F("VoterDirectoryId", "uuid", versions="1+"),
        ),
    )


LEADER_CHANGE = MessageSchema(
    "LeaderChangeMessage",
    2,
    "0-1",
    "0+",
    (
        F("Version", "int16", about="version of this control record"),
        F("LeaderId", "int32", about="the newly elected leader"),
        _voter_list("Voters"),
        _voter_list("GrantingVoters"),
    ),
)

SNAPSHOT_HEADER = MessageSchema(
    "SnapshotHeaderRecord",
    3,
    "0",
    "0+",
    (
        F("Version", "int16"),
        F("LastContainedLogTimestamp", "int64", about="append time of the last record in the snapshot"),
    ),
)

SNAPSHOT_FOOTER = MessageSchema("SnapshotFooterRecord", 4, "0", "0+", (F("Version", "int16"),))

KRAFT_VERSION = MessageSchema(
    "KRaftVersionRecord",
    5,
    "0",
    "0+",
    (F("Version", "int16"), F("KRaftVersion", "int16")),
)

VOTERS = MessageSchema(
    "VotersRecord",
    6,
    "0",
    "0+",
    (
        F("Version", "int16"),
        F(
            "Voters",
            "[]Voter",
            fields=(
                F("VoterId", "int32"),
                F("VoterDirectoryId", "uuid"),
                F(
                    "Endpoints",
                    "[]Endpoint",
                    fields=(F("Name", "string"), F("Host", "string"), F("Port", "uint16")),
                ),
                F(
                    "KRaftVersionFeature",
                    "KRaftVersionFeature",
                    fields=(F("MinSupportedVersion", "int16"), F("MaxSupportedVersion", "int16")),
                ),
            ),
        ),
    ),
)

CONTROL_SCHEMAS: tuple[MessageSchema, ...] = (
    LEADER_CHANGE,
    SNAPSHOT_HEADER,
    SNAPSHOT_FOOTER,
    KRAFT_VERSION,
    VOTERS,
)
