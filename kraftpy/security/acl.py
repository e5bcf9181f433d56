"""ACL vocabulary with Kafka's wire codes (org.apache.kafka.common.acl and .resource), the binding
an AccessControlEntryRecord holds and the filter DescribeAcls and DeleteAcls select by, each with its
conversions to and from the messages that carry it (Kafka's CreateAclsRequest.aclCreation,
DeleteAclsResponse.matchingAcl...), so servers and clients read and write them one way."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Any, ClassVar, TypeVar

from kraftpy.security.principal import KafkaPrincipal
from protocol import metadata_records as mr
from protocol.rpc.create_acls import CreateAclsRequest
from protocol.rpc.delete_acls import DeleteAclsRequest, DeleteAclsResponse
from protocol.rpc.describe_acls import DescribeAclsRequest, DescribeAclsResponse
from protocol.uuid import Uuid


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

    def to_record(self, acl_id: Uuid) -> mr.AccessControlEntryRecord:
        return mr.AccessControlEntryRecord(
            Id=acl_id,
            ResourceType=int(self.resource_type),
            ResourceName=self.resource_name,
            PatternType=int(self.pattern_type),
            Principal=self.principal,
            Host=self.host,
            Operation=int(self.operation),
            PermissionType=int(self.permission),
        )

    @classmethod
    def from_creation(cls, c: CreateAclsRequest.AclCreation) -> AclBinding:
        """As a CreateAcls creation asks for it, unknown codes read as UNKNOWN: the controller
        validates it (controller.core.acls.validate_new_acl)."""
        return cls(
            code_or_unknown(ResourceType, c.ResourceType),
            c.ResourceName,
            code_or_unknown(PatternType, c.ResourcePatternType),
            c.Principal,
            c.Host,
            code_or_unknown(AclOperation, c.Operation),
            code_or_unknown(AclPermissionType, c.PermissionType),
        )

    def to_creation(self) -> CreateAclsRequest.AclCreation:
        return CreateAclsRequest.AclCreation(
            ResourceType=int(self.resource_type),
            ResourceName=self.resource_name,
            ResourcePatternType=int(self.pattern_type),
            Principal=self.principal,
            Host=self.host,
            Operation=int(self.operation),
            PermissionType=int(self.permission),
        )

    @classmethod
    def from_matching_acl(cls, m: DeleteAclsResponse.DeleteAclsMatchingAcl) -> AclBinding:
        """An ACL a DeleteAcls filter removed, as the answer carries it."""
        return cls(
            code_or_unknown(ResourceType, m.ResourceType),
            m.ResourceName,
            code_or_unknown(PatternType, m.PatternType),
            m.Principal,
            m.Host,
            code_or_unknown(AclOperation, m.Operation),
            code_or_unknown(AclPermissionType, m.PermissionType),
        )

    def to_matching_acl(self) -> DeleteAclsResponse.DeleteAclsMatchingAcl:
        return DeleteAclsResponse.DeleteAclsMatchingAcl(
            ResourceType=int(self.resource_type),
            ResourceName=self.resource_name,
            PatternType=int(self.pattern_type),
            Principal=self.principal,
            Host=self.host,
            Operation=int(self.operation),
            PermissionType=int(self.permission),
        )

    @classmethod
    def from_description(
        cls, resource: DescribeAclsResponse.DescribeAclsResource, acl: DescribeAclsResponse.AclDescription
    ) -> AclBinding:
        """One ACL of a DescribeAcls answer: the resource pattern it is grouped under, and its entry."""
        return cls(
            code_or_unknown(ResourceType, resource.ResourceType),
            resource.ResourceName,
            code_or_unknown(PatternType, resource.PatternType),
            acl.Principal,
            acl.Host,
            code_or_unknown(AclOperation, acl.Operation),
            code_or_unknown(AclPermissionType, acl.PermissionType),
        )

    def to_description(self) -> DescribeAclsResponse.AclDescription:
        """Its entry as a DescribeAcls answer lists it under its resource pattern."""
        return DescribeAclsResponse.AclDescription(
            Principal=self.principal,
            Host=self.host,
            Operation=int(self.operation),
            PermissionType=int(self.permission),
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


_E = TypeVar("_E", ResourceType, PatternType, AclOperation, AclPermissionType)


def code_or_unknown(enum_type: type[_E], value: int) -> _E:
    """A wire code as its enum member; a code this version does not know reads as UNKNOWN, so
    the request is refused as Kafka refuses it rather than failing to parse."""
    try:
        return enum_type(value)
    except ValueError:
        return enum_type(0)


@dataclass(frozen=True)
class AclBindingFilter:
    """What DescribeAcls and DeleteAcls select ACLs by, as Kafka's AclBindingFilter: None (a name,
    principal or host) and ANY match anything; pattern type MATCH also selects the ACLs that would
    apply to `resource_name` (the LITERAL one, the `*` wildcard and every PREFIXED prefix of it)."""

    resource_type: ResourceType = ResourceType.ANY
    resource_name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission: AclPermissionType = AclPermissionType.ANY

    ANY: ClassVar[AclBindingFilter]
    """Matches every ACL."""

    @classmethod
    def from_request(cls, flt: DescribeAclsRequest | DeleteAclsRequest.DeleteAclsFilter) -> AclBindingFilter:
        """From a DescribeAclsRequest or a DeleteAclsFilter (their field names agree)."""
        return cls(
            code_or_unknown(ResourceType, flt.ResourceTypeFilter),
            flt.ResourceNameFilter,
            code_or_unknown(PatternType, flt.PatternTypeFilter),
            flt.PrincipalFilter,
            flt.HostFilter,
            code_or_unknown(AclOperation, flt.Operation),
            code_or_unknown(AclPermissionType, flt.PermissionType),
        )

    def to_describe_request(self) -> DescribeAclsRequest:
        return DescribeAclsRequest(**self._request_fields())

    def to_delete_filter(self) -> DeleteAclsRequest.DeleteAclsFilter:
        return DeleteAclsRequest.DeleteAclsFilter(**self._request_fields())

    def _request_fields(self) -> dict[str, Any]:
        # the fields DescribeAclsRequest and DeleteAclsFilter share, name for name
        return {
            "ResourceTypeFilter": int(self.resource_type),
            "ResourceNameFilter": self.resource_name,
            "PatternTypeFilter": int(self.pattern_type),
            "PrincipalFilter": self.principal,
            "HostFilter": self.host,
            "Operation": int(self.operation),
            "PermissionType": int(self.permission),
        }

    def is_unknown(self) -> bool:
        """A filter with an UNKNOWN code: Kafka answers it with INVALID_REQUEST."""
        return (
            self.resource_type == ResourceType.UNKNOWN
            or self.pattern_type == PatternType.UNKNOWN
            or self.operation == AclOperation.UNKNOWN
            or self.permission == AclPermissionType.UNKNOWN
        )

    def find_indefinite_field(self) -> str | None:
        """Why this filter could match more than one ACL, or None when it names exactly one."""
        checks = (
            (self.resource_type == ResourceType.ANY, "Resource type is ANY."),
            (self.resource_type == ResourceType.UNKNOWN, "Resource type is UNKNOWN."),
            (self.resource_name is None, "Resource name is NULL."),
            (self.pattern_type == PatternType.MATCH, "Resource pattern type is MATCH."),
            (self.pattern_type == PatternType.UNKNOWN, "Resource pattern type is UNKNOWN."),
            (self.principal is None, "Principal is NULL"),
            (self.host is None, "Host is NULL"),
            (self.operation == AclOperation.ANY, "Operation is ANY"),
            (self.operation == AclOperation.UNKNOWN, "Operation is UNKNOWN"),
            (self.permission == AclPermissionType.ANY, "Permission type is ANY"),
            (self.permission == AclPermissionType.UNKNOWN, "Permission type is UNKNOWN"),
        )
        return next((why for hit, why in checks if hit), None)

    def matches(self, binding: AclBinding) -> bool:
        return self._matches_pattern(binding) and self._matches_entry(binding)

    def _matches_pattern(self, binding: AclBinding) -> bool:
        if self.resource_type not in (ResourceType.ANY, binding.resource_type):
            return False
        if self.pattern_type not in (PatternType.ANY, PatternType.MATCH, binding.pattern_type):
            return False
        if self.resource_name is None:
            return True
        if self.pattern_type in (PatternType.ANY, binding.pattern_type):
            return self.resource_name == binding.resource_name
        # MATCH: the ACLs an authorization of this exact name would consult
        if binding.pattern_type == PatternType.LITERAL:
            return binding.resource_name in (self.resource_name, WILDCARD_RESOURCE)
        return binding.pattern_type == PatternType.PREFIXED and self.resource_name.startswith(
            binding.resource_name
        )

    def _matches_entry(self, binding: AclBinding) -> bool:
        return (
            self.principal in (None, binding.principal)
            and self.host in (None, binding.host)
            and self.operation in (AclOperation.ANY, binding.operation)
            and self.permission in (AclPermissionType.ANY, binding.permission)
        )


AclBindingFilter.ANY = AclBindingFilter()
