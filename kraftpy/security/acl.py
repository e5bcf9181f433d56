"""ACL vocabulary with Kafka's wire codes (org.apache.kafka.common.acl and .resource), and the
binding an AccessControlEntryRecord holds."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from kraftpy.security.principal import KafkaPrincipal


class ResourceType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class AclPermissionType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


class ScramMechanism(IntEnum):
    UNKNOWN = 0
    SCRAM_SHA_256 = 1
    SCRAM_SHA_512 = 2

    @property
    def mechanism_name(self) -> str:
        """As SASL names it: SCRAM-SHA-256."""
        return self.name.replace("_", "-")

    @classmethod
    def from_mechanism_name(cls, name: str) -> ScramMechanism:
        try:
            return cls[name.strip().upper().replace("-", "_")]
        except KeyError:
            raise ValueError(
                f"unknown SCRAM mechanism {name!r}; known: SCRAM-SHA-256, SCRAM-SHA-512"
            ) from None


CLUSTER_RESOURCE_NAME = "kafka-cluster"
"""The one resource of type CLUSTER."""

WILDCARD_RESOURCE = "*"
WILDCARD_HOST = "*"


@dataclass(frozen=True)
class AclBinding:
    """One ACL: `principal` is `permission`ed `operation` on the resources `pattern_type` and
    `resource_name` select, from `host`."""

    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission: AclPermissionType

    @classmethod
    def from_record(cls, record: Any) -> AclBinding:
        """From an AccessControlEntryRecord (its Id aside)."""
        return cls(
            ResourceType(record.ResourceType),
            record.ResourceName,
            PatternType(record.PatternType),
            record.Principal,
            record.Host,
            AclOperation(record.Operation),
            AclPermissionType(record.PermissionType),
        )

    @property
    def kafka_principal(self) -> KafkaPrincipal:
        return KafkaPrincipal.parse(self.principal)

    def __str__(self) -> str:
        # kafka-acls.sh's line for one ACL
        return (
            f"(principal={self.principal}, host={self.host}, operation={self.operation.name}, "
            f"permissionType={self.permission.name})"
        )
