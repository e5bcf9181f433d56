"""The authorizer's decisions, its filters, its index over the image, and the node-binding rule."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

import kraftpy.security.authorizer as authorizer_module
from kraftpy.image import MetadataDelta, MetadataImage
from kraftpy.security.acl import (
    CLUSTER_RESOURCE_NAME,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from kraftpy.security.authorizer import (
    AclIndex,
    Authorizer,
    bound_node_id,
    parse_allow_everyone,
    parse_node_template,
    parse_super_users,
)
from protocol import metadata_records as mr
from protocol.uuid import Uuid

Op = AclOperation
TOPIC, GROUP, CLUSTER = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
LIT, PRE = PatternType.LITERAL, PatternType.PREFIXED
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY

ALICE, BOB = "User:alice", "User:bob"
HOST = "10.0.0.1"


def acl(
    name: str,
    op: AclOperation = Op.READ,
    perm: AclPermissionType = ALLOW,
    *,
    principal: str = ALICE,
    host: str = "*",
    pattern: PatternType = LIT,
    rtype: ResourceType = TOPIC,
) -> AclBinding:
    return AclBinding(rtype, name, pattern, principal, host, op, perm)


def authorizer(*acls: AclBinding, super_users: str = "", allow_everyone: bool = False) -> Authorizer:
    return Authorizer(parse_super_users(super_users), allow_everyone, AclIndex.build(enumerate(acls)))


@dataclass(frozen=True)
class Case:
    why: str
    acls: tuple[AclBinding, ...]
    op: AclOperation
    expect: bool
    name: str = "foobar"
    principal: str = ALICE
    host: str = HOST
    rtype: ResourceType = TOPIC
    super_users: str = ""
    allow_everyone: bool = False


CASES = [
    # no ACL on the resource: allow.everyone.if.no.acl.found decides
    Case("no acls denies by default", (), Op.READ, False),
    Case("no acls, allow everyone", (), Op.READ, True, allow_everyone=True),
    Case("acls on other topics only", (acl("other"),), Op.READ, True, allow_everyone=True),
    Case(
        "acls on a same-named group only", (acl("foobar", rtype=GROUP),), Op.READ, True, allow_everyone=True
    ),
    Case(
        "prefix that does not start the name", (acl("bar", pattern=PRE),), Op.READ, True, allow_everyone=True
    ),
    # ACLs on the resource, none matching: denied even when everyone is allowed
    Case("acl for someone else", (acl("foobar", principal=BOB),), Op.READ, False, allow_everyone=True),
    Case("acl for another operation", (acl("foobar", Op.WRITE),), Op.READ, False, allow_everyone=True),
    Case("acl for another host", (acl("foobar", host="10.0.0.2"),), Op.READ, False, allow_everyone=True),
    # literal
    Case("literal allow", (acl("foobar"),), Op.READ, True),
    Case("literal allow is per operation", (acl("foobar"),), Op.WRITE, False),
    Case("literal is not a prefix", (acl("foo"),), Op.READ, False),
    Case("literal longer than the name", (acl("foobarbaz"),), Op.READ, False, name="foobar"),
    # prefixed
    Case("prefixed allow", (acl("foo", pattern=PRE),), Op.READ, True),
    Case("prefixed equal to the name", (acl("foobar", pattern=PRE),), Op.READ, True),
    Case("prefixed longer than the name", (acl("foobarx", pattern=PRE),), Op.READ, False),
    Case("prefixed is anchored at the start", (acl("oob", pattern=PRE),), Op.READ, False),
    Case("one of many prefixes", (acl("f", Op.WRITE, pattern=PRE), acl("fooba", pattern=PRE)), Op.READ, True),
    # wildcard resource
    Case("wildcard topic", (acl("*"),), Op.READ, True),
    Case("wildcard is per resource type", (acl("*", rtype=GROUP),), Op.READ, False),
    Case("prefixed star is a plain prefix", (acl("*", pattern=PRE),), Op.READ, False),
    Case(
        "prefixed star matches a star name",
        (acl("*", pattern=PRE, rtype=GROUP),),
        Op.READ,
        True,
        "*g",
        rtype=GROUP,
    ),
    # principal and host wildcards
    Case("User:* is everyone", (acl("foobar", principal="User:*"),), Op.READ, True, principal=BOB),
    Case("principal is exact", (acl("foobar", principal="User:Alice"),), Op.READ, False),
    Case("exact host", (acl("foobar", host=HOST),), Op.READ, True),
    # deny wins
    Case("deny beats allow", (acl("foobar"), acl("foobar", perm=DENY)), Op.READ, False),
    Case("deny first beats allow", (acl("foobar", perm=DENY), acl("foobar")), Op.READ, False),
    Case("deny for everyone", (acl("foobar"), acl("foobar", perm=DENY, principal="User:*")), Op.READ, False),
    Case("prefixed deny, literal allow", (acl("foobar"), acl("foo", perm=DENY, pattern=PRE)), Op.READ, False),
    Case("wildcard deny, literal allow", (acl("foobar"), acl("*", perm=DENY)), Op.READ, False),
    Case("deny from that host", (acl("foobar"), acl("foobar", perm=DENY, host=HOST)), Op.READ, False),
    Case("deny from another host", (acl("foobar"), acl("foobar", perm=DENY, host="10.9.9.9")), Op.READ, True),
    Case("deny for someone else", (acl("foobar"), acl("foobar", perm=DENY, principal=BOB)), Op.READ, True),
    Case("deny for another op", (acl("foobar"), acl("foobar", Op.WRITE, DENY)), Op.READ, True),
    # ALL and implied operations
    Case("allow ALL", (acl("foobar", Op.ALL),), Op.ALTER_CONFIGS, True),
    Case("deny ALL", (acl("foobar", Op.READ), acl("foobar", Op.ALL, DENY)), Op.READ, False),
    Case(
        "deny ALL denies describe",
        (acl("foobar", Op.DESCRIBE), acl("foobar", Op.ALL, DENY)),
        Op.DESCRIBE,
        False,
    ),
    Case("read implies describe", (acl("foobar", Op.READ),), Op.DESCRIBE, True),
    Case("write implies describe", (acl("foobar", Op.WRITE),), Op.DESCRIBE, True),
    Case("delete implies describe", (acl("foobar", Op.DELETE),), Op.DESCRIBE, True),
    Case("alter implies describe", (acl("foobar", Op.ALTER),), Op.DESCRIBE, True),
    Case("create does not imply describe", (acl("foobar", Op.CREATE),), Op.DESCRIBE, False),
    Case("describe implies nothing", (acl("foobar", Op.DESCRIBE),), Op.READ, False),
    Case(
        "alter configs implies describe configs",
        (acl("foobar", Op.ALTER_CONFIGS),),
        Op.DESCRIBE_CONFIGS,
        True,
    ),
    Case("alter does not imply describe configs", (acl("foobar", Op.ALTER),), Op.DESCRIBE_CONFIGS, False),
    Case(
        "describe configs does not imply describe", (acl("foobar", Op.DESCRIBE_CONFIGS),), Op.DESCRIBE, False
    ),
    Case(
        "deny read does not deny describe",
        (acl("foobar", Op.DESCRIBE), acl("foobar", perm=DENY)),
        Op.DESCRIBE,
        True,
    ),
    Case(
        "deny describe beats implied",
        (acl("foobar", Op.WRITE), acl("foobar", Op.DESCRIBE, DENY)),
        Op.DESCRIBE,
        False,
    ),
    Case(
        "deny read is no describe allow", (acl("foobar", perm=DENY),), Op.DESCRIBE, False, allow_everyone=True
    ),
    # cluster
    Case(
        "cluster action",
        (acl(CLUSTER_RESOURCE_NAME, Op.CLUSTER_ACTION, rtype=CLUSTER),),
        Op.CLUSTER_ACTION,
        True,
        CLUSTER_RESOURCE_NAME,
        rtype=CLUSTER,
    ),
    # super users
    Case("super user without acls", (), Op.ALTER, True, super_users="User:admin;User:alice"),
    Case("super user over deny", (acl("foobar", Op.ALL, DENY),), Op.READ, True, super_users=ALICE),
    Case("super users are exact", (), Op.READ, False, super_users="User:Alice"),
    Case("super users split on semicolons", (), Op.READ, False, super_users="User:alice,User:bob"),
]


@pytest.mark.parametrize("case", CASES, ids=[c.why for c in CASES])
def test_authorize(case: Case) -> None:
    auth = authorizer(*case.acls, super_users=case.super_users, allow_everyone=case.allow_everyone)
    assert auth.authorize(case.principal, case.host, case.op, case.rtype, case.name) is case.expect


def test_lookup_visits_only_the_acls_of_the_resource(monkeypatch: pytest.MonkeyPatch) -> None:
    """Thousands of ACLs elsewhere cost nothing: only the resource's own ACLs are examined."""
    noise = [acl(f"topic-{i}") for i in range(3000)]
    noise += [acl(f"zz{i}", pattern=PRE) for i in range(3000)]
    noise += [acl("foobar", rtype=GROUP), acl("*", rtype=GROUP)]
    relevant = [acl("foobar", Op.WRITE), acl("foo", Op.WRITE, pattern=PRE), acl("*", Op.WRITE)]
    auth = authorizer(*noise, *relevant)
    examined: list[AclBinding] = []
    real = authorizer_module.acl_applies

    def counting(a: AclBinding, *args: object) -> bool:
        examined.append(a)
        return real(a, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(authorizer_module, "acl_applies", counting)
    assert not auth.authorize(ALICE, HOST, Op.READ, TOPIC, "foobar")
    assert sorted(examined, key=repr) == sorted(relevant, key=repr)


# -- configs ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expect"),
    [
        (None, set()),
        ("", set()),
        ("User:admin", {"User:admin"}),
        (" User:admin ; User:node-1;; ", {"User:admin", "User:node-1"}),
        ("User:a,User:b", {"User:a,User:b"}),
        ("User:CN=x,O=y", {"User:CN=x,O=y"}),
    ],
)
def test_parse_super_users(value: str | None, expect: set[str]) -> None:
    assert parse_super_users(value) == expect


