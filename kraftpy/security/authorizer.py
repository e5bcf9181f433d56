"""Who may do what, decided as Kafka's StandardAuthorizer decides it, from the ACLs of a metadata
image plus two configs: `super.users` and `allow.everyone.if.no.acl.found`.

The rules, in order:
  * a super user may do anything;
  * the ACLs that apply to a resource are its LITERAL ones, the LITERAL `*` wildcard of its type,
    and the PREFIXED ones whose name starts the resource name;
  * of those, one naming the principal (or `User:*`), the host (or `*`) and the operation (or ALL)
    decides: any DENY wins, else any ALLOW allows;
  * an ALLOW of READ, WRITE, DELETE or ALTER also allows DESCRIBE, and of ALTER_CONFIGS also
    DESCRIBE_CONFIGS (a DENY implies nothing);
  * when ACLs apply to the resource but none matched, the answer is no; when none apply at all,
    `allow.everyone.if.no.acl.found` decides.

Beyond Kafka, `bound_node_id` reads a node id out of a principal (`User:node-3`), so the controller
can refuse a broker that speaks for another.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from kraftpy.security.acl import (
    WILDCARD_HOST,
    WILDCARD_RESOURCE,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from kraftpy.security.principal import WILDCARD, KafkaPrincipal

SUPER_USERS_CONFIG = "super.users"
ALLOW_EVERYONE_IF_NO_ACL_FOUND_CONFIG = "allow.everyone.if.no.acl.found"
NODE_PRINCIPAL_TEMPLATE_CONFIG = "kraftpy.node.principal.template"
NODE_ID_PLACEHOLDER = "{id}"

_WILDCARD_PRINCIPAL = str(WILDCARD)

_IMPLIES_DESCRIBE = frozenset(
    {AclOperation.DESCRIBE, AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE, AclOperation.ALTER}
)
_IMPLIES_DESCRIBE_CONFIGS = frozenset({AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS})


def parse_super_users(value: str | None) -> frozenset[str]:
    """`super.users`: principals separated by semicolons (a comma does not separate them, as in
    Kafka). ValueError naming an entry that is not `Type:name`."""
    users = (entry.strip() for entry in (value or "").split(";"))
    return frozenset(str(KafkaPrincipal.parse(u)) for u in users if u)


def parse_allow_everyone(value: str | bool | None) -> bool:
    """`allow.everyone.if.no.acl.found`: Java's Boolean.parseBoolean, so anything but `true`
    (any case) is false, the safe side."""
    if isinstance(value, bool):
        return value
    return (value or "").strip().lower() == "true"


def acl_operation_matches(acl: AclBinding, operation: AclOperation) -> bool:
    """Whether `acl`'s operation covers `operation`, implications included."""
    if acl.operation in (AclOperation.ALL, operation):
        return True
    # Implications widen only what is allowed: DENY READ must not deny DESCRIBE.
    if acl.permission != AclPermissionType.ALLOW:
        return False
    if operation == AclOperation.DESCRIBE:
        return acl.operation in _IMPLIES_DESCRIBE
    if operation == AclOperation.DESCRIBE_CONFIGS:
        return acl.operation in _IMPLIES_DESCRIBE_CONFIGS
    return False


def acl_applies(acl: AclBinding, principal: str, host: str, operation: AclOperation) -> bool:
    """Whether `acl` speaks to this request; its resource is taken as already matched."""
    return (
        acl.principal in (principal, _WILDCARD_PRINCIPAL)
        and acl.host in (host, WILDCARD_HOST)
        and acl_operation_matches(acl, operation)
    )


