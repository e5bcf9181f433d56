"""A broker's `sasl.jaas.config` value, as Kafka's JaasConfig reads it, and the PLAIN users in it.

A broker takes its SASL/PLAIN users from `listener.name.<listener>.plain.sasl.jaas.config` (there is
no unprefixed broker-side form, and no JAAS file here):

    org.apache.kafka.common.security.plain.PlainLoginModule required
        username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";

One login module, its control flag, then `key=value` options (a value quoted or a bare word), and a
closing `;`. Each `user_<name>` option is a user and its password (Kafka's
PlainServerCallbackHandler); `username`/`password` are what the broker itself would send as a
client, and are not used here.
"""

from __future__ import annotations

import hmac
import re
from collections.abc import Mapping
from dataclasses import dataclass

PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
CONTROL_FLAGS = ("required", "requisite", "sufficient", "optional")


@dataclass(frozen=True)
class JaasEntry:
    login_module: str
    control_flag: str
    options: Mapping[str, str]


_TOKEN = re.compile(r"""\s*(?:"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)'|([=;])|([^\s=;"']+))""", re.S)
_ESCAPE = re.compile(r"\\(.)", re.S)


def _tokens(text: str) -> list[tuple[str, str]]:
    """(kind, text): "v" a quoted value (escapes undone), "=" or ";", or "w" a bare word."""
    out: list[tuple[str, str]] = []
    pos, end = 0, len(text.rstrip())
    while pos < end:
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise ValueError(f"JAAS config cannot be read at character {pos + 1}: an unclosed quote?")
        quoted = m.group(1) if m.group(1) is not None else m.group(2)
        if quoted is not None:
            out.append(("v", _ESCAPE.sub(r"\1", quoted)))
        elif m.group(3) is not None:
            out.append((m.group(3), m.group(3)))
        else:
            out.append(("w", m.group(4)))
        pos = m.end()
    return out


def parse_jaas_config(text: str) -> JaasEntry:
    """The one login module of a `sasl.jaas.config` value; ValueError saying what is wrong."""
    tokens = _tokens(text)
    if not tokens:
        raise ValueError("JAAS config is empty")
    modules = sum(1 for kind, _ in tokens if kind == ";")
    if modules > 1:
        raise ValueError(f"JAAS config property contains {modules} login modules, should be 1 module")
    if tokens[-1][0] != ";":
        raise ValueError("JAAS config must end with ';'")
    if len(tokens) < 3 or tokens[0][0] != "w" or tokens[1][0] != "w":
        raise ValueError("JAAS config needs a login module and its control flag")
    module, flag = tokens[0][1], tokens[1][1]
    if flag.lower() not in CONTROL_FLAGS:
        raise ValueError(f"Invalid control flag {flag!r} in JAAS config: one of {', '.join(CONTROL_FLAGS)}")
    rest = tokens[2:-1]
    options: dict[str, str] = {}
    for i in range(0, len(rest), 3):
        key, eq, value = (rest[i : i + 3] + [("", "")] * 3)[:3]
        if key[0] != "w":
            raise ValueError(f"JAAS config: an option name was expected, not {key[1]!r}")
        if eq[0] != "=" or value[0] not in ("w", "v"):
            raise ValueError(f"Value not specified for key {key[1]!r} in JAAS config")
        options[key[1]] = value[1]
    return JaasEntry(module, flag.lower(), options)


@dataclass(frozen=True)
class PlainUsers:
    """The `user_<name>` options of a PlainLoginModule entry."""

    passwords: Mapping[str, str]

    @classmethod
    def from_jaas(cls, entry: JaasEntry) -> PlainUsers:
        if entry.login_module != PLAIN_LOGIN_MODULE:
            raise ValueError(
                f"SASL/PLAIN takes its users from {PLAIN_LOGIN_MODULE}, not {entry.login_module}"
            )
        return cls({k[len("user_") :]: v for k, v in entry.options.items() if k.startswith("user_")})

    def check(self, user: str, password: str) -> bool:
        expected = self.passwords.get(user)
        # Constant time over the password, as Kafka's Utils.isEqualConstantTime.
        return expected is not None and hmac.compare_digest(expected.encode(), password.encode())