def test_parse_super_users_refuses_a_name_without_a_type() -> None:
    with pytest.raises(ValueError, match="'admin'"):
        parse_super_users("User:ok;admin")


@pytest.mark.parametrize(
    ("value", "expect"),
    [
        (None, False),
        ("", False),
        ("false", False),
        ("yes", False),
        ("1", False),
        ("true", True),
        (" TRUE ", True),
        (True, True),
    ],
)
def test_parse_allow_everyone(value: str | bool | None, expect: bool) -> None:
    assert parse_allow_everyone(value) is expect


def test_from_config() -> None:
    auth = Authorizer.from_config({"super.users": "User:admin", "allow.everyone.if.no.acl.found": "true"})
    assert auth.super_users == {"User:admin"}
    assert auth.allow_everyone_if_no_acl_found
    assert auth.authorize(BOB, HOST, Op.READ, TOPIC, "t")
    assert not Authorizer.from_config({}).authorize(BOB, HOST, Op.READ, TOPIC, "t")


# -- the image --------------------------------------------------------------------------------


def rid(i: int) -> Uuid:
    """A record id clear of the ids Kafka reserves (ZERO, ONE)."""
    return Uuid((1000 + i).to_bytes(16, "big"))


def acl_record(i: int, binding: AclBinding) -> mr.AccessControlEntryRecord:
    return binding.to_record(rid(i))


