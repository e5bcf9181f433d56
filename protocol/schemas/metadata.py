"""The metadata records of KRaft's __cluster_metadata log, as shipped in Kafka 3.9.

Every record is flexible from version 0. Fields are listed in wire order; defaults are Kafka's
(an int field without one defaults to 0, a string to "", an array to empty, a uuid to zero).
Record type ids 6, 13 and 16 are unused.
"""

from __future__ import annotations

from protocol.schema import Field as F
from protocol.schema import MessageSchema


def _record(name: str, api_key: int, versions: str, *fields: F, about: str = "") -> MessageSchema:
    return MessageSchema(name, api_key, versions, "0+", tuple(fields), about)


def _endpoints(struct_name: str) -> F:
    return F(
        "EndPoints",
        f"[]{struct_name}",
        about="listeners the node can be reached on",
        fields=(
            F("Name", "string", about="listener name"),
            F("Host", "string"),
            F("Port", "uint16"),
            F("SecurityProtocol", "int16", about="SecurityProtocol id"),
        ),
    )


def _features(struct_name: str) -> F:
    return F(
        "Features",
        f"[]{struct_name}",
        about="feature level ranges the node supports",
        fields=(
            F("Name", "string"),
            F("MinSupportedVersion", "int16"),
            F("MaxSupportedVersion", "int16"),
        ),
    )


_BROKER_ID_LIST = "[]int32"

REGISTER_BROKER = _record(
    "RegisterBrokerRecord",
    0,
    "0-3",
    F("BrokerId", "int32"),
    # v2 put this second on the wire, not at the end
    F("IsMigratingZkBroker", "bool", versions="2+", default=False, about="a ZooKeeper broker in migration"),
    F("IncarnationId", "uuid", about="changes every time the broker process starts"),
    F("BrokerEpoch", "int64", about="given by the controller at registration"),
    _endpoints("BrokerEndpoint"),
    _features("BrokerFeature"),
    F("Rack", "string", nullable="0+"),
    F("Fenced", "bool", default=True),
    F("InControlledShutdown", "bool", versions="1+", default=False),
    F("LogDirs", "[]uuid", versions="3+", tagged="3+", tag=0, about="directory ids of the online log dirs"),
    about="a broker joined or re-registered",
)

UNREGISTER_BROKER = _record(
    "UnregisterBrokerRecord",
    1,
    "0",
    F("BrokerId", "int32"),
    F("BrokerEpoch", "int64"),
)

TOPIC = _record(
    "TopicRecord",
    2,
    "0",
    F("Name", "string"),
    F("TopicId", "uuid"),
)

PARTITION = _record(
    "PartitionRecord",
    3,
    "0-2",
    F("PartitionId", "int32", default=-1),
    F("TopicId", "uuid"),
    F("Replicas", _BROKER_ID_LIST, about="in preferred order"),
    F("Isr", _BROKER_ID_LIST),
    F("RemovingReplicas", _BROKER_ID_LIST),
    F("AddingReplicas", _BROKER_ID_LIST),
    F("Leader", "int32", default=-1, about="-1 = no leader"),
    F(
        "LeaderRecoveryState",
        "int8",
        tagged="0+",
        tag=0,
        default=0,
        about="1 = recovering after unclean election",
    ),
    F("LeaderEpoch", "int32", default=-1),
    F("PartitionEpoch", "int32", default=-1),
    F("Directories", "[]uuid", versions="1+", about="directory of each replica, aligned with Replicas"),
    F(
        "EligibleLeaderReplicas",
        _BROKER_ID_LIST,
        versions="2+",
        nullable="2+",
        tagged="2+",
        tag=1,
        default=None,
    ),
    F("LastKnownElr", _BROKER_ID_LIST, versions="2+", nullable="2+", tagged="2+", tag=2, default=None),
)

CONFIG = _record(
    "ConfigRecord",
    4,
    "0",
    F("ResourceType", "int8", about="ConfigResource.Type id"),
    F("ResourceName", "string"),
    F("Name", "string"),
    F("Value", "string", nullable="0+", about="null deletes the config"),
)

PARTITION_CHANGE = _record(
    "PartitionChangeRecord",
    5,
    "0-2",
    F("PartitionId", "int32", default=-1),
    F("TopicId", "uuid"),
    # every other field is tagged; null (or -2 / -1 for the ints) means "unchanged"
    F("Isr", _BROKER_ID_LIST, nullable="0+", tagged="0+", tag=0, default=None),
    F("Leader", "int32", tagged="0+", tag=1, default=-2, about="-2 = unchanged, -1 = no leader"),
    F("Replicas", _BROKER_ID_LIST, nullable="0+", tagged="0+", tag=2, default=None),
    F("RemovingReplicas", _BROKER_ID_LIST, nullable="0+", tagged="0+", tag=3, default=None),
    F("AddingReplicas", _BROKER_ID_LIST, nullable="0+", tagged="0+", tag=4, default=None),
    F("LeaderRecoveryState", "int8", tagged="0+", tag=5, default=-1),
    F(
        "EligibleLeaderReplicas",
        _BROKER_ID_LIST,
        versions="2+",
        nullable="2+",
        tagged="2+",
        tag=6,
        default=None,
    ),
    F("LastKnownElr", _BROKER_ID_LIST, versions="2+", nullable="2+", tagged="2+", tag=7, default=None),
    F("Directories", "[]uuid", versions="1+", nullable="1+", tagged="1+", tag=8, default=None),
)

FENCE_BROKER = _record(
    "FenceBrokerRecord",
    7,
    "0",
    F("Id", "int32"),
    F("Epoch", "int64"),
    about="legacy: BrokerRegistrationChangeRecord from MV 3.3-IV2",
)

