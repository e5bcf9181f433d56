"""ACLs as metadata records (Kafka's AclControlManager): CreateAcls writes an AccessControlEntryRecord
with a fresh Id per new binding, DeleteAcls a RemoveAccessControlEntryRecord per binding a filter
matches, and replay keeps the latest record per Id, as every broker's image does.

A binding that is already there is answered with success and written again by no one (Kafka's
existingAcls set), so creating the same ACL twice leaves one. Each creation and each filter gets
its own result; the records of one request go in one batch.
"""

from __future__ import annotations

import random
from typing import Any

from controller.core.result import ControllerResult
from kraftpy.security.acl import (
    CLUSTER_RESOURCE_NAME,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from kraftpy.security.describe import describe_acls as _describe_acls
from kraftpy.security.principal import KafkaPrincipal
from protocol import metadata_records as mr
from protocol.errors import Errors, KafkaError
from protocol.framing import ApiMessageAndVersion
from protocol.rpc.create_acls import CreateAclsRequest, CreateAclsResponse
from protocol.rpc.delete_acls import DeleteAclsRequest, DeleteAclsResponse
from protocol.rpc.describe_acls import DescribeAclsRequest, DescribeAclsResponse
from protocol.uuid import Uuid


class AclControlManager:
    def __init__(self) -> None:
        self.records: dict[Uuid, Any] = {}
        """Id -> its AccessControlEntryRecord, in the order they were replayed."""
        self.bindings: dict[AclBinding, Uuid] = {}
        """The same ACLs by binding: Kafka's existingAcls, to answer a repeated creation."""

    def replay_acl(self, record: Any) -> None:
        binding = AclBinding.from_record(record)
        old = self.records.get(record.Id)
        if old is not None:
            self.bindings.pop(AclBinding.from_record(old), None)
        self.records[record.Id] = record
        self.bindings[binding] = record.Id

    def replay_remove_acl(self, record: Any) -> None:
        old = self.records.pop(record.Id, None)
        if old is None:
            raise ValueError(f"cannot replay RemoveAccessControlEntryRecord: no ACL with Id {record.Id}")
        self.bindings.pop(AclBinding.from_record(old), None)

    def snapshot(self) -> tuple[dict[Uuid, Any], dict[AclBinding, Uuid]]:
        # Records are immutable once replayed: the dicts are all replay changes in place.
        return dict(self.records), dict(self.bindings)

    def restore(self, snapshot: tuple[dict[Uuid, Any], dict[AclBinding, Uuid]]) -> None:
        self.records, self.bindings = snapshot

    @property
    def fingerprint(self) -> tuple[int, int, Uuid | None]:
        """Changes whenever the ACLs do, so an authorizer re-indexes only then: a restore swaps the
        dicts, a replay adds or drops an Id (creations take fresh Ids, so none is replaced in place)."""
        return id(self.records), len(self.records), next(reversed(self.records), None)

    def state(self) -> dict[Uuid, AclBinding]:
        return {i: AclBinding.from_record(r) for i, r in self.records.items()}

    def new_id(self, rng: random.Random, taken: set[Uuid]) -> Uuid:
        """A fresh v4 Id (Kafka's Uuid.randomUuid): not one in use, not one handed out earlier in
        the same request, never a reserved one nor one printing with a leading '-'. Drawn from the
        controller's seeded generator so a test's ids repeat."""
        while True:
            raw = bytearray(rng.randbytes(16))
            raw[6] = (raw[6] & 0x0F) | 0x40
            raw[8] = (raw[8] & 0x3F) | 0x80
            candidate = Uuid(bytes(raw))
            if (
                not candidate.is_reserved()
                and not str(candidate).startswith("-")
                and candidate not in self.records
                and candidate not in taken
            ):
                return candidate


# ---- CreateAcls -----------------------------------------------------------------------------------


def validate_new_acl(b: AclBinding) -> AclBinding:
    """`b` if it may be created, as Kafka validates a new ACL (AclApis and
    AclControlManager.validateNewAcl); KafkaError(INVALID_REQUEST) saying what is wrong."""
    if b.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
        raise _invalid(f"Invalid resourceType {b.resource_type.name}")
    if b.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise _invalid(f"Invalid patternType {b.pattern_type.name}")
    if b.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
        raise _invalid(f"Invalid operation {b.operation.name}")
    if b.permission not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
        raise _invalid(f"Invalid permissionType {b.permission.name}")
    if not b.resource_name:
        raise _invalid("Resource name should not be empty")
    if b.resource_type is ResourceType.CLUSTER and b.resource_name != CLUSTER_RESOURCE_NAME:
        raise _invalid(f"The only valid name for the CLUSTER resource is {CLUSTER_RESOURCE_NAME}")
    try:
        KafkaPrincipal.parse(b.principal)
    except ValueError as e:
        raise _invalid(str(e)) from None
    return b


def _invalid(message: str) -> KafkaError:
    return KafkaError(Errors.INVALID_REQUEST, message)


def create_acls(
    acls: AclControlManager, rng: random.Random, req: CreateAclsRequest, version: int
) -> ControllerResult[CreateAclsResponse]:
    R = CreateAclsResponse
    records: list[ApiMessageAndVersion] = []
    results: list[CreateAclsResponse.AclCreationResult] = []
    created: set[AclBinding] = set()
    ids: set[Uuid] = set()
    for c in req.Creations:
        try:
            binding = validate_new_acl(AclBinding.from_creation(c))
        except KafkaError as e:
            results.append(R.AclCreationResult(ErrorCode=int(e.code), ErrorMessage=e.message))
            continue
        if binding not in acls.bindings and binding not in created:
            acl_id = acls.new_id(rng, ids)
            ids.add(acl_id)
            created.add(binding)
            records.append(ApiMessageAndVersion(binding.to_record(acl_id), 0))
        results.append(R.AclCreationResult())
    return ControllerResult.atomic_of(records, R(Results=results))


# ---- DeleteAcls -----------------------------------------------------------------------------------


def delete_acls(
    acls: AclControlManager, req: DeleteAclsRequest, version: int
) -> ControllerResult[DeleteAclsResponse]:
    """Each filter answers every ACL it matches, even one an earlier filter of the same request
    matched too; each ACL is removed once."""
    R = DeleteAclsResponse
    removed: set[Uuid] = set()
    records: list[ApiMessageAndVersion] = []
    results: list[DeleteAclsResponse.DeleteAclsFilterResult] = []
    for f in req.Filters:
        flt = AclBindingFilter.from_request(f)
        # AclControlManager.validateFilter's two refusals, pattern first
        if flt.pattern_type is PatternType.UNKNOWN or flt.resource_type is ResourceType.UNKNOWN:
            results.append(_filter_error("Unknown patternFilter."))
            continue
        if flt.operation is AclOperation.UNKNOWN or flt.permission is AclPermissionType.UNKNOWN:
            results.append(_filter_error("Unknown entryFilter."))
            continue
        matched = []
        for acl_id, record in acls.records.items():
            b = AclBinding.from_record(record)
            if not flt.matches(b):
                continue
            matched.append(b.to_matching_acl())
            if acl_id not in removed:
                removed.add(acl_id)
                records.append(ApiMessageAndVersion(mr.RemoveAccessControlEntryRecord(Id=acl_id), 0))
        results.append(R.DeleteAclsFilterResult(MatchingAcls=matched))
    return ControllerResult.atomic_of(records, R(FilterResults=results))


def _filter_error(message: str) -> DeleteAclsResponse.DeleteAclsFilterResult:
    return DeleteAclsResponse.DeleteAclsFilterResult(
        ErrorCode=int(Errors.INVALID_REQUEST), ErrorMessage=message
    )


# ---- DescribeAcls ---------------------------------------------------------------------------------


def describe_acls(acls: AclControlManager, req: DescribeAclsRequest, version: int) -> DescribeAclsResponse:
    return _describe_acls(acls.records.values(), req, version)