def replay(image: MetadataImage, *records: object) -> MetadataImage:
    delta = MetadataDelta(image)
    for offset, record in enumerate(records):
        delta.replay(record, offset)
    return delta.apply()


def test_update_follows_the_image_and_reindexes_only_on_acl_changes() -> None:
    auth = Authorizer()
    image = replay(MetadataImage.EMPTY, acl_record(1, acl("foobar")))
    assert auth.update(image)
    assert auth.authorize(ALICE, HOST, Op.READ, TOPIC, "foobar")
    index = auth.index

    assert not auth.update(image)
    image = replay(image, mr.ProducerIdsRecord(BrokerId=1, BrokerEpoch=10, NextProducerId=2000))
    assert not auth.update(image)
    assert auth.index is index

    image = replay(image, acl_record(2, acl("foo", perm=DENY, pattern=PRE)))
    assert auth.update(image)
    assert not auth.authorize(ALICE, HOST, Op.READ, TOPIC, "foobar")

    image = replay(image, mr.RemoveAccessControlEntryRecord(Id=rid(2)))
    assert auth.update(image)
    assert auth.authorize(ALICE, HOST, Op.READ, TOPIC, "foobar")
    assert [rid for rid, _ in auth.index.entries] == [rid(1)]


# -- filters ----------------------------------------------------------------------------------

