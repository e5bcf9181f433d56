"""SCRAM credentials (RFC 5802) as UserScramCredentialRecord stores them: salt, StoredKey, ServerKey
and iterations, derived from a password the way Kafka's ScramFormatter does."""

from __future__ import annotations

import hashlib
import hmac
import os
from dataclasses import dataclass
from typing import Any

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


SCRAM_LEVEL = 11
"""metadata.version 3.5-IV2: the first that holds UserScramCredentialRecord (Kafka refuses lower)."""


def parse_scram_argument(text: str) -> tuple[str, ScramMechanism, ScramCredential]:
    """kafka-storage.sh's `--add-scram 'SCRAM-SHA-256=[name=alice,password=alice-secret]'` (with an
    optional `iterations=`): the user, the mechanism and a fresh credential; ValueError says what is wrong."""
    mech_text, sep, rest = text.partition("=")
    if not sep or not rest.startswith("[") or not rest.endswith("]"):
        raise ValueError(
            f"--add-scram {text!r} is not of the form 'SCRAM-SHA-256=[name=alice,password=secret]'"
        )
    mechanism = ScramMechanism.from_mechanism_name(mech_text)
    fields: dict[str, str] = {}
    for part in rest[1:-1].split(","):
        key, eq, value = part.partition("=")
        if not eq:
            raise ValueError(f"--add-scram {text!r}: {part!r} is not key=value")
        fields[key.strip().lower()] = value.strip().strip('"')
    unknown = sorted(set(fields) - {"name", "password", "iterations"})
    if unknown:
        raise ValueError(
            f"--add-scram {text!r}: unknown key {unknown[0]!r} (known: name, password, iterations)"
        )
    if not fields.get("name"):
        raise ValueError(f"--add-scram {text!r}: no name given")
    if "password" not in fields:
        raise ValueError(f"--add-scram {text!r}: no password given")
    try:
        iterations = int(fields.get("iterations", DEFAULT_ITERATIONS))
    except ValueError:
        raise ValueError(f"--add-scram {text!r}: iterations must be a number") from None
    return fields["name"], mechanism, new_credential(mechanism, fields["password"], iterations)


def credential_record(name: str, mechanism: ScramMechanism, credential: ScramCredential) -> Any:
    """The UserScramCredentialRecord that stores `credential` for `name`."""
    from protocol.metadata_records import UserScramCredentialRecord

    return UserScramCredentialRecord(
        Name=name,
        Mechanism=int(mechanism),
        Salt=credential.salt,
        StoredKey=credential.stored_key,
        ServerKey=credential.server_key,
        Iterations=credential.iterations,
    )