@dataclass(frozen=True)
class AclIndex:
    """The ACLs of one image, indexed so that finding the ones that apply to a resource costs the
    number of those ACLs (plus one dict lookup per distinct prefix length), not the number of ACLs.

    `entries` keeps every (record id, binding) in the image's order, for describe and delete."""

    entries: tuple[tuple[Hashable, AclBinding], ...] = ()
    literal: Mapping[tuple[ResourceType, str], tuple[AclBinding, ...]] = field(default_factory=dict)
    prefixed: Mapping[tuple[ResourceType, str], tuple[AclBinding, ...]] = field(default_factory=dict)
    prefix_lengths: Mapping[ResourceType, tuple[int, ...]] = field(default_factory=dict)

    @classmethod
    def build(cls, entries: Iterable[tuple[Hashable, AclBinding]]) -> AclIndex:
        entries = tuple(entries)
        literal: dict[tuple[ResourceType, str], list[AclBinding]] = defaultdict(list)
        prefixed: dict[tuple[ResourceType, str], list[AclBinding]] = defaultdict(list)
        lengths: dict[ResourceType, set[int]] = defaultdict(set)
        for _, acl in entries:
            key = (acl.resource_type, acl.resource_name)
            if acl.pattern_type == PatternType.LITERAL:
                literal[key].append(acl)
            elif acl.pattern_type == PatternType.PREFIXED:
                prefixed[key].append(acl)
                lengths[acl.resource_type].add(len(acl.resource_name))
        return cls(
            entries,
            {k: tuple(v) for k, v in literal.items()},
            {k: tuple(v) for k, v in prefixed.items()},
            {t: tuple(sorted(ls)) for t, ls in lengths.items()},
        )

    @classmethod
    def from_records(cls, records: Mapping[Hashable, Any]) -> AclIndex:
        """From AccessControlEntryRecords by id, as `MetadataImage.acls.records` keeps them."""
        return cls.build((rid, AclBinding.from_record(rec)) for rid, rec in records.items())

    def __len__(self) -> int:
        return len(self.entries)

    def applicable(self, resource_type: ResourceType, name: str) -> Iterator[AclBinding]:
        """The ACLs that apply to the resource `name` of `resource_type`: literal, wildcard,
        then prefixed (shortest prefix first)."""
        yield from self.literal.get((resource_type, name), ())
        if name != WILDCARD_RESOURCE:
            yield from self.literal.get((resource_type, WILDCARD_RESOURCE), ())
        for length in self.prefix_lengths.get(resource_type, ()):
            if length > len(name):
                break
            yield from self.prefixed.get((resource_type, name[:length]), ())

    def matching(self, flt: AclBindingFilter) -> list[tuple[Hashable, AclBinding]]:
        """(record id, binding) of every ACL the filter selects; a scan, as in Kafka, since
        filters may leave any field open."""
        return [(rid, acl) for rid, acl in self.entries if flt.matches(acl)]