LIT_FOOBAR = acl("foobar")
LIT_FOO = acl("foo", Op.WRITE, principal=BOB)
LIT_STAR = acl("*", Op.DESCRIBE, DENY)
PRE_FOO = acl("foo", pattern=PRE, host=HOST)
PRE_F = acl("f", Op.ALL, pattern=PRE)
PRE_BAR = acl("bar", pattern=PRE)
GROUP_FOOBAR = acl("foobar", rtype=GROUP, principal=BOB)
ALL_ACLS = (LIT_FOOBAR, LIT_FOO, LIT_STAR, PRE_FOO, PRE_F, PRE_BAR, GROUP_FOOBAR)

F = AclBindingFilter
FILTER_CASES = [
    ("any", F.ANY, ALL_ACLS),
    ("resource type", F(TOPIC), ALL_ACLS[:-1]),
    ("name, any pattern", F(TOPIC, "foo"), (LIT_FOO, PRE_FOO)),
    ("name, literal", F(TOPIC, "foo", LIT), (LIT_FOO,)),
    ("name, prefixed", F(TOPIC, "foo", PRE), (PRE_FOO,)),
    ("star is a plain name outside MATCH", F(TOPIC, "*", PatternType.ANY), (LIT_STAR,)),
    ("match", F(TOPIC, "foobar", PatternType.MATCH), (LIT_FOOBAR, LIT_STAR, PRE_FOO, PRE_F)),
    (
        "match across types",
        F(ResourceType.ANY, "foobar", PatternType.MATCH),
        (LIT_FOOBAR, LIT_STAR, PRE_FOO, PRE_F, GROUP_FOOBAR),
    ),
    ("match without a name", F(TOPIC, None, PatternType.MATCH), ALL_ACLS[:-1]),
    ("literal without a name", F(pattern_type=LIT), (LIT_FOOBAR, LIT_FOO, LIT_STAR, GROUP_FOOBAR)),
    ("principal", F(principal=BOB), (LIT_FOO, GROUP_FOOBAR)),
    ("host", F(host=HOST), (PRE_FOO,)),
    ("host star is a plain host", F(host="*"), tuple(a for a in ALL_ACLS if a is not PRE_FOO)),
    ("operation", F(operation=Op.ALL), (PRE_F,)),
    ("permission", F(permission=DENY), (LIT_STAR,)),
    ("nothing", F(TOPIC, "nope", LIT), ()),
    ("all fields", F(TOPIC, "foo", PRE, ALICE, HOST, Op.READ, ALLOW), (PRE_FOO,)),
    ("all fields, one off", F(TOPIC, "foo", PRE, ALICE, HOST, Op.WRITE, ALLOW), ()),
]


@pytest.mark.parametrize(("why", "flt", "expect"), FILTER_CASES, ids=[c[0] for c in FILTER_CASES])
def test_describe(why: str, flt: AclBindingFilter, expect: tuple[AclBinding, ...]) -> None:
    assert authorizer(*ALL_ACLS).describe(flt) == list(expect)


