"""The principal of a TLS client, named as Kafka names it: the subject of the client's certificate
printed as Java's X500Principal.getName() prints it (RFC 2253, most specific RDN first), then
rewritten by `ssl.principal.mapping.rules` (Kafka's SslPrincipalMapper).

Rules are a comma separated list, first match wins:
  * `DEFAULT`: the distinguished name as it is;
  * `RULE:pattern/replacement/` with an optional `L` or `U` after the last slash: when `pattern`
    matches the whole name, every match of it is replaced by `replacement` (`$1` is a group),
    then lower or upper cased.

Patterns are Python regular expressions with ASCII classes, which agree with Java's for the
patterns such rules hold (groups, classes, anchors, quantifiers); a Java-only construct such as
`(?<name>...)` is refused when the rules are parsed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kraftpy.security.principal import ANONYMOUS, KafkaPrincipal
from protocol.transport.peer_name import distinguished_name

SSL_PRINCIPAL_MAPPING_RULES_CONFIG = "ssl.principal.mapping.rules"
DEFAULT_RULES = "DEFAULT"

# Kafka's own grammar for one rule, and for a rule followed by its separator: escaped characters
# may hide a slash inside a pattern or replacement, and the lazy tails let a bad rule be split off
# whole so that its error names all of it.
_RULE = r"(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)"
_RULE_SPLITTER = re.compile(r"\s*(" + _RULE + r")\s*(,\s*|$)", re.ASCII)
_RULE_PARSER = re.compile(_RULE, re.ASCII)

# Java's String.trim(): every character up to and including the space
_JAVA_TRIM = "".join(map(chr, range(0x21)))


class NoMatchingRule(ValueError):
    """No rule maps this distinguished name: Kafka fails the authentication."""


# --- rules ---------------------------------------------------------------------------------------

_Part = str | int  # literal text, or the number of a group to copy


@dataclass(frozen=True)
class MappingRule:
    """One rule; `pattern` None is DEFAULT."""

    pattern: re.Pattern[str] | None = None
    replacement: str = ""
    to_lower: bool = False
    to_upper: bool = False
    parts: tuple[_Part, ...] = ()

    def apply(self, dn: str) -> str | None:
        """The name this rule maps `dn` to, or None when the rule does not match it."""
        if self.pattern is None:
            return dn
        if self.pattern.fullmatch(dn) is None:
            return None
        name = self.pattern.sub(self._expand, dn)
        if self.to_lower:
            return name.lower()
        return name.upper() if self.to_upper else name

    def _expand(self, match: re.Match[str]) -> str:
        return "".join(p if isinstance(p, str) else (match.group(p) or "") for p in self.parts)

    def __str__(self) -> str:
        # Kafka's spelling, so that a log line reads the same in both
        if self.pattern is None:
            return "DEFAULT"
        case = "/L" if self.to_lower else "/U" if self.to_upper else ""
        return f"RULE:{self.pattern.pattern}/{self.replacement}{case}"


def split_rules(rules: str) -> list[str]:
    """The rules of `ssl.principal.mapping.rules` as written, empty ones dropped."""
    found = (m.group(1) for m in _RULE_SPLITTER.finditer(rules.strip(_JAVA_TRIM)))
    return [r for r in found if r]


def parse_rule(rule: str) -> MappingRule:
    """One rule; ValueError naming it when it is not DEFAULT or RULE:pattern/replacement/[LU]."""
    m = _RULE_PARSER.match(rule)
    end = m.end() if m is not None else 0
    if m is None or end != len(rule):
        raise ValueError(f"Invalid rule: `{rule}`, unmatched substring: `{rule[end:]}`")
    if m.group(1) is not None:
        return MappingRule()
    try:
        pattern = re.compile(m.group(2), re.ASCII)
    except re.error as e:
        raise ValueError(f"Invalid rule: `{rule}`: bad pattern: {e}") from None
    replacement = m.group(4)
    try:
        parts = _replacement_parts(replacement, pattern)
    except ValueError as e:
        raise ValueError(f"Invalid rule: `{rule}`: {e}") from None
    flag = m.group(6)
    return MappingRule(pattern, replacement, flag == "L", flag == "U", parts)


def parse_rules(rules: str | None) -> list[MappingRule]:
    """`ssl.principal.mapping.rules` (None: DEFAULT); ValueError naming the first bad rule."""
    return [parse_rule(r) for r in split_rules(DEFAULT_RULES if rules is None else rules)]


def _replacement_parts(replacement: str, pattern: re.Pattern[str]) -> tuple[_Part, ...]:
    """A Java replacement string (`\\x` is a literal x, `$n` and `${name}` are groups) as parts.

    Like Kafka, a `$n` naming a group the pattern does not have is literal text (Kafka escapes it
    before Java sees it); with no groups at all Java would fail on each name, so it is refused now
    rather than at the first login."""
    parts: list[_Part] = []
    i = 0
    while i < len(replacement):
        c = replacement[i]
        if c == "\\":
            if i + 1 == len(replacement):
                raise ValueError("character to be escaped is missing")
            parts.append(replacement[i + 1])
            i += 2
        elif c == "$":
            i = _group_reference(replacement, i + 1, pattern, parts)
        else:
            parts.append(c)
            i += 1
    return tuple(_merge_literals(parts))


def _group_reference(text: str, i: int, pattern: re.Pattern[str], parts: list[_Part]) -> int:
    """Reads the group reference after the `$` before `i` into `parts`; the index after it."""
    if i == len(text):
        raise ValueError("Illegal group reference: group index is missing")
    if text[i] == "{":
        end = text.find("}", i)
        name = text[i + 1 : end] if end > 0 else ""
        if end < 0 or name not in pattern.groupindex:
            raise ValueError(f"No group with name {{{name}}}")
        parts.append(pattern.groupindex[name])
        return end + 1
    if not ("0" <= text[i] <= "9"):
        raise ValueError("Illegal group reference")
    ref = int(text[i])
    if ref > pattern.groups:
        if pattern.groups == 0:
            raise ValueError(f"No group {ref}")
        parts.append("$")
        return i
    i += 1
    # Java takes more digits only while they still name an existing group: $12 with one group
    # is group 1 then a literal 2.
    while i < len(text) and "0" <= text[i] <= "9" and ref * 10 + int(text[i]) <= pattern.groups:
        ref = ref * 10 + int(text[i])
        i += 1
    parts.append(ref)
    return i


def _merge_literals(parts: Sequence[_Part]) -> list[_Part]:
    merged: list[_Part] = []
    for p in parts:
        if isinstance(p, str) and merged and isinstance(merged[-1], str):
            merged[-1] += p
        else:
            merged.append(p)
    return merged


class SslPrincipalMapper:
    """`ssl.principal.mapping.rules`, parsed once."""

    def __init__(self, rules: str | None = DEFAULT_RULES) -> None:
        self.rules = parse_rules(rules)

    def name(self, dn: str) -> str:
        """The principal name for the distinguished name `dn`; NoMatchingRule when no rule maps it."""
        for rule in self.rules:
            name = rule.apply(dn)
            if name is not None:
                return name
        raise NoMatchingRule(f"No rules apply to {dn}, rules {self}")

    def __str__(self) -> str:
        return "[" + ", ".join(map(str, self.rules)) + "]"


def peer_principal(peercert: Mapping[str, Any] | None, mapper: SslPrincipalMapper) -> KafkaPrincipal:
    """The principal of a TLS peer, as Kafka's DefaultKafkaPrincipalBuilder: ANONYMOUS without a
    verified certificate (getpeercert() gives None or {}), else `User:<mapped name>`.
    NoMatchingRule when no rule maps the name."""
    # A certificate with an empty subject would be `User:` in Kafka, a principal no ACL can name
    # and our parser refuses; ANONYMOUS says the same thing without the broken name.
    if not peercert or not peercert.get("subject"):
        return ANONYMOUS
    return KafkaPrincipal.user(mapper.name(distinguished_name(peercert)))
