"""A TLS peer's certificate subject printed as Java's X500Principal.getName() prints it (RFC 2253,
most specific RDN first): the name Kafka's principals start from, shared by every listener."""

from __future__ import annotations

import re
import ssl
from collections.abc import Mapping, Sequence
from typing import Any

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
