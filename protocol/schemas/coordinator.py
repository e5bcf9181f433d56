"""The records of `__consumer_offsets`, as the classic group coordinator writes them.

A record's key starts with an int16 naming its kind (0 and 1: an offset commit, 2: a group's
metadata) and its value with an int16 version; both are then written at that version. Kafka 3.x
writes OffsetCommitValue v3 and GroupMetadataValue v3; v4 of both is the first flexible one.
"""

from __future__ import annotations

from protocol.schema import Field as F
from protocol.schema import MessageSchema

OFFSET_COMMIT_KEY = MessageSchema(
    "OffsetCommitKey",
    1,
    "0-1",
    "none",
    (F("Group", "string"), F("Topic", "string"), F("Partition", "int32")),
)

OFFSET_COMMIT_VALUE = MessageSchema(
    "OffsetCommitValue",
    None,
    "0-4",
    "4+",
    (
        F("Offset", "int64"),
        F("LeaderEpoch", "int32", versions="3+", default=-1, ignorable=True),
        F("Metadata", "string"),
        F("CommitTimestamp", "int64"),
        F("ExpireTimestamp", "int64", versions="1", default=-1, ignorable=True),
    ),
)

GROUP_METADATA_KEY = MessageSchema("GroupMetadataKey", 2, "2", "none", (F("Group", "string"),))

GROUP_METADATA_VALUE = MessageSchema(
    "GroupMetadataValue",
    None,
    "0-4",
    "4+",
    (
        F("ProtocolType", "string"),
        F("Generation", "int32"),
        F("Protocol", "string", nullable="0+", default=None),
        F("Leader", "string", nullable="0+", default=None),
        F("CurrentStateTimestamp", "int64", versions="2+", default=-1, ignorable=True),
        F(
            "Members",
            "[]MemberMetadata",
            fields=(
                F("MemberId", "string"),
                F("GroupInstanceId", "string", versions="3+", nullable="3+", default=None, ignorable=True),
                F("ClientId", "string"),
                F("ClientHost", "string"),
                F("RebalanceTimeout", "int32", versions="1+", ignorable=True),
                F("SessionTimeout", "int32"),
                F("Subscription", "bytes"),
                F("Assignment", "bytes"),
            ),
        ),
    ),
)
