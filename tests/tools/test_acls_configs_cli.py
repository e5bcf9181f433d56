"""`kraftpy acls` and `kraftpy configs` without a cluster: flags read as kafka-acls.sh and
kafka-configs.sh read them, their output lines, and bad input refused in one line before anything
is sent."""

from __future__ import annotations

import argparse
import asyncio
import io
from collections.abc import Sequence
from typing import Any

import pytest

from kraftpy.security.acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    ScramMechanism,
)
from kraftpy.security.scram import credential_from_salted, new_credential
from protocol.errors import Errors
from tools.cli import acls, configs
from tools.cli.acls import Entry, ResourceFilter, format_adding, format_current, group, plan
from tools.cli.configs import format_description, parse_add_config, parse_delete_config, upsertion
from tools.cli.errors import UserError
from tools.cli.main import build_parser, main
from tools.client.admin import ItemResult

ORDERS = ResourceFilter(ResourceType.TOPIC, "orders", PatternType.LITERAL)
ALICE_READ = Entry("User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW)


def acls_plan(*argv: str) -> acls.Plan:
    return plan(build_parser().parse_args(["acls", "--bootstrap-server", "127.0.0.1:1", *argv]))


def configs_args(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["configs", "--bootstrap-server", "127.0.0.1:1", *argv])


# ---- kafka-acls.sh's flags -------------------------------------------------------------------------


def test_add_is_every_principal_operation_and_host() -> None:
    p = acls_plan(
        "--add", "--allow-principal", "User:alice", "--allow-principal", "User:bob",
        "--operation", "Read", "--operation", "describe", "--allow-host", "10.0.0.1",
        "--deny-principal", "User:eve", "--topic", "orders", "--group", "g1",
    )  # fmt: skip
    assert p.action == "add"
    assert p.resources == (
        ORDERS,
        ResourceFilter(ResourceType.GROUP, "g1", PatternType.LITERAL),
    )
    allowed = [e for e in p.entries if e.permission is AclPermissionType.ALLOW]
    assert {(e.principal, e.operation, e.host) for e in allowed} == {
        (who, op, "10.0.0.1")
        for who in ("User:alice", "User:bob")
        for op in (AclOperation.READ, AclOperation.DESCRIBE)
    }
    denied = [e for e in p.entries if e.permission is AclPermissionType.DENY]
    # the deny host defaults to * however --allow-host was given
    assert {(e.principal, e.host) for e in denied} == {("User:eve", "*")}


def test_operation_defaults_to_all_and_the_cluster_is_kafka_cluster() -> None:
    p = acls_plan("--add", "--allow-principal", "User:admin", "--cluster")
    assert p.resources == (ResourceFilter(ResourceType.CLUSTER, "kafka-cluster", PatternType.LITERAL),)
    assert p.entries == (Entry("User:admin", "*", AclOperation.ALL, AclPermissionType.ALLOW),)


@pytest.mark.parametrize(
    ("text", "op"),
    [("Read", AclOperation.READ), ("DescribeConfigs", AclOperation.DESCRIBE_CONFIGS),
     ("describe_configs", AclOperation.DESCRIBE_CONFIGS), ("IDEMPOTENT-WRITE", AclOperation.IDEMPOTENT_WRITE),
     ("all", AclOperation.ALL)],
)  # fmt: skip
def test_operations_read_as_kafka_spells_them(text: str, op: AclOperation) -> None:
    assert acls.parse_operation(text) is op


def test_prefixed_and_match_pattern_types() -> None:
    p = acls_plan(
        "--add", "--allow-principal", "User:a", "--topic", "pay-", "--resource-pattern-type", "PREFIXED"
    )
    assert p.resources == (ResourceFilter(ResourceType.TOPIC, "pay-", PatternType.PREFIXED),)
    listed = acls_plan("--list", "--topic", "pay-eu", "--resource-pattern-type", "match")
    assert listed.resources[0].pattern_type is PatternType.MATCH


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ((), "exactly one action"),
        (("--add", "--list"), "exactly one action"),
        (("--add", "--topic", "t"), "You must specify one of: --allow-principal, --deny-principal"),
        (("--add", "--allow-principal", "User:a"), "You must provide at least one resource"),
        (("--add", "--allow-principal", "alice", "--topic", "t"), "not a principal of the form Type:name"),
        (("--add", "--allow-principal", "User:a", "--topic", "t", "--operation", "Fly"), "not an operation"),
        (("--add", "--allow-principal", "User:a", "--group", "g", "--operation", "Write"),
         "ResourceType GROUP only supports operations Read, Delete, Describe, All"),
        (("--add", "--allow-principal", "User:a", "--topic", "t", "--resource-pattern-type", "match"),
         "'MATCH' is not valid when adding acls"),
        (("--add", "--allow-principal", "User:a", "--cluster", "--resource-pattern-type", "prefixed"),
         "--cluster is a literal resource"),
        (("--add", "--allow-host", "h", "--deny-principal", "User:a", "--topic", "t"),
         "--allow-host needs --allow-principal"),
        (("--list", "--allow-principal", "User:a"), "--list cannot be used with --allow-principal"),
        (("--add", "--allow-principal", "User:a", "--topic", "t", "--principal", "User:a"), "--principal is for --list"),
        (("--list", "--principal", "bob"), "not a principal"),
        (("--add", "--allow-principal", "User:a", "--topic", " "), "--topic needs a name"),
    ],
)  # fmt: skip
def test_bad_flags_are_one_error(argv: Sequence[str], message: str) -> None:
    with pytest.raises(UserError, match=message):
        acls_plan(*argv)


