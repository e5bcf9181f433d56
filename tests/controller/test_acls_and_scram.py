"""CreateAcls, DeleteAcls, AlterUserScramCredentials as records, and the describes that read them back,
on the controller core and on an image replayed from the same records (what a broker answers from)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from controller.core import QuorumControllerCore
from controller.core.metadata_version import MV_3_4_IV0
from kraftpy.image import MetadataDelta, MetadataImage
from kraftpy.security.acl import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    ScramMechanism,
)
from kraftpy.security.describe import describe_acls, describe_user_scram_credentials
from kraftpy.security.scram import new_credential, salted_password
from protocol.errors import Errors
from protocol.framing import ApiMessageAndVersion
from protocol.metadata_records import AbortTransactionRecord, BeginTransactionRecord
from protocol.rpc.alter_user_scram_credentials import AlterUserScramCredentialsRequest
from protocol.rpc.create_acls import CreateAclsRequest
from protocol.rpc.delete_acls import DeleteAclsRequest
from protocol.rpc.describe_acls import DescribeAclsRequest
from protocol.rpc.describe_user_scram_credentials import DescribeUserScramCredentialsRequest
from protocol.uuid import Uuid
from tests.controller.control_context import ControlTestContext

C = CreateAclsRequest.AclCreation
SHA256 = int(ScramMechanism.SCRAM_SHA_256)
SHA512 = int(ScramMechanism.SCRAM_SHA_512)
SALT = b"0123456789abcdef0123456789abcdef"


def creation(
    name: str = "orders",
    principal: str = "User:alice",
    *,
    rtype: int = ResourceType.TOPIC,
    ptype: int = PatternType.LITERAL,
    host: str = "*",
    op: int = AclOperation.READ,
    perm: int = AclPermissionType.ALLOW,
) -> CreateAclsRequest.AclCreation:
    return C(
        ResourceType=int(rtype),
        ResourceName=name,
        ResourcePatternType=int(ptype),
        Principal=principal,
        Host=host,
        Operation=int(op),
        PermissionType=int(perm),
    )


def any_filter(**fields: Any) -> DeleteAclsRequest.DeleteAclsFilter:
    base: dict[str, Any] = {
        "ResourceTypeFilter": int(ResourceType.ANY),
        "PatternTypeFilter": int(PatternType.ANY),
        "Operation": int(AclOperation.ANY),
        "PermissionType": int(AclPermissionType.ANY),
    }
    return DeleteAclsRequest.DeleteAclsFilter(**(base | fields))


def create(ctx: ControlTestContext, *creations: CreateAclsRequest.AclCreation) -> Any:
    return ctx.apply(ctx.core.create_acls(CreateAclsRequest(Creations=list(creations)), 3))


def upsert(name: str, mechanism: int = SHA512, iterations: int = 8192, password: str = "secret") -> Any:
    m = ScramMechanism(mechanism) if mechanism in (SHA256, SHA512) else ScramMechanism.SCRAM_SHA_256
    return AlterUserScramCredentialsRequest.ScramCredentialUpsertion(
        Name=name,
        Mechanism=mechanism,
        Iterations=iterations,
        Salt=SALT,
        SaltedPassword=salted_password(m, password, SALT, max(iterations, 1)),
    )


def delete(name: str, mechanism: int = SHA512) -> Any:
    return AlterUserScramCredentialsRequest.ScramCredentialDeletion(Name=name, Mechanism=mechanism)


def alter(ctx: ControlTestContext, upsertions: Sequence[Any] = (), deletions: Sequence[Any] = ()) -> Any:
    req = AlterUserScramCredentialsRequest(Upsertions=list(upsertions), Deletions=list(deletions))
    return ctx.apply(ctx.core.alter_user_scram_credentials(req, 0))


def names(result: Any) -> list[str]:
    return [type(r.message).__name__ for r in result.records]


def bindings(ctx: ControlTestContext) -> set[AclBinding]:
    return set(ctx.core.m.acls.state().values())


# ---- CreateAcls -------------------------------------------------------------------------------------


def test_an_acl_is_one_record_with_a_fresh_id_and_lives_in_the_state() -> None:
    ctx = ControlTestContext()
    result = create(ctx, creation(), creation("pay-", "User:bob", ptype=PatternType.PREFIXED))
    assert names(result) == ["AccessControlEntryRecord", "AccessControlEntryRecord"]
    assert result.is_atomic
    assert [r.ErrorCode for r in result.response.Results] == [0, 0]
    ids = [r.message.Id for r in result.records]
    assert len(set(ids)) == 2 and not any(i.is_reserved() for i in ids)
    rec = result.records[0].message
    assert (rec.ResourceType, rec.ResourceName, rec.PatternType, rec.Principal, rec.Host) == (
        2,
        "orders",
        3,
        "User:alice",
        "*",
    )
    assert (rec.Operation, rec.PermissionType) == (3, 3)
    assert AclBinding.from_record(rec) in bindings(ctx)
    assert ctx.replayed_from_empty().state() == ctx.core.state()


def test_an_acl_that_exists_is_answered_success_and_written_once() -> None:
    ctx = ControlTestContext()
    first = create(ctx, creation(), creation())
    assert len(first.records) == 1
    assert [r.ErrorCode for r in first.response.Results] == [0, 0]
    again = create(ctx, creation())
    assert again.records == [] and again.response.Results[0].ErrorCode == 0
    assert len(ctx.core.m.acls.records) == 1


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (creation(rtype=ResourceType.UNKNOWN), "Invalid resourceType UNKNOWN"),
        (creation(rtype=ResourceType.ANY), "Invalid resourceType ANY"),
        (creation(rtype=99), "Invalid resourceType UNKNOWN"),
        (creation(ptype=PatternType.MATCH), "Invalid patternType MATCH"),
        (creation(ptype=PatternType.ANY), "Invalid patternType ANY"),
        (creation(ptype=PatternType.UNKNOWN), "Invalid patternType UNKNOWN"),
        (creation(op=AclOperation.ANY), "Invalid operation ANY"),
        (creation(op=AclOperation.UNKNOWN), "Invalid operation UNKNOWN"),
        (creation(perm=AclPermissionType.ANY), "Invalid permissionType ANY"),
        (creation(perm=AclPermissionType.UNKNOWN), "Invalid permissionType UNKNOWN"),
        (creation(""), "Resource name should not be empty"),
        (creation("my-cluster", rtype=ResourceType.CLUSTER), "CLUSTER resource is kafka-cluster"),
        (creation(principal="alice"), "Type:name"),
        (creation(principal="User:"), "Type:name"),
    ],
)
def test_a_bad_creation_gets_invalid_request_and_writes_nothing(bad: Any, message: str) -> None:
    ctx = ControlTestContext()
    result = create(ctx, creation("before"), bad, creation("after"))
    codes = [r.ErrorCode for r in result.response.Results]
    assert codes == [0, Errors.INVALID_REQUEST, 0]
    assert message in (result.response.Results[1].ErrorMessage or "")
    assert sorted(r.message.ResourceName for r in result.records) == ["after", "before"]


def test_the_cluster_resource_by_its_name() -> None:
    ctx = ControlTestContext()
    result = create(ctx, creation("kafka-cluster", rtype=ResourceType.CLUSTER, op=AclOperation.ALTER))
    assert result.response.Results[0].ErrorCode == 0 and len(result.records) == 1


# ---- DeleteAcls -------------------------------------------------------------------------------------


def three_acls() -> ControlTestContext:
    ctx = ControlTestContext()
    create(
        ctx,
        creation("orders", "User:alice"),
        creation("orders", "User:bob", op=AclOperation.WRITE),
        creation("payments", "User:alice"),
    )
    return ctx


def test_a_filter_removes_every_acl_it_matches_and_answers_them() -> None:
    ctx = three_acls()
    ids = {
        AclBinding.from_record(r).principal + r.ResourceName: i for i, r in ctx.core.m.acls.records.items()
    }
    result = ctx.apply(
        ctx.core.delete_acls(DeleteAclsRequest(Filters=[any_filter(PrincipalFilter="User:alice")]), 3)
    )
    assert names(result) == ["RemoveAccessControlEntryRecord"] * 2
    assert {r.message.Id for r in result.records} == {ids["User:aliceorders"], ids["User:alicepayments"]}
    (answer,) = result.response.FilterResults
    assert answer.ErrorCode == 0
    assert sorted(a.ResourceName for a in answer.MatchingAcls) == ["orders", "payments"]
    assert {a.Principal for a in answer.MatchingAcls} == {"User:alice"}
    assert {b.principal for b in bindings(ctx)} == {"User:bob"}
    assert ctx.replayed_from_empty().state() == ctx.core.state()


def test_two_filters_matching_one_acl_both_answer_it_and_it_is_removed_once() -> None:
    ctx = three_acls()
    req = DeleteAclsRequest(
        Filters=[any_filter(ResourceNameFilter="orders"), any_filter(PrincipalFilter="User:bob")]
    )
    result = ctx.apply(ctx.core.delete_acls(req, 3))
    assert len(result.records) == 2  # alice's and bob's orders ACLs
    first, second = result.response.FilterResults
    assert len(first.MatchingAcls) == 2 and len(second.MatchingAcls) == 1
    assert second.MatchingAcls[0].Operation == AclOperation.WRITE


def test_a_filter_that_matches_nothing_succeeds_with_no_acls() -> None:
    ctx = three_acls()
    result = ctx.core.delete_acls(DeleteAclsRequest(Filters=[any_filter(PrincipalFilter="User:eve")]), 3)
    assert result.records == [] and result.response.FilterResults[0].MatchingAcls == []


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"ResourceTypeFilter": 0}, "Unknown patternFilter."),
        ({"PatternTypeFilter": 0}, "Unknown patternFilter."),
        ({"Operation": 0}, "Unknown entryFilter."),
        ({"PermissionType": 77}, "Unknown entryFilter."),
    ],
)
def test_a_filter_with_unknown_codes_is_refused(fields: dict[str, int], message: str) -> None:
    ctx = three_acls()
    result = ctx.core.delete_acls(DeleteAclsRequest(Filters=[any_filter(**fields), any_filter()]), 3)
    bad, good = result.response.FilterResults
    assert (bad.ErrorCode, bad.ErrorMessage, bad.MatchingAcls) == (Errors.INVALID_REQUEST, message, [])
    assert len(good.MatchingAcls) == 3 and len(result.records) == 3


def test_match_selects_the_acls_that_would_apply_to_one_resource() -> None:
    ctx = ControlTestContext()
    create(
        ctx,
        creation("orders-eu"),
        creation("*"),
        creation("orders-", ptype=PatternType.PREFIXED),
        creation("orders"),
        creation("orders-eu", rtype=ResourceType.GROUP),
    )
    flt = any_filter(
        ResourceTypeFilter=int(ResourceType.TOPIC),
        ResourceNameFilter="orders-eu",
        PatternTypeFilter=int(PatternType.MATCH),
    )
    result = ctx.apply(ctx.core.delete_acls(DeleteAclsRequest(Filters=[flt]), 3))
    gone = sorted((a.ResourceName, a.PatternType) for a in result.response.FilterResults[0].MatchingAcls)
    assert gone == [("*", 3), ("orders-", 4), ("orders-eu", 3)]
    assert sorted((b.resource_type.name, b.resource_name) for b in bindings(ctx)) == [
        ("GROUP", "orders-eu"),
        ("TOPIC", "orders"),
    ]


# ---- DescribeAcls -----------------------------------------------------------------------------------


def test_describe_groups_acls_by_resource_pattern() -> None:
    ctx = three_acls()
    req = DescribeAclsRequest(
        ResourceTypeFilter=int(ResourceType.ANY),
        PatternTypeFilter=int(PatternType.ANY),
        Operation=int(AclOperation.ANY),
        PermissionType=int(AclPermissionType.ANY),
    )
    resp = ctx.core.describe_acls(req, 3)
    assert resp.ErrorCode == 0
    assert [(r.ResourceType, r.ResourceName, r.PatternType) for r in resp.Resources] == [
        (2, "orders", 3),
        (2, "payments", 3),
    ]
    assert [(a.Principal, a.Operation) for a in resp.Resources[0].Acls] == [
        ("User:alice", 3),
        ("User:bob", 4),
    ]
    only_bob = ctx.core.describe_acls(req.model_copy(update={"PrincipalFilter": "User:bob"}), 3)
    assert [len(r.Acls) for r in only_bob.Resources] == [1]


def test_describe_refuses_a_filter_with_unknown_codes() -> None:
    resp = three_acls().core.describe_acls(DescribeAclsRequest(), 3)  # every code 0: UNKNOWN
    assert resp.ErrorCode == Errors.INVALID_REQUEST and resp.Resources == []


# ---- AlterUserScramCredentials ----------------------------------------------------------------------


def test_an_upsertion_stores_the_keys_derived_from_the_salted_password() -> None:
    ctx = ControlTestContext()
    result = alter(ctx, [upsert("alice", SHA512, 8192, "alice-secret")])
    assert names(result) == ["UserScramCredentialRecord"]
    assert [(r.User, r.ErrorCode) for r in result.response.Results] == [("alice", 0)]
    rec = result.records[0].message
    expected = new_credential(ScramMechanism.SCRAM_SHA_512, "alice-secret", 8192, SALT)
    assert (rec.Name, rec.Mechanism, rec.Iterations) == ("alice", SHA512, 8192)
    assert (bytes(rec.Salt), bytes(rec.StoredKey), bytes(rec.ServerKey)) == (
        expected.salt,
        expected.stored_key,
        expected.server_key,
    )
    assert ("alice", SHA512) in ctx.core.m.scram.records
    assert ctx.replayed_from_empty().state() == ctx.core.state()


def test_one_request_may_give_a_user_both_mechanisms() -> None:
    ctx = ControlTestContext()
    result = alter(ctx, [upsert("alice", SHA256), upsert("alice", SHA512)])
    assert len(result.records) == 2
    assert [(r.User, r.ErrorCode) for r in result.response.Results] == [("alice", 0)]


@pytest.mark.parametrize(
    ("alteration", "code", "message"),
    [
        (upsert("alice", iterations=4095), Errors.UNACCEPTABLE_CREDENTIAL, "Too few iterations"),
        (upsert("alice", iterations=16385), Errors.UNACCEPTABLE_CREDENTIAL, "Too many iterations"),
        (upsert("alice", mechanism=0), Errors.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
        (upsert("alice", mechanism=9), Errors.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
        (upsert(""), Errors.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"),
        (delete("alice"), Errors.RESOURCE_NOT_FOUND, "does not exist"),
    ],
)
def test_a_refused_alteration_answers_its_user_and_spares_the_others(
    alteration: Any, code: Errors, message: str
) -> None:
    ctx = ControlTestContext()
    if isinstance(alteration, AlterUserScramCredentialsRequest.ScramCredentialDeletion):
        result = alter(ctx, [upsert("bob")], [alteration])
    else:
        result = alter(ctx, [alteration, upsert("bob")])
    answers = {r.User: (r.ErrorCode, r.ErrorMessage) for r in result.response.Results}
    assert answers[alteration.Name][0] == code
    assert message in (answers[alteration.Name][1] or "")
    assert answers["bob"] == (0, None)
    assert [r.message.Name for r in result.records] == ["bob"]


def test_the_same_user_and_mechanism_twice_is_a_duplicate_and_writes_nothing_for_that_user() -> None:
    ctx = ControlTestContext()
    alter(ctx, [upsert("alice", SHA256)])
    result = alter(ctx, [upsert("alice", SHA256), upsert("bob")], [delete("alice", SHA256)])
    answers = {r.User: r.ErrorCode for r in result.response.Results}
    assert answers == {"alice": Errors.DUPLICATE_RESOURCE, "bob": 0}
    assert [r.message.Name for r in result.records] == ["bob"]


def test_a_user_with_one_bad_alteration_keeps_what_it_had() -> None:
    ctx = ControlTestContext()
    alter(ctx, [upsert("alice", SHA256)])
    result = alter(ctx, [upsert("alice", SHA512, iterations=100)], [delete("alice", SHA256)])
    assert result.records == []
    assert result.response.Results[0].ErrorCode == Errors.UNACCEPTABLE_CREDENTIAL
    assert ("alice", SHA256) in ctx.core.m.scram.records


def test_a_deletion_removes_the_credential() -> None:
    ctx = ControlTestContext()
    alter(ctx, [upsert("alice", SHA256), upsert("alice", SHA512)])
    result = alter(ctx, deletions=[delete("alice", SHA256)])
    assert names(result) == ["RemoveUserScramCredentialRecord"]
    assert list(ctx.core.m.scram.records) == [("alice", SHA512)]
    assert ctx.replayed_from_empty().state() == ctx.core.state()


def test_scram_needs_metadata_version_3_5() -> None:
    ctx = ControlTestContext(metadata_version=MV_3_4_IV0)
    result = alter(ctx, [upsert("alice")])
    assert result.records == [] and result.response.Results[0].ErrorCode == Errors.UNSUPPORTED_VERSION


# ---- DescribeUserScramCredentials -------------------------------------------------------------------


def test_describe_credentials_all_named_missing_and_duplicate() -> None:
    ctx = ControlTestContext()
    alter(ctx, [upsert("bob", SHA256, 4096), upsert("alice", SHA512, 8192), upsert("alice", SHA256, 4096)])
    D = DescribeUserScramCredentialsRequest
    every = ctx.core.describe_user_scram_credentials(D(Users=None), 0)
    assert [(r.User, [(c.Mechanism, c.Iterations) for c in r.CredentialInfos]) for r in every.Results] == [
        ("alice", [(SHA256, 4096), (SHA512, 8192)]),
        ("bob", [(SHA256, 4096)]),
    ]
    assert ctx.core.describe_user_scram_credentials(D(), 0) == every
    some = ctx.core.describe_user_scram_credentials(
        D(Users=[D.UserName(Name="carol"), D.UserName(Name="bob"), D.UserName(Name="carol")]), 0
    )
    # carol is asked twice: DUPLICATE_RESOURCE wins over RESOURCE_NOT_FOUND, as in Kafka
    assert [(r.User, r.ErrorCode) for r in some.Results] == [("carol", Errors.DUPLICATE_RESOURCE), ("bob", 0)]
    missing = ctx.core.describe_user_scram_credentials(D(Users=[D.UserName(Name="dave")]), 0)
    assert missing.Results[0].ErrorCode == Errors.RESOURCE_NOT_FOUND


# ---- the records everywhere: transactions, a fresh image, a snapshot --------------------------------


def test_an_aborted_transaction_takes_acls_and_credentials_back() -> None:
    ctx = three_acls()
    alter(ctx, [upsert("alice")])
    before = ctx.core.state()
    ctx.replay([ApiMessageAndVersion(BeginTransactionRecord(Name="t"), 0)])
    create(ctx, creation("inside"))
    ctx.apply(ctx.core.delete_acls(DeleteAclsRequest(Filters=[any_filter(PrincipalFilter="User:bob")]), 3))
    alter(ctx, [upsert("bob")], [delete("alice")])
    assert ctx.core.state() != before
    ctx.replay([ApiMessageAndVersion(AbortTransactionRecord(Reason="test"), 0)])
    assert ctx.core.state() == before


def image_of(records: list[ApiMessageAndVersion]) -> MetadataImage:
    delta = MetadataDelta(MetadataImage.EMPTY)
    for offset, r in enumerate(records):
        delta.replay(r, offset)
    return delta.apply()


def test_a_fresh_image_and_its_snapshot_hold_the_acl_and_the_credential() -> None:
    ctx = ControlTestContext()
    create(ctx, creation("orders", "User:alice"))
    alter(ctx, [upsert("alice", SHA512, 8192)])

    image = image_of(ctx.log)
    (acl_id,) = ctx.core.m.acls.records
    assert isinstance(acl_id, Uuid)
    assert AclBinding.from_record(image.acls.records[acl_id]) == AclBinding(
        ResourceType.TOPIC,
        "orders",
        PatternType.LITERAL,
        "User:alice",
        "*",
        AclOperation.READ,
        AclPermissionType.ALLOW,
    )
    assert image.scram.records[("alice", SHA512)] == ctx.core.m.scram.records[("alice", SHA512)]

    # A broker answers from its image what the controller answers from its state.
    req = DescribeAclsRequest(
        ResourceTypeFilter=int(ResourceType.ANY),
        PatternTypeFilter=int(PatternType.ANY),
        Operation=int(AclOperation.ANY),
        PermissionType=int(AclPermissionType.ANY),
    )
    assert describe_acls(image.acls.records.values(), req, 3) == ctx.core.describe_acls(req, 3)
    users = DescribeUserScramCredentialsRequest()
    assert describe_user_scram_credentials(
        image.scram.records.values(), users
    ) == ctx.core.describe_user_scram_credentials(users, 0)

    # A snapshot is the image written as records: read back, it holds the same two.
    reread = image_of(image.write())
    assert dict(reread.acls.records) == dict(image.acls.records)
    assert dict(reread.scram.records) == dict(image.scram.records)
    # and a controller loading that snapshot has the same ACLs and credentials
    loaded = QuorumControllerCore(ctx.config)
    loaded.replay_all(image.write(), 0)
    assert loaded.m.acls.state() == ctx.core.m.acls.state()
    assert loaded.m.scram.state() == ctx.core.m.scram.state()
