"""AlterUserScramCredentials (apiKey 51, v0, KIP-554): SCRAM credentials to delete and to upsert.

The client salts and hashes the password itself (SaltedPassword = Hi(password, Salt, Iterations));
the controller derives StoredKey and ServerKey from it, so the password never travels.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from protocol.errors import Errors
from protocol.rpc._bytes_field import Bytes, BytesWireMixin
from protocol.rpc.message import RpcMessage, versions
from protocol.rpc.spec import ApiSpec
from protocol.rpc.types import Int8, Int16, Int32


class AlterUserScramCredentialsRequest(RpcMessage):
    class ScramCredentialDeletion(RpcMessage):
        Name: str = ""
        Mechanism: Int8 = 0

    class ScramCredentialUpsertion(BytesWireMixin):
        Name: str = ""
        Mechanism: Int8 = 0
        Iterations: Int32 = 0
        Salt: Bytes = b""
        SaltedPassword: Bytes = b""

        def __repr_args__(self):  # type: ignore[no-untyped-def]
            # A salted password is as good as the password to anyone who can replay it.
            for name, value in super().__repr_args__():
                yield name, ("[hidden]" if name in ("Salt", "SaltedPassword") else value)

    Deletions: list[ScramCredentialDeletion] = Field(default_factory=list)
    Upsertions: list[ScramCredentialUpsertion] = Field(default_factory=list)


class AlterUserScramCredentialsResponse(RpcMessage):
    class AlterUserScramCredentialsResult(RpcMessage):
        User: str = ""
        ErrorCode: Int16 = 0
        ErrorMessage: Annotated[str | None, versions("0+", nullable="0+")] = None

    ThrottleTimeMs: Int32 = 0
    Results: list[AlterUserScramCredentialsResult] = Field(default_factory=list)


def refuse_all(
    req: AlterUserScramCredentialsRequest, code: Errors, message: str | None = None
) -> AlterUserScramCredentialsResponse:
    """Every user the request names answered with `code`, once each, in the order first named
    (Kafka's AlterUserScramCredentialsRequest.getErrorResponse)."""
    R = AlterUserScramCredentialsResponse
    users = dict.fromkeys(a.Name for a in (*req.Deletions, *req.Upsertions))
    return R(
        Results=[
            R.AlterUserScramCredentialsResult(User=u, ErrorCode=int(code), ErrorMessage=message)
            for u in users
        ]
    )


def _error_response(spec: ApiSpec, code: Errors) -> RpcMessage:
    # No top-level ErrorCode; without the request there are no users to answer one by one.
    return AlterUserScramCredentialsResponse()


SPEC = ApiSpec(
    name="AlterUserScramCredentials",
    api_key=51,
    min_version=0,
    max_version=0,
    request_model=AlterUserScramCredentialsRequest,
    response_model=AlterUserScramCredentialsResponse,
    error_response_factory=_error_response,
    flexible_versions="0+",
)
