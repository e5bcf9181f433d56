"""`kraftpy acls`: add, remove and list ACLs (kafka-acls.sh).

    kraftpy acls --bootstrap-server H:P --add --allow-principal User:alice --operation Read --topic orders
    kraftpy acls --bootstrap-server H:P --add --deny-principal User:eve --deny-host 10.0.0.9 --cluster \\
        --operation Alter
    kraftpy acls --bootstrap-server H:P --add --allow-principal User:bob --operation Write \\
        --topic pay- --resource-pattern-type prefixed
    kraftpy acls --bootstrap-server H:P --list [--topic orders] [--principal User:alice]
    kraftpy acls --bootstrap-server H:P --remove --force --allow-principal User:alice --operation Read \\
        --topic orders

ACLs are metadata records: the controller writes them, every broker replays them. --add and --remove
print kafka-acls.sh's lines and then the ACLs of the resources named, once the broker asked shows
the change. --remove without principals removes every ACL of the resources; it asks first, and
refuses to run without --force when there is no terminal to ask at.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

from kraftpy.security.acl import (
    CLUSTER_RESOURCE_NAME,
    WILDCARD_HOST,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from kraftpy.security.principal import KafkaPrincipal
from protocol.errors import Errors
from tools.cli.errors import UserError
from tools.client.cli_support import add_bootstrap, run

if TYPE_CHECKING:
    from tools.client.admin import Admin

SETTLE_S = 10.0
"""How long --add and --remove wait for the broker asked to show the change before listing."""

PATTERN_TYPES = {"literal": PatternType.LITERAL, "prefixed": PatternType.PREFIXED}
PATTERN_FILTERS = {**PATTERN_TYPES, "match": PatternType.MATCH, "any": PatternType.ANY}

_OPS = AclOperation
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[AclOperation, ...]] = {
    ResourceType.TOPIC: (
        _OPS.READ, _OPS.WRITE, _OPS.CREATE, _OPS.DELETE, _OPS.ALTER, _OPS.DESCRIBE,
        _OPS.DESCRIBE_CONFIGS, _OPS.ALTER_CONFIGS,
    ),
    ResourceType.GROUP: (_OPS.READ, _OPS.DELETE, _OPS.DESCRIBE),
    ResourceType.CLUSTER: (
        _OPS.CREATE, _OPS.ALTER, _OPS.DESCRIBE, _OPS.CLUSTER_ACTION, _OPS.DESCRIBE_CONFIGS,
        _OPS.ALTER_CONFIGS, _OPS.IDEMPOTENT_WRITE,
    ),
}  # fmt: skip
"""Kafka's AclEntry.supportedOperations (ALL besides, for every type)."""


def operation_name(op: AclOperation) -> str:
    """As kafka-acls.sh spells an operation on its command line: Read, DescribeConfigs."""
    return "".join(w.capitalize() for w in op.name.split("_"))


_OPERATIONS_BY_KEY = {
    op.name.replace("_", ""): op for op in AclOperation if op not in (_OPS.UNKNOWN, _OPS.ANY)
}


def parse_operation(text: str) -> AclOperation:
    """Read, READ, read, DescribeConfigs, describe_configs or Describe-Configs."""
    op = _OPERATIONS_BY_KEY.get(text.strip().upper().replace("_", "").replace("-", ""))
    if op is None:
        names = ", ".join(operation_name(o) for o in _OPERATIONS_BY_KEY.values())
        raise UserError(f"--operation '{text}' is not an operation; valid ones: {names}")
    return op


def parse_principal(text: str, flag: str) -> str:
    try:
        return str(KafkaPrincipal.parse(text.strip()))
    except ValueError:
        raise UserError(
            f"{flag} '{text}' is not a principal of the form Type:name (e.g. User:alice)"
        ) from None


@dataclass(frozen=True)
class ResourceFilter:
    """Kafka's ResourcePatternFilter (a ResourcePattern when its pattern type is LITERAL or PREFIXED)."""

    resource_type: ResourceType
    name: str
    pattern_type: PatternType

    def __str__(self) -> str:
        return (
            f"ResourcePattern(resourceType={self.resource_type.name}, name={self.name}, "
            f"patternType={self.pattern_type.name})"
        )

    def acl_filter(self, entry: Entry | None = None) -> AclBindingFilter:
        """This resource filter with `entry` exactly, or with any entry."""
        if entry is None:
            return AclBindingFilter(self.resource_type, self.name, self.pattern_type)
        return AclBindingFilter(
            self.resource_type,
            self.name,
            self.pattern_type,
            entry.principal,
            entry.host,
            entry.operation,
            entry.permission,
        )

    def binding(self, entry: Entry) -> AclBinding:
        return AclBinding(
            self.resource_type,
            self.name,
            self.pattern_type,
            entry.principal,
            entry.host,
            entry.operation,
            entry.permission,
        )


