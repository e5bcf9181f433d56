"""One class per KRaft metadata record type, generated from protocol.schemas.metadata.

Attributes are Kafka's field names and take Kafka's defaults when omitted:

    >>> PartitionChangeRecord(PartitionId=0, TopicId=tid, Isr=[1, 2]).Leader
    -2

Nested structs are classes named by Kafka's struct type, e.g. RegisterBrokerRecord.BrokerEndpoint.
A record type or version this module does not know is read as an UnknownRecord.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from enum import IntEnum
from typing import Any, ClassVar

from protocol.codegen import build_message_class
from protocol.schemas import metadata as s

_M = __name__

RegisterBrokerRecord: Any = build_message_class(s.REGISTER_BROKER, _M)
UnregisterBrokerRecord: Any = build_message_class(s.UNREGISTER_BROKER, _M)
TopicRecord: Any = build_message_class(s.TOPIC, _M)
PartitionRecord: Any = build_message_class(s.PARTITION, _M)
ConfigRecord: Any = build_message_class(s.CONFIG, _M)
PartitionChangeRecord: Any = build_message_class(s.PARTITION_CHANGE, _M)
FenceBrokerRecord: Any = build_message_class(s.FENCE_BROKER, _M)
UnfenceBrokerRecord: Any = build_message_class(s.UNFENCE_BROKER, _M)
RemoveTopicRecord: Any = build_message_class(s.REMOVE_TOPIC, _M)
DelegationTokenRecord: Any = build_message_class(s.DELEGATION_TOKEN, _M)
UserScramCredentialRecord: Any = build_message_class(s.USER_SCRAM_CREDENTIAL, _M)
FeatureLevelRecord: Any = build_message_class(s.FEATURE_LEVEL, _M)
ClientQuotaRecord: Any = build_message_class(s.CLIENT_QUOTA, _M)
ProducerIdsRecord: Any = build_message_class(s.PRODUCER_IDS, _M)
BrokerRegistrationChangeRecord: Any = build_message_class(s.BROKER_REGISTRATION_CHANGE, _M)
AccessControlEntryRecord: Any = build_message_class(s.ACCESS_CONTROL_ENTRY, _M)
RemoveAccessControlEntryRecord: Any = build_message_class(s.REMOVE_ACCESS_CONTROL_ENTRY, _M)
NoOpRecord: Any = build_message_class(s.NO_OP, _M)
ZkMigrationStateRecord: Any = build_message_class(s.ZK_MIGRATION_STATE, _M)
RemoveUserScramCredentialRecord: Any = build_message_class(s.REMOVE_USER_SCRAM_CREDENTIAL, _M)
BeginTransactionRecord: Any = build_message_class(s.BEGIN_TRANSACTION, _M)
EndTransactionRecord: Any = build_message_class(s.END_TRANSACTION, _M)
AbortTransactionRecord: Any = build_message_class(s.ABORT_TRANSACTION, _M)
RemoveDelegationTokenRecord: Any = build_message_class(s.REMOVE_DELEGATION_TOKEN, _M)
RegisterControllerRecord: Any = build_message_class(s.REGISTER_CONTROLLER, _M)

RECORD_CLASSES: dict[int, Any] = {
    cls.API_KEY: cls
    for cls in (
        RegisterBrokerRecord,
        UnregisterBrokerRecord,
        TopicRecord,
        PartitionRecord,
        ConfigRecord,
        PartitionChangeRecord,
        FenceBrokerRecord,
        UnfenceBrokerRecord,
        RemoveTopicRecord,
        DelegationTokenRecord,
        UserScramCredentialRecord,
        FeatureLevelRecord,
        ClientQuotaRecord,
        ProducerIdsRecord,
        BrokerRegistrationChangeRecord,
        AccessControlEntryRecord,
        RemoveAccessControlEntryRecord,
        NoOpRecord,
        ZkMigrationStateRecord,
        RemoveUserScramCredentialRecord,
        BeginTransactionRecord,
        EndTransactionRecord,
        AbortTransactionRecord,
        RemoveDelegationTokenRecord,
        RegisterControllerRecord,
    )
}
RECORD_CLASSES_BY_NAME: dict[str, Any] = {cls.NAME: cls for cls in RECORD_CLASSES.values()}


class MetadataRecordType(IntEnum):
    """Record type ids under Kafka's enum names (MetadataRecordType.java)."""

    REGISTER_BROKER_RECORD = 0
    UNREGISTER_BROKER_RECORD = 1
    TOPIC_RECORD = 2
    PARTITION_RECORD = 3
    CONFIG_RECORD = 4
    PARTITION_CHANGE_RECORD = 5
    FENCE_BROKER_RECORD = 7
    UNFENCE_BROKER_RECORD = 8
    REMOVE_TOPIC_RECORD = 9
    DELEGATION_TOKEN_RECORD = 10
    USER_SCRAM_CREDENTIAL_RECORD = 11
    FEATURE_LEVEL_RECORD = 12
    CLIENT_QUOTA_RECORD = 14
    PRODUCER_IDS_RECORD = 15
    BROKER_REGISTRATION_CHANGE_RECORD = 17
    ACCESS_CONTROL_ENTRY_RECORD = 18
    REMOVE_ACCESS_CONTROL_ENTRY_RECORD = 19
    NO_OP_RECORD = 20
    ZK_MIGRATION_STATE_RECORD = 21
    REMOVE_USER_SCRAM_CREDENTIAL_RECORD = 22
    BEGIN_TRANSACTION_RECORD = 23
    END_TRANSACTION_RECORD = 24
    ABORT_TRANSACTION_RECORD = 25
    REMOVE_DELEGATION_TOKEN_RECORD = 26
    REGISTER_CONTROLLER_RECORD = 27

    @property
    def record_class(self) -> Any:
        return RECORD_CLASSES[self.value]


@dataclass(frozen=True)
class UnknownRecord:
    """A record whose type or version this codec does not know: kept as raw bytes so readers
    carry on and writers can copy it unchanged."""

    api_key: int
    version: int
    raw: bytes

    NAME: ClassVar[str] = "UnknownRecord"

    @property
    def API_KEY(self) -> int:
        return self.api_key

    def to_json_dict(self, version: int | None = None) -> dict[str, Any]:
        return {"apiKey": self.api_key, "raw": base64.b64encode(self.raw).decode("ascii")}


def record_name(message: Any) -> str:
    """Kafka's name for a decoded record, naming the type id of an unknown one."""
    if isinstance(message, UnknownRecord):
        return f"UnknownRecord(apiKey={message.api_key})"
    return str(message.NAME)