def test_bad_input_exits_non_zero_with_one_line_and_sends_nothing(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_admin(*_a: Any, **_k: Any) -> None:
        raise AssertionError("nothing may be sent for bad input")

    monkeypatch.setattr("tools.client.Admin", no_admin)
    code = main(
        ["acls", "--bootstrap-server", "127.0.0.1:1", "--add", "--allow-principal", "alice", "--topic", "t"]
    )
    err = capsys.readouterr().err
    assert code != 0
    assert err.count("\n") == 1 and err.startswith("kraftpy acls: --allow-principal 'alice'")
    code = main(["configs", "--bootstrap-server", "127.0.0.1:1", "--user", "alice", "--alter",
                 "--add-config", "SCRAM-SHA-512=[iterations=100,password=x]"])  # fmt: skip
    err = capsys.readouterr().err
    assert code != 0 and err.count("\n") == 1 and "between 4096 and 16384" in err


def test_remove_without_force_and_without_a_terminal_is_refused(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("y\n"))
    monkeypatch.setattr("tools.client.Admin", lambda *_a, **_k: pytest.fail("nothing may be sent"))
    code = main(["acls", "--bootstrap-server", "127.0.0.1:1", "--remove", "--topic", "orders"])
    err = capsys.readouterr().err
    assert code != 0 and "add --force" in err and err.count("\n") == 1


# ---- kafka-acls.sh's lines -------------------------------------------------------------------------


def test_lines_are_kafkas() -> None:
    assert str(ORDERS) == "ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)"
    assert str(ALICE_READ) == "(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)"
    assert format_current({ORDERS: [ALICE_READ]}) == (
        "Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)`: \n"
        " \t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW) \n"
        "\n"
    )
    bob = Entry("User:bob", "10.0.0.1", AclOperation.WRITE, AclPermissionType.DENY)
    assert format_adding(ORDERS, [ALICE_READ, bob]) == (
        "Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)`: \n"
        " \t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)\n"
        "\t(principal=User:bob, host=10.0.0.1, operation=WRITE, permissionType=DENY) \n"
    )


def test_listing_by_principal() -> None:
    bob = Entry("User:bob", "*", AclOperation.WRITE, AclPermissionType.ALLOW)
    out = format_current({ORDERS: [ALICE_READ, bob]}, ["User:bob", "User:carol"])
    assert out.splitlines() == [
        "ACLs for principal `User:bob`",
        "Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)`: ",
        " \t(principal=User:bob, host=*, operation=WRITE, permissionType=ALLOW) ",
        "",
        "ACLs for principal `User:carol`",
    ]


def test_group_sorts_resources_and_entries() -> None:
    b = [
        AclBinding(ResourceType.TOPIC, "z", PatternType.LITERAL, "User:b", "*", AclOperation.READ, AclPermissionType.ALLOW),
        AclBinding(ResourceType.TOPIC, "a", PatternType.PREFIXED, "User:a", "*", AclOperation.READ, AclPermissionType.ALLOW),
        AclBinding(ResourceType.TOPIC, "z", PatternType.LITERAL, "User:a", "*", AclOperation.READ, AclPermissionType.ALLOW),
    ]  # fmt: skip
    grouped = group(b)
    assert [(r.name, r.pattern_type.name) for r in grouped] == [("z", "LITERAL"), ("a", "PREFIXED")]
    assert [e.principal for e in grouped[ResourceFilter(ResourceType.TOPIC, "z", PatternType.LITERAL)]] == [
        "User:a",
        "User:b",
    ]


# ---- a run against a fake admin client --------------------------------------------------------------


class FakeAdmin:
    """The Admin methods `kraftpy acls` uses, over a set of bindings."""

    bindings: set[AclBinding] = set()
    deleted_with: list[AclBindingFilter] = []

    def __init__(self, bootstrap: str) -> None:
        pass

    async def __aenter__(self) -> FakeAdmin:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    async def create_acls(self, bindings: Sequence[AclBinding]) -> list[ItemResult]:
        FakeAdmin.bindings |= set(bindings)
        return [ItemResult(Errors.NONE) for _ in bindings]

    async def describe_acls(self, flt: AclBindingFilter = AclBindingFilter.ANY) -> list[AclBinding]:
        return [b for b in FakeAdmin.bindings if flt.matches(b)]

    async def delete_acls(self, filters: Sequence[AclBindingFilter]) -> list[ItemResult]:
        FakeAdmin.deleted_with += filters
        out = []
        for f in filters:
            gone = tuple(b for b in FakeAdmin.bindings if f.matches(b))
            FakeAdmin.bindings -= set(gone)
            out.append(ItemResult(Errors.NONE, None, gone))
        return out


def execute(p: acls.Plan, *, force: bool = True, answer: bool = True) -> tuple[int, str, list[str]]:
    out = io.StringIO()
    asked: list[str] = []

    def ask(q: str) -> bool:
        asked.append(q)
        return answer

    code = asyncio.run(acls._execute("x:1", p, force=force, out=out, ask=ask))
    return code, out.getvalue(), asked


@pytest.fixture
def fake_admin(monkeypatch: pytest.MonkeyPatch) -> type[FakeAdmin]:
    FakeAdmin.bindings = set()
    FakeAdmin.deleted_with = []
    monkeypatch.setattr("tools.client.Admin", FakeAdmin)
    return FakeAdmin


def test_add_prints_what_it_adds_then_the_acls_of_the_resource(fake_admin: type[FakeAdmin]) -> None:
    code, out, _ = execute(
        acls_plan("--add", "--allow-principal", "User:alice", "--operation", "Read", "--topic", "orders")
    )
    assert code == 0
    adding = format_adding(ORDERS, [ALICE_READ])
    assert out == adding + "\n" + format_current({ORDERS: [ALICE_READ]})


def test_remove_asks_per_resource_and_removes_only_what_was_confirmed(fake_admin: type[FakeAdmin]) -> None:
    execute(acls_plan("--add", "--allow-principal", "User:alice", "--operation", "Read", "--topic", "orders"))
    code, out, asked = execute(acls_plan("--remove", "--topic", "orders"), force=False, answer=False)
    assert code == 0 and len(fake_admin.bindings) == 1
    assert asked == [
        "Are you sure you want to delete all ACLs for resource filter "
        "`ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)`? (y/n)"
    ]
    code, out, asked = execute(
        acls_plan("--remove", "--allow-principal", "User:alice", "--operation", "Read", "--topic", "orders"),
        force=False,
    )
    assert asked[0].startswith("Are you sure you want to remove ACLs: \n \t(principal=User:alice")
    assert asked[0].endswith(
        " \n from resource filter `ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)`? (y/n)"
    )
    assert code == 0 and fake_admin.bindings == set() and out == ""
    # one exact filter per entry: another principal's ACL on the resource would stay
    (flt,) = fake_admin.deleted_with
    assert (flt.principal, flt.operation, flt.permission) == (
        "User:alice",
        AclOperation.READ,
        AclPermissionType.ALLOW,
    )


# ---- kafka-configs.sh for users ---------------------------------------------------------------------


def test_add_config_settings() -> None:
    (one,) = parse_add_config("SCRAM-SHA-512=[iterations=8192,password=alice-secret]")
    assert (one.mechanism, one.iterations, one.password) == (
        ScramMechanism.SCRAM_SHA_512,
        8192,
        "alice-secret",
    )
    assert "alice-secret" not in repr(one)
    both = parse_add_config("SCRAM-SHA-256=[password=a],SCRAM-SHA-512=[iterations=4096,password=b]")
    assert [(s.mechanism.mechanism_name, s.iterations) for s in both] == [
        ("SCRAM-SHA-256", 4096),
        ("SCRAM-SHA-512", 4096),
    ]
    assert parse_delete_config("SCRAM-SHA-512, SCRAM-SHA-256") == [
        ScramMechanism.SCRAM_SHA_512,
        ScramMechanism.SCRAM_SHA_256,
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("SCRAM-SHA-1=[password=x]", "not a SCRAM mechanism"),
        ("consumer_byte_rate=1024", "not a SCRAM mechanism"),
        ("SCRAM-SHA-512=password=x", "in brackets"),
        ("SCRAM-SHA-512=[iterations=8192]", "needs a non-empty password"),
        ("SCRAM-SHA-512=[iterations=99999,password=x]", "between 4096 and 16384, got 99999"),
        ("SCRAM-SHA-512=[iterations=lots,password=x]", "is not a number"),
        ("SCRAM-SHA-512=[salt=abc,password=x]", "is not iterations=N or password=P"),
        # a comma inside the brackets belongs to the settings: it is not split off as another config
        ("SCRAM-SHA-256=[iterations=8192,password=a,b=c]", "'b=c' is not iterations=N"),
        ("SCRAM-SHA-512=[password=a],SCRAM-SHA-512=[password=b]", "twice"),
    ],
)
def test_bad_add_config_is_one_error(text: str, message: str) -> None:
    with pytest.raises(UserError, match=message):
        parse_add_config(text)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--user", "alice", "--alter"), "At least one of --add-config or --delete-config"),
        (("--entity-type", "users", "--alter", "--delete-config", "SCRAM-SHA-256"), "exactly one user"),
        (("--entity-type", "topics", "--entity-name", "t", "--alter", "--delete-config", "SCRAM-SHA-256"),
         "--entity-type topics is not kept"),
        (("--entity-name", "alice", "--alter", "--delete-config", "SCRAM-SHA-256"), "needs --entity-type users"),
        (("--user", "alice", "--alter", "--add-config", "SCRAM-SHA-256=[password=a]", "--delete-config",
          "SCRAM-SHA-256"), "both added and deleted"),
    ],
)  # fmt: skip
def test_bad_alterations_are_one_error(argv: Sequence[str], message: str) -> None:
    with pytest.raises(UserError, match=message):
        configs.alteration(configs_args(*argv))