UNFENCE_BROKER = _record(
    "UnfenceBrokerRecord",
    8,
    "0",
    F("Id", "int32"),
    F("Epoch", "int64"),
    about="legacy: BrokerRegistrationChangeRecord from MV 3.3-IV2",
)

REMOVE_TOPIC = _record("RemoveTopicRecord", 9, "0", F("TopicId", "uuid"))

DELEGATION_TOKEN = _record(
    "DelegationTokenRecord",
    10,
    "0",
    F("Owner", "string"),
    F("Requester", "string"),
    F("Renewers", "[]string"),
    F("IssueTimestamp", "int64"),
    F("MaxTimestamp", "int64"),
    F("ExpirationTimestamp", "int64"),
    F("TokenId", "string"),
)

USER_SCRAM_CREDENTIAL = _record(
    "UserScramCredentialRecord",
    11,
    "0",
    F("Name", "string"),
    F("Mechanism", "int8"),
    F("Salt", "bytes"),
    F("StoredKey", "bytes"),
    F("ServerKey", "bytes"),
    F("Iterations", "int32"),
)

FEATURE_LEVEL = _record(
    "FeatureLevelRecord",
    12,
    "0",
    F("Name", "string"),
    F("FeatureLevel", "int16", about="0 removes the feature"),
)

CLIENT_QUOTA = _record(
    "ClientQuotaRecord",
    14,
    "0",
    F(
        "Entity",
        "[]EntityData",
        fields=(
            F("EntityType", "string"),
            F("EntityName", "string", nullable="0+", about="null = the default entity"),
        ),
    ),
    F("Key", "string"),
    F("Value", "float64"),
    F("Remove", "bool"),
)

PRODUCER_IDS = _record(
    "ProducerIdsRecord",
    15,
    "0",
    F("BrokerId", "int32"),
    F("BrokerEpoch", "int64", default=-1),
    F("NextProducerId", "int64", about="first id of the next block to hand out"),
)

BROKER_REGISTRATION_CHANGE = _record(
    "BrokerRegistrationChangeRecord",
    17,
    "0-2",
    F("BrokerId", "int32"),
    F("BrokerEpoch", "int64"),
    F("Fenced", "int8", tagged="0+", tag=0, about="-1 unfenced, 0 unchanged, 1 fenced"),
    F(
        "InControlledShutdown",
        "int8",
        versions="1+",
        tagged="1+",
        tag=1,
        about="0 unchanged, 1 shutting down",
    ),
    F("LogDirs", "[]uuid", versions="2+", tagged="2+", tag=2, about="new online dirs; empty = unchanged"),
)

ACCESS_CONTROL_ENTRY = _record(
    "AccessControlEntryRecord",
    18,
    "0",
    F("Id", "uuid"),
    F("ResourceType", "int8"),
    F("ResourceName", "string"),
    F("PatternType", "int8"),
    F("Principal", "string"),
    F("Host", "string"),
    F("Operation", "int8"),
    F("PermissionType", "int8"),
)

REMOVE_ACCESS_CONTROL_ENTRY = _record("RemoveAccessControlEntryRecord", 19, "0", F("Id", "uuid"))

NO_OP = _record("NoOpRecord", 20, "0", about="written periodically so followers see the log advance")

ZK_MIGRATION_STATE = _record(
    "ZkMigrationStateRecord",
    21,
    "0",
    F("ZkMigrationState", "int8", about="0 NONE, 1 MIGRATION, 2 PRE_MIGRATION, 3 POST_MIGRATION"),
)

REMOVE_USER_SCRAM_CREDENTIAL = _record(
    "RemoveUserScramCredentialRecord",
    22,
    "0",
    F("Name", "string"),
    F("Mechanism", "int8"),
)

BEGIN_TRANSACTION = _record(
    "BeginTransactionRecord",
    23,
    "0",
    F("Name", "string", nullable="0+", tagged="0+", tag=0, default=None),
)

END_TRANSACTION = _record("EndTransactionRecord", 24, "0")

ABORT_TRANSACTION = _record(
    "AbortTransactionRecord",
    25,
    "0",
    F("Reason", "string", nullable="0+", tagged="0+", tag=0, default=None),
)

REMOVE_DELEGATION_TOKEN = _record("RemoveDelegationTokenRecord", 26, "0", F("TokenId", "string"))

REGISTER_CONTROLLER = _record(
    "RegisterControllerRecord",
    27,
    "0",
    F("ControllerId", "int32"),
    F("IncarnationId", "uuid"),
    F("ZkMigrationReady", "bool"),
    _endpoints("ControllerEndpoint"),
    _features("ControllerFeature"),
)

METADATA_SCHEMAS: tuple[MessageSchema, ...] = (
    REGISTER_BROKER,
    UNREGISTER_BROKER,
    TOPIC,
    PARTITION,
    CONFIG,
    PARTITION_CHANGE,
    FENCE_BROKER,
    UNFENCE_BROKER,
    REMOVE_TOPIC,
    DELEGATION_TOKEN,
    USER_SCRAM_CREDENTIAL,
    FEATURE_LEVEL,
    CLIENT_QUOTA,
    PRODUCER_IDS,
    BROKER_REGISTRATION_CHANGE,
    ACCESS_CONTROL_ENTRY,
    REMOVE_ACCESS_CONTROL_ENTRY,
    NO_OP,
    ZK_MIGRATION_STATE,
    REMOVE_USER_SCRAM_CREDENTIAL,
    BEGIN_TRANSACTION,
    END_TRANSACTION,
    ABORT_TRANSACTION,
    REMOVE_DELEGATION_TOKEN,
    REGISTER_CONTROLLER,
)