@dataclass(frozen=True, order=True)
class Entry:
    """Kafka's AccessControlEntry: who, from where, what, allowed or denied."""

    principal: str
    host: str
    operation: AclOperation
    permission: AclPermissionType

    @classmethod
    def of(cls, b: AclBinding) -> Entry:
        return cls(b.principal, b.host, b.operation, b.permission)

    def __str__(self) -> str:
        return (
            f"(principal={self.principal}, host={self.host}, operation={self.operation.name}, "
            f"permissionType={self.permission.name})"
        )


@dataclass(frozen=True)
class Plan:
    """What one `kraftpy acls` run does, checked in full before anything is sent."""

    action: str  # "add", "remove" or "list"
    resources: tuple[ResourceFilter, ...]
    entries: tuple[Entry, ...]
    list_principals: tuple[str, ...] = ()


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "acls",
        help="add, remove and list ACLs (kafka-acls)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_bootstrap(p)
    p.add_argument("--add", action="store_true", help="add ACLs")
    p.add_argument("--remove", action="store_true", help="remove ACLs")
    p.add_argument("--list", action="store_true", help="list ACLs (of the resources named, else all)")
    p.add_argument("--topic", action="append", default=[], help="a topic ('*': every topic; repeatable)")
    p.add_argument(
        "--group", action="append", default=[], help="a consumer group ('*': every group; repeatable)"
    )
    p.add_argument("--cluster", action="store_true", help="the cluster (kafka-cluster)")
    p.add_argument(
        "--resource-pattern-type",
        default="literal",
        type=str.lower,
        choices=sorted(PATTERN_FILTERS),
        help="literal or prefixed (--add); match or any also for --list and --remove (default: literal)",
    )
    p.add_argument("--allow-principal", action="append", default=[], metavar="TYPE:NAME")
    p.add_argument("--deny-principal", action="append", default=[], metavar="TYPE:NAME")
    p.add_argument(
        "--allow-host", action="append", default=[], metavar="HOST", help="default with --allow-principal: *"
    )
    p.add_argument(
        "--deny-host", action="append", default=[], metavar="HOST", help="default with --deny-principal: *"
    )
    p.add_argument(
        "--operation",
        action="append",
        default=[],
        metavar="OP",
        help="Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, AlterConfigs, "
        "IdempotentWrite, All (repeatable; default: All)",
    )
    p.add_argument("--principal", action="append", default=[], metavar="TYPE:NAME", help="--list: only these")
    p.add_argument("--force", action="store_true", help="--remove without asking")
    p.set_defaults(func=lambda a: _run(a))


# ---- the plan ---------------------------------------------------------------------------------------


def plan(args: argparse.Namespace) -> Plan:
    """Everything the flags ask for, or UserError naming the first thing wrong with them."""
    actions = [a for a in ("add", "remove", "list") if getattr(args, a)]
    if len(actions) != 1:
        raise UserError("Command must include exactly one action: --list, --add, --remove.")
    action = actions[0]
    entry_flags = {
        "--allow-principal": args.allow_principal,
        "--deny-principal": args.deny_principal,
        "--allow-host": args.allow_host,
        "--deny-host": args.deny_host,
    }
    if action == "list":
        given = [f for f, v in entry_flags.items() if v]
        if given:
            raise UserError(
                f"--list cannot be used with {', '.join(given)} (--principal lists one principal)"
            )
    elif args.principal:
        raise UserError(
            "--principal is for --list; --add and --remove take --allow-principal / --deny-principal"
        )
    for hosts, principals, flag in (
        (args.allow_host, args.allow_principal, "--allow-host"),
        (args.deny_host, args.deny_principal, "--deny-host"),
    ):
        if hosts and not principals:
            raise UserError(f"{flag} needs {flag.replace('host', 'principal')}")
    pattern = PATTERN_FILTERS[args.resource_pattern_type]
    if action == "add" and pattern not in PATTERN_TYPES.values():
        raise UserError(
            f"A '--resource-pattern-type' value of '{pattern.name}' is not valid when adding acls "
            "(use literal or prefixed)."
        )
    resources = resource_filters(args.topic, args.group, args.cluster, pattern)
    if not resources and action != "list":
        raise UserError(
            "You must provide at least one resource: --topic <topic> or --cluster or --group <group>"
        )
    operations = [parse_operation(o) for o in args.operation] or [AclOperation.ALL]
    entries = make_entries(
        [parse_principal(p, "--allow-principal") for p in args.allow_principal],
        [parse_principal(p, "--deny-principal") for p in args.deny_principal],
        args.allow_host,
        args.deny_host,
        operations,
    )
    if action == "add" and not entries:
        raise UserError(
            "You must specify one of: --allow-principal, --deny-principal when trying to add ACLs."
        )
    if entries:
        check_operations(resources, entries)
    return Plan(
        action,
        tuple(resources),
        tuple(entries),
        tuple(parse_principal(p, "--principal") for p in args.principal),
    )