def test_the_upsertion_carries_the_salted_password_not_the_password() -> None:
    (s,) = parse_add_config("SCRAM-SHA-256=[iterations=4096,password=pencil]")
    u = upsertion("alice", s, salt=b"salt" * 8)
    cred = new_credential(ScramMechanism.SCRAM_SHA_256, "pencil", 4096, b"salt" * 8)
    assert (u.Name, u.Mechanism, u.Iterations, u.Salt) == ("alice", 1, 4096, b"salt" * 8)
    assert b"pencil" not in u.SaltedPassword and len(u.SaltedPassword) == 32
    assert credential_from_salted(ScramMechanism.SCRAM_SHA_256, u.SaltedPassword, u.Salt, 4096) == cred
    assert len(upsertion("a", s).Salt) == configs.SALT_BYTES


def test_describe_lines_are_kafkas() -> None:
    assert (
        format_description("alice", Errors.NONE, None, [(1, 4096), (2, 8192)])
        == "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=4096, "
        "SCRAM-SHA-512=iterations=8192"
    )
    assert format_description(
        "bob", Errors.RESOURCE_NOT_FOUND, "Attempt to describe a user credential that does not exist: bob", []
    ) == (
        "Error retrieving SCRAM credential configs for user-principal 'bob': ResourceNotFoundException: "
        "Attempt to describe a user credential that does not exist: bob"
    )