class Authorizer:
    """StandardAuthorizer's decisions over the ACLs of the latest image it was given.

    Not thread-safe to update, but a decision reads one immutable index, so a decision racing an
    update sees either the old ACLs or the new ones, never a mix."""

    def __init__(
        self,
        super_users: Iterable[str] = (),
        allow_everyone_if_no_acl_found: bool = False,
        index: AclIndex | None = None,
    ) -> None:
        self.super_users = frozenset(super_users)
        self.allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found
        self.index = AclIndex() if index is None else index
        # The image store the index was built from: an unchanged store is the same object, so
        # identity tells whether a rebuild is needed without looking at a single record.
        self._source: object | None = None

    @classmethod
    def from_config(cls, configs: Mapping[str, Any]) -> Authorizer:
        """From `super.users` and `allow.everyone.if.no.acl.found` (absent: none, false)."""
        return cls(
            parse_super_users(configs.get(SUPER_USERS_CONFIG)),
            parse_allow_everyone(configs.get(ALLOW_EVERYONE_IF_NO_ACL_FOUND_CONFIG)),
        )

    def update(self, image: Any) -> bool:
        """Take the ACLs of `image` (a MetadataImage); True when they changed and were re-indexed."""
        store = image.acls
        if store is self._source:
            return False
        self.index = AclIndex.from_records(store.records)
        self._source = store
        return True

    def is_super_user(self, principal: str) -> bool:
        return principal in self.super_users

    def authorize(
        self,
        principal: str,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
        resource_name: str,
    ) -> bool:
        """Whether `principal` (`User:alice`) connecting from `host` (its IP address as text) may
        do `operation` on the resource `resource_name` of `resource_type`."""
        if self.is_super_user(principal):
            return True
        any_applicable = allowed = False
        for acl in self.index.applicable(resource_type, resource_name):
            any_applicable = True
            if not acl_applies(acl, principal, host, operation):
                continue
            # Anything but ALLOW denies, as in Kafka, so a damaged record fails closed.
            if acl.permission != AclPermissionType.ALLOW:
                return False
            allowed = True
        if any_applicable:
            return allowed
        return self.allow_everyone_if_no_acl_found

    def authorize_by_resource_type(
        self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType
    ) -> bool:
        """Whether `principal` may do `operation` on at least one resource of `resource_type`
        (Kafka's Authorizer.authorizeByResourceType, KIP-679: an idempotent producer needs WRITE on
        some topic). A DENY on every such resource (the `*` literal or the empty prefix) wins; else
        any ALLOW that applies; with no ACL of that type at all, allow.everyone.if.no.acl.found."""
        if self.is_super_user(principal):
            return True
        any_of_type = False
        allowed = False
        for _, acl in self.index.entries:
            if acl.resource_type != resource_type:
                continue
            any_of_type = True
            if not acl_applies(acl, principal, host, operation):
                continue
            if acl.permission == AclPermissionType.DENY:
                covers_all = (
                    acl.pattern_type == PatternType.LITERAL and acl.resource_name == WILDCARD_RESOURCE
                ) or (acl.pattern_type == PatternType.PREFIXED and acl.resource_name == "")
                if covers_all:
                    return False
            elif acl.permission == AclPermissionType.ALLOW:
                allowed = True
        return allowed or (not any_of_type and self.allow_everyone_if_no_acl_found)

    def describe(self, flt: AclBindingFilter = AclBindingFilter.ANY) -> list[AclBinding]:
        """The ACLs the filter selects, in the order they were created."""
        return [acl for _, acl in self.index.matching(flt)]

    def matching(self, flt: AclBindingFilter) -> list[tuple[Hashable, AclBinding]]:
        """(record id, binding) of the ACLs the filter selects: what DeleteAcls removes."""
        return self.index.matching(flt)


def parse_node_template(template: str) -> tuple[str, str] | None:
    """`kraftpy.node.principal.template` as the text before and after `{id}`; None when empty
    (the rule is off). ValueError unless `{id}` occurs exactly once."""
    template = template.strip()
    if not template:
        return None
    if template.count(NODE_ID_PLACEHOLDER) != 1:
        raise ValueError(
            f"{NODE_PRINCIPAL_TEMPLATE_CONFIG} {template!r} must hold {NODE_ID_PLACEHOLDER} exactly once "
            f"(e.g. User:node-{NODE_ID_PLACEHOLDER})"
        )
    before, _, after = template.partition(NODE_ID_PLACEHOLDER)
    return before, after


def bound_node_id(principal: str, template: str) -> int | None:
    """The node id `principal` stands for under `template` (`User:node-{id}`): 3 for `User:node-3`.
    None when the template is empty or the principal does not fit it.

    Only the plain decimal form counts (`node-03` is not node 3), so that one node id has exactly
    one principal and a certificate cannot claim a node under a second spelling."""
    parts = parse_node_template(template)
    if parts is None:
        return None
    before, after = parts
    if len(principal) <= len(before) + len(after):
        return None
    if not (principal.startswith(before) and principal.endswith(after)):
        return None
    digits = principal[len(before) : len(principal) - len(after)]
    if not (digits.isascii() and digits.isdigit()) or str(int(digits)) != digits:
        return None
    return int(digits)
