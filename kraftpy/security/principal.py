"""KafkaPrincipal: `User:alice`, as Kafka names whoever is on the other end of a connection."""

from __future__ import annotations

from dataclasses import dataclass

from protocol.transport.context import ANONYMOUS_PRINCIPAL

USER_TYPE = "User"


@dataclass(frozen=True, order=True)
class KafkaPrincipal:
    principal_type: str
    name: str

    def __str__(self) -> str:
        return f"{self.principal_type}:{self.name}"

    @classmethod
    def parse(cls, text: str) -> KafkaPrincipal:
        """`Type:name` (the name may hold colons); ValueError naming the text otherwise."""
        kind, sep, name = text.partition(":")
        if not sep or not kind or not name:
            raise ValueError(f"principal {text!r} is not of the form Type:name (e.g. User:alice)")
        return cls(kind, name)

    @classmethod
    def user(cls, name: str) -> KafkaPrincipal:
        return cls(USER_TYPE, name)


ANONYMOUS = KafkaPrincipal.parse(ANONYMOUS_PRINCIPAL)
"""Kafka's principal for a PLAINTEXT connection, or an SSL one whose client sent no certificate."""

WILDCARD = KafkaPrincipal(USER_TYPE, "*")
"""The ACL principal that matches every user."""