def test_matching_gives_record_ids_for_delete() -> None:
    auth = authorizer(*ALL_ACLS)
    assert auth.matching(F(principal=BOB)) == [(1, LIT_FOO), (6, GROUP_FOOBAR)]


@dataclass
class RequestFilter:
    """The fields DescribeAclsRequest and DeleteAclsFilter share."""

    ResourceTypeFilter: int = 1
    ResourceNameFilter: str | None = None
    PatternTypeFilter: int = 1
    PrincipalFilter: str | None = None
    HostFilter: str | None = None
    Operation: int = 1
    PermissionType: int = 1


def test_filter_from_request_reads_unknown_codes_as_unknown() -> None:
    flt = F.from_request(RequestFilter(2, "t", 3, ALICE, "*", 3, 3))
    assert flt == F(TOPIC, "t", LIT, ALICE, "*", Op.READ, ALLOW)
    assert not flt.is_unknown()
    assert F.from_request(RequestFilter()) == F.ANY
    for field in ("ResourceTypeFilter", "PatternTypeFilter", "Operation", "PermissionType"):
        odd = F.from_request(RequestFilter(**{field: 99}))
        assert odd.is_unknown(), field


@pytest.mark.parametrize(
    ("flt", "expect"),
    [
        (F(TOPIC, "t", LIT, ALICE, "*", Op.READ, ALLOW), None),
        (F(ResourceType.ANY, "t", LIT, ALICE, "*", Op.READ, ALLOW), "Resource type is ANY."),
        (F(TOPIC, None, LIT, ALICE, "*", Op.READ, ALLOW), "Resource name is NULL."),
        (F(TOPIC, "t", PatternType.MATCH, ALICE, "*", Op.READ, ALLOW), "Resource pattern type is MATCH."),
        (F(TOPIC, "t", LIT, None, "*", Op.READ, ALLOW), "Principal is NULL"),
        (F(TOPIC, "t", LIT, ALICE, None, Op.READ, ALLOW), "Host is NULL"),
        (F(TOPIC, "t", LIT, ALICE, "*", Op.ANY, ALLOW), "Operation is ANY"),
        (F(TOPIC, "t", LIT, ALICE, "*", Op.READ, AclPermissionType.ANY), "Permission type is ANY"),
    ],
)
def test_find_indefinite_field(flt: AclBindingFilter, expect: str | None) -> None:
    assert flt.find_indefinite_field() == expect


# -- node binding -----------------------------------------------------------------------------

NODE = "User:node-{id}"


@pytest.mark.parametrize(
    ("template", "principal", "expect"),
    [
        (NODE, "User:node-3", 3),
        (NODE, "User:node-0", 0),
        (NODE, "User:node-1234567", 1234567),
        (NODE, "User:node-03", None),
        (NODE, "User:node-", None),
        (NODE, "User:node-x", None),
        (NODE, "User:node-3x", None),
        (NODE, "User:node--3", None),
        (NODE, "User:node-+3", None),
        (NODE, "User:node- 3", None),
        (NODE, "User:node-\u0663", None),
        (NODE, "Group:node-3", None),
        (NODE, "User:admin", None),
        ("User:CN=broker-{id},OU=kraftpy", "User:CN=broker-12,OU=kraftpy", 12),
        ("User:CN=broker-{id},OU=kraftpy", "User:CN=broker-12,OU=other", None),
        ("User:{id}", "User:7", 7),
        ("", "User:node-3", None),
        ("   ", "User:node-3", None),
    ],
)
def test_bound_node_id(template: str, principal: str, expect: int | None) -> None:
    assert bound_node_id(principal, template) == expect


@pytest.mark.parametrize("template", ["User:node", "User:{id}-{id}", "User:node-{ID}"])
def test_node_template_needs_one_placeholder(template: str) -> None:
    with pytest.raises(ValueError, match="exactly once"):
        parse_node_template(template)
    with pytest.raises(ValueError, match="exactly once"):
        bound_node_id("User:node-1", template)