def resource_filters(
    topics: Sequence[str], groups: Sequence[str], cluster: bool, pattern: PatternType
) -> list[ResourceFilter]:
    out: list[ResourceFilter] = []
    for kind, names, flag in (
        (ResourceType.TOPIC, topics, "--topic"),
        (ResourceType.GROUP, groups, "--group"),
    ):
        for name in names:
            if not name.strip():
                raise UserError(f"{flag} needs a name")
            out.append(ResourceFilter(kind, name.strip(), pattern))
    if cluster:
        if pattern not in (PatternType.LITERAL, PatternType.ANY, PatternType.MATCH):
            # Kafka drops --cluster silently then; a typed resource should not vanish.
            raise UserError(f"--cluster is a literal resource; it cannot be {pattern.name.lower()}")
        out.append(ResourceFilter(ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME, PatternType.LITERAL))
    return list(dict.fromkeys(out))


def make_entries(
    allowed: Sequence[str],
    denied: Sequence[str],
    allow_hosts: Sequence[str],
    deny_hosts: Sequence[str],
    operations: Sequence[AclOperation],
) -> list[Entry]:
    """Every principal x operation x host, allowed ones first (kafka-acls.sh's getAcl)."""
    out: list[Entry] = []
    for principals, hosts, permission in (
        (allowed, allow_hosts, AclPermissionType.ALLOW),
        (denied, deny_hosts, AclPermissionType.DENY),
    ):
        for principal in principals:
            for op in operations:
                for host in [h.strip() for h in hosts] or [WILDCARD_HOST]:
                    if not host:
                        raise UserError("--allow-host / --deny-host needs a host (* for any)")
                    out.append(Entry(principal, host, op, permission))
    return list(dict.fromkeys(out))


def check_operations(resources: Iterable[ResourceFilter], entries: Sequence[Entry]) -> None:
    for r in resources:
        valid = (*SUPPORTED_OPERATIONS[r.resource_type], AclOperation.ALL)
        bad = sorted({e.operation for e in entries} - set(valid))
        if bad:
            raise UserError(
                f"ResourceType {r.resource_type.name} only supports operations "
                f"{', '.join(operation_name(o) for o in valid)} (not {', '.join(operation_name(o) for o in bad)})"
            )


# ---- kafka-acls.sh's lines --------------------------------------------------------------------------


def _block(head: str, entries: Iterable[Entry]) -> str:
    # kafka-acls.sh: s"$head: $Newline ${acls.map("\t" + _).mkString(Newline)} $Newline", then println
    return f"{head}: \n {chr(10).join(chr(9) + str(e) for e in entries)} \n"


def format_adding(resource: ResourceFilter, entries: Iterable[Entry]) -> str:
    return _block(f"Adding ACLs for resource `{resource}`", entries)


def format_current(acls: dict[ResourceFilter, list[Entry]], principals: Sequence[str] = ()) -> str:
    """The --list output: every resource with its ACLs, or per principal asked for."""
    if not principals:
        return "".join(_block(f"Current ACLs for resource `{r}`", es) + "\n" for r, es in acls.items())
    out = []
    for p in principals:
        out.append(f"ACLs for principal `{p}`\n")
        mine = {r: [e for e in es if e.principal == p] for r, es in acls.items()}
        out.append(format_current({r: es for r, es in mine.items() if es}))
    return "".join(out)


def _pattern_order(r: ResourceFilter) -> tuple[int, int, str]:
    return (r.resource_type, r.pattern_type, r.name)


