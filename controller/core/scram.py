"""SCRAM credentials as metadata records (Kafka's ScramControlManager, KIP-554): an upsertion writes a
UserScramCredentialRecord holding the salt, StoredKey and ServerKey derived from the client's salted
password; a deletion writes a RemoveUserScramCredentialRecord.

Results come one per user, in the order the request first names them. A user any of whose
alterations is refused gets that error and none of its records, so a user never ends up with half
of what one request asked for; other users' alterations go ahead. All records go in one batch.

One deliberate difference: Kafka's controller (ScramControlManager.alterCredentials) refuses a
user named twice in one request even for two different mechanisms (DUPLICATE_RESOURCE); here only
the same user *and* mechanism twice is a duplicate, as ZooKeeper-based brokers had it
(ZkAdminManager), so one request can give a user both SCRAM-SHA-256 and SCRAM-SHA-512.
"""

from __future__ import annotations

from typing import Any

from controller.core.metadata_version import is_scram_supported
from controller.core.result import ControllerResult
from kraftpy.security.acl import ScramMechanism
from kraftpy.security.describe import describe_user_scram_credentials as _describe
from kraftpy.security.scram import MAX_ITERATIONS, MIN_ITERATIONS, credential_from_salted
from protocol import metadata_records as mr
from protocol.errors import Errors, KafkaError
from protocol.framing import ApiMessageAndVersion
from protocol.rpc.alter_user_scram_credentials import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
)
from protocol.rpc.describe_user_scram_credentials import (
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
)

ScramKey = tuple[str, int]
"""(user name, mechanism code), as the image keys its credentials."""


class ScramControlManager:
    def __init__(self) -> None:
        self.records: dict[ScramKey, Any] = {}
        """(user, mechanism) -> its UserScramCredentialRecord."""

    def replay_credential(self, record: Any) -> None:
        self.records[(record.Name, record.Mechanism)] = record

    def replay_remove_credential(self, record: Any) -> None:
        if self.records.pop((record.Name, record.Mechanism), None) is None:
            raise ValueError(
                f"cannot replay RemoveUserScramCredentialRecord: user {record.Name!r} has no "
                f"credential for mechanism {record.Mechanism}"
            )

    def snapshot(self) -> dict[ScramKey, Any]:
        return dict(self.records)

    def restore(self, snapshot: dict[ScramKey, Any]) -> None:
        self.records = snapshot

    def state(self) -> dict[ScramKey, tuple[bytes, bytes, bytes, int]]:
        return {
            k: (bytes(r.Salt), bytes(r.StoredKey), bytes(r.ServerKey), r.Iterations)
            for k, r in self.records.items()
        }


def _check_user_and_mechanism(name: str, mechanism: int) -> ScramMechanism:
    if not name:
        raise KafkaError(Errors.UNACCEPTABLE_CREDENTIAL, "Username must not be empty")
    try:
        m = ScramMechanism(mechanism)
    except ValueError:
        m = ScramMechanism.UNKNOWN
    if m is ScramMechanism.UNKNOWN:
        raise KafkaError(Errors.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")
    return m


def _deletion_record(
    scram: ScramControlManager, d: AlterUserScramCredentialsRequest.ScramCredentialDeletion
) -> ApiMessageAndVersion:
    _check_user_and_mechanism(d.Name, d.Mechanism)
    if (d.Name, d.Mechanism) not in scram.records:
        raise KafkaError(Errors.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist")
    return ApiMessageAndVersion(mr.RemoveUserScramCredentialRecord(Name=d.Name, Mechanism=d.Mechanism), 0)


def _upsertion_record(u: AlterUserScramCredentialsRequest.ScramCredentialUpsertion) -> ApiMessageAndVersion:
    mechanism = _check_user_and_mechanism(u.Name, u.Mechanism)
    if u.Iterations < MIN_ITERATIONS:
        raise KafkaError(Errors.UNACCEPTABLE_CREDENTIAL, "Too few iterations")
    if u.Iterations > MAX_ITERATIONS:
        raise KafkaError(Errors.UNACCEPTABLE_CREDENTIAL, "Too many iterations")
    if not u.Salt or not u.SaltedPassword:
        # Kafka takes these as given; an empty salted password would key every login to nothing.
        raise KafkaError(Errors.UNACCEPTABLE_CREDENTIAL, "Salt and SaltedPassword must not be empty")
    cred = credential_from_salted(mechanism, bytes(u.SaltedPassword), bytes(u.Salt), u.Iterations)
    return ApiMessageAndVersion(
        mr.UserScramCredentialRecord(
            Name=u.Name,
            Mechanism=u.Mechanism,
            Salt=cred.salt,
            StoredKey=cred.stored_key,
            ServerKey=cred.server_key,
            Iterations=cred.iterations,
        ),
        0,
    )


def alter_user_scram_credentials(
    scram: ScramControlManager,
    metadata_version: int,
    req: AlterUserScramCredentialsRequest,
    version: int,
) -> ControllerResult[AlterUserScramCredentialsResponse]:
    R = AlterUserScramCredentialsResponse
    pending: dict[str, list[ApiMessageAndVersion]] = {}  # user -> records, in first-named order
    errors: dict[str, KafkaError] = {}
    seen: set[ScramKey] = set()
    alterations: list[Any] = [*req.Deletions, *req.Upsertions]  # deletions first, as Kafka reads them
    for a in alterations:
        user = a.Name
        pending.setdefault(user, [])
        if user in errors:
            continue
        try:
            if (user, a.Mechanism) in seen:
                raise KafkaError(
                    Errors.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request"
                )
            seen.add((user, a.Mechanism))
            if not is_scram_supported(metadata_version):
                raise KafkaError(
                    Errors.UNSUPPORTED_VERSION, "The current metadata.version does not support SCRAM"
                )
            if isinstance(a, AlterUserScramCredentialsRequest.ScramCredentialUpsertion):
                pending[user].append(_upsertion_record(a))
            else:
                pending[user].append(_deletion_record(scram, a))
        except KafkaError as e:
            errors[user] = e
    records: list[ApiMessageAndVersion] = []
    results: list[AlterUserScramCredentialsResponse.AlterUserScramCredentialsResult] = []
    for user, user_records in pending.items():
        err = errors.get(user)
        if err is not None:
            results.append(
                R.AlterUserScramCredentialsResult(
                    User=user, ErrorCode=int(err.code), ErrorMessage=err.message
                )
            )
            continue
        records += user_records
        results.append(R.AlterUserScramCredentialsResult(User=user))
    return ControllerResult.atomic_of(records, R(Results=results))


def describe_user_scram_credentials(
    scram: ScramControlManager, req: DescribeUserScramCredentialsRequest
) -> DescribeUserScramCredentialsResponse:
    return _describe(scram.records.values(), req)
