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
import ssl
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kraftpy.security.principal import ANONYMOUS, KafkaPrincipal

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


# --- distinguished names -------------------------------------------------------------------------

# OpenSSL's long names (what getpeercert() says) that RFC 2253 gives a keyword; Java prints only
# these by keyword, every other attribute as its OID and the hex of its DER value.
_KEYWORDS = {
    "commonName": "CN",
    "countryName": "C",
    "localityName": "L",
    "stateOrProvinceName": "ST",
    "organizationName": "O",
    "organizationalUnitName": "OU",
    "streetAddress": "STREET",
    "domainComponent": "DC",
    "userId": "UID",
}

_UTF8_STRING, _PRINTABLE_STRING, _IA5_STRING = 0x0C, 0x13, 0x16

# getpeercert() gives the decoded text but not its ASN.1 string type, which the hex form shows.
# These attributes have one type by their standards; any other is taken as UTF8String, what
# OpenSSL and the `cryptography` package write by default.
_OIDS = {
    "emailAddress": ("1.2.840.113549.1.9.1", _IA5_STRING),
    "serialNumber": ("2.5.4.5", _PRINTABLE_STRING),
    "dnQualifier": ("2.5.4.46", _PRINTABLE_STRING),
    "surname": ("2.5.4.4", _UTF8_STRING),
    "title": ("2.5.4.12", _UTF8_STRING),
    "description": ("2.5.4.13", _UTF8_STRING),
    "businessCategory": ("2.5.4.15", _UTF8_STRING),
    "postalCode": ("2.5.4.17", _UTF8_STRING),
    "name": ("2.5.4.41", _UTF8_STRING),
    "givenName": ("2.5.4.42", _UTF8_STRING),
    "initials": ("2.5.4.43", _UTF8_STRING),
    "generationQualifier": ("2.5.4.44", _UTF8_STRING),
    "pseudonym": ("2.5.4.65", _UTF8_STRING),
    "organizationIdentifier": ("2.5.4.97", _UTF8_STRING),
}

_ESCAPED = frozenset(',=+<>#;"\\')
_EDGE_BLANKS = (" ", "\r")
_DOTTED_OID = re.compile(r"[0-9]+(\.[0-9]+)+", re.ASCII)


def escape_value(value: str) -> str:
    """An attribute value as Java's RFC 2253 printing escapes it: `,=+<>#;"\\` anywhere, NUL as
    `\\00`, and spaces and carriage returns at either end."""
    chars = ["\\" + c if c in _ESCAPED else "\\00" if c == "\0" else c for c in value]
    lead = _blank_run(chars)
    if lead == len(chars):
        return "".join("\\" + c for c in chars)
    trail = _blank_run(chars[::-1])
    for i in [*range(lead), *range(len(chars) - trail, len(chars))]:
        chars[i] = "\\" + chars[i]
    return "".join(chars)


def _blank_run(chars: Sequence[str]) -> int:
    n = 0
    while n < len(chars) and chars[n] in _EDGE_BLANKS:
        n += 1
    return n


def _der_hex(tag: int, value: str) -> str:
    """`#` and the hex of the DER encoding of `value` as a string of ASN.1 type `tag`."""
    data = value.encode("utf-8" if tag == _UTF8_STRING else "latin-1")
    if len(data) < 0x80:
        length = bytes([len(data)])
    else:
        size = len(data).to_bytes((len(data).bit_length() + 7) // 8, "big")
        length = bytes([0x80 | len(size)]) + size
    return "#" + (bytes([tag]) + length + data).hex()


def _oid_of(attribute: str) -> tuple[str, int]:
    """The dotted OID and assumed string type of an attribute getpeercert() names."""
    if attribute in _OIDS:
        return _OIDS[attribute]
    if _DOTTED_OID.fullmatch(attribute):
        return attribute, _UTF8_STRING
    try:
        # OpenSSL knows more names than the table; ask it rather than guess.
        return ssl._ASN1Object.fromname(attribute).oid, _UTF8_STRING
    except (ValueError, AttributeError):
        raise ValueError(f"unknown certificate name attribute {attribute!r}") from None


def format_attribute(attribute: str, value: str) -> str:
    """One `type=value` of an RDN, as Java prints it."""
    keyword = _KEYWORDS.get(attribute)
    if keyword is not None:
        return f"{keyword}={escape_value(value)}"
    oid, tag = _oid_of(attribute)
    return f"{oid}={_der_hex(tag, value)}"


def rfc2253_name(subject: Sequence[Sequence[tuple[str, str]]]) -> str:
    """A subject as getpeercert() gives it (RDNs, each a tuple of (attribute, value), the least
    specific first as the certificate holds them) in Java's RFC 2253 form: RDNs reversed,
    multi-valued ones joined by `+`."""
    return ",".join("+".join(format_attribute(a, v) for a, v in rdn) for rdn in reversed(subject))


def distinguished_name(peercert: Mapping[str, Any]) -> str:
    """The subject DN of the dict `ssl.SSLSocket.getpeercert()` returns."""
    return rfc2253_name(peercert.get("subject", ()))


def peer_principal(peercert: Mapping[str, Any] | None, mapper: SslPrincipalMapper) -> KafkaPrincipal:
    """The principal of a TLS peer, as Kafka's DefaultKafkaPrincipalBuilder: ANONYMOUS without a
    verified certificate (getpeercert() gives None or {}), else `User:<mapped name>`.
    NoMatchingRule when no rule maps the name."""
    # A certificate with an empty subject would be `User:` in Kafka, a principal no ACL can name
    # and our parser refuses; ANONYMOUS says the same thing without the broken name.
    if not peercert or not peercert.get("subject"):
        return ANONYMOUS
    return KafkaPrincipal.user(mapper.name(distinguished_name(peercert)))
