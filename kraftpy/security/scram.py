"""SCRAM credentials (RFC 5802) as UserScramCredentialRecord stores them: salt, StoredKey, ServerKey
and iterations, derived from a password the way Kafka's ScramFormatter does."""

from __future__ import annotations

import hashlib
import hmac
import os
from dataclasses import dataclass

from kraftpy.security.acl import ScramMechanism

MIN_ITERATIONS = 4096
"""Kafka refuses fewer (ScramMechanism.minIterations)."""
MAX_ITERATIONS = 16384
DEFAULT_ITERATIONS = 4096

_HASH = {ScramMechanism.SCRAM_SHA_256: "sha256", ScramMechanism.SCRAM_SHA_512: "sha512"}


@dataclass(frozen=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


def hash_name(mechanism: ScramMechanism) -> str:
    try:
        return _HASH[mechanism]
    except KeyError:
        raise ValueError(f"unknown SCRAM mechanism {mechanism!r}") from None


def salted_password(mechanism: ScramMechanism, password: str, salt: bytes, iterations: int) -> bytes:
    """Hi(password, salt, i): what AlterUserScramCredentials carries as SaltedPassword."""
    return hashlib.pbkdf2_hmac(hash_name(mechanism), password.encode(), salt, iterations)


def credential_from_salted(
    mechanism: ScramMechanism, salted: bytes, salt: bytes, iterations: int
) -> ScramCredential:
    name = hash_name(mechanism)
    client_key = hmac.digest(salted, b"Client Key", name)
    stored_key = hashlib.new(name, client_key).digest()
    server_key = hmac.digest(salted, b"Server Key", name)
    return ScramCredential(salt, stored_key, server_key, iterations)


def new_credential(
    mechanism: ScramMechanism, password: str, iterations: int = DEFAULT_ITERATIONS, salt: bytes | None = None
) -> ScramCredential:
    if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
        raise ValueError(
            f"iterations must be between {MIN_ITERATIONS} and {MAX_ITERATIONS}, got {iterations}"
        )
    salt = os.urandom(32) if salt is None else salt
    return credential_from_salted(
        mechanism, salted_password(mechanism, password, salt, iterations), salt, iterations
    )