def group(bindings: Iterable[AclBinding]) -> dict[ResourceFilter, list[Entry]]:
    """Bindings by resource pattern, both sorted (Kafka's come in hash order)."""
    out: dict[ResourceFilter, set[Entry]] = {}
    for b in bindings:
        out.setdefault(ResourceFilter(b.resource_type, b.resource_name, b.pattern_type), set()).add(
            Entry.of(b)
        )
    return {r: sorted(out[r]) for r in sorted(out, key=_pattern_order)}


# ---- running it -------------------------------------------------------------------------------------


def _run(args: argparse.Namespace) -> int:
    p = plan(args)
    if p.action == "remove" and not args.force and not sys.stdin.isatty():
        raise UserError("--remove asks before removing ACLs and there is no terminal to ask at; add --force")
    return run("acls", lambda: _execute(args.bootstrap_server, p, force=args.force))


async def _execute(
    bootstrap: str,
    p: Plan,
    *,
    force: bool,
    out: TextIO | None = None,
    ask: Callable[[str], bool] | None = None,
) -> int:
    from tools.client import Admin

    out = out or sys.stdout
    ask = ask or _confirm
    async with Admin(bootstrap) as admin:
        if p.action == "add":
            return await _add(admin, p, out)
        if p.action == "remove":
            return await _remove(admin, p, out, force, ask)
        await _list(admin, p, out)
    return 0


async def _add(admin: Admin, p: Plan, out: TextIO) -> int:
    for r in p.resources:
        out.write(format_adding(r, p.entries) + "\n")
    bindings = [r.binding(e) for r in p.resources for e in p.entries]
    results = await admin.create_acls(bindings)
    failed = [(b, res) for b, res in zip(bindings, results, strict=True) if res.error is not Errors.NONE]
    for b, res in failed:
        print(
            f"Error while executing ACL command: {res.message or res.error.name} ({res.error.name}) "
            f"adding {Entry.of(b)} to `{ResourceFilter(b.resource_type, b.resource_name, b.pattern_type)}`",
            file=sys.stderr,
        )
    added = {b for b, res in zip(bindings, results, strict=True) if res.error is Errors.NONE}
    await _settle(admin, p.resources, lambda seen: added <= seen)
    await _list(admin, p, out)
    return 1 if failed else 0


async def _remove(admin: Admin, p: Plan, out: TextIO, force: bool, ask: Callable[[str], bool]) -> int:
    filters: list[AclBindingFilter] = []
    for r in p.resources:
        if not p.entries:
            question = f"Are you sure you want to delete all ACLs for resource filter `{r}`? (y/n)"
            wanted = [r.acl_filter()]
        else:
            question = (
                _block("Are you sure you want to remove ACLs", p.entries)
                + f" from resource filter `{r}`? (y/n)"
            )
            wanted = [r.acl_filter(e) for e in p.entries]
        if force or ask(question):
            filters += wanted
    if not filters:
        await _list(admin, p, out)
        return 0
    results = await admin.delete_acls(filters)
    failed = [res for res in results if res.error is not Errors.NONE]
    for res in failed:
        print(
            f"Error while executing ACL command: {res.message or res.error.name} ({res.error.name})",
            file=sys.stderr,
        )
    removed = {b for res in results for b in res.matched}
    await _settle(admin, p.resources, lambda seen: not (removed & seen))
    await _list(admin, p, out)
    return 1 if failed else 0


async def _describe(admin: Admin, resources: Sequence[ResourceFilter]) -> set[AclBinding]:
    if not resources:
        return set(await admin.describe_acls())
    found: set[AclBinding] = set()
    for r in resources:
        found.update(await admin.describe_acls(r.acl_filter()))
    return found


async def _settle(
    admin: Admin, resources: Sequence[ResourceFilter], done: Callable[[set[AclBinding]], bool]
) -> None:
    """Wait (a little) until the broker asked shows the change: it answers from its image, which
    follows the controller's log by a fetch."""
    import asyncio

    deadline = time.monotonic() + SETTLE_S
    while not done(await _describe(admin, resources)) and time.monotonic() < deadline:
        await asyncio.sleep(0.1)


async def _list(admin: Admin, p: Plan, out: TextIO) -> None:
    out.write(format_current(group(await _describe(admin, p.resources)), p.list_principals))


def _confirm(question: str) -> bool:
    print(question)
    try:
        return input().strip().lower() == "y"
    except EOFError:
        return False
