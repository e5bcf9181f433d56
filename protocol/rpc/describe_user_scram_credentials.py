"""DescribeUserScramCredentials (apiKey 50, v0, KIP-554): each user's SCRAM mechanisms and iterations.

Users null or empty: every user with a credential. Salts and keys never leave the cluster.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from protocol.rpc.message import RpcMessage, versions
from protocol.rpc.spec import ApiSpec
from protocol.rpc.types import Int8, Int16, Int32


class DescribeUserScramCredentialsRequest(RpcMessage):
    class UserName(RpcMessage):
        Name: str = ""

    Users: Annotated[list[UserName] | None, versions("0+", nullable="0+")] = Field(default_factory=list)


class DescribeUserScramCredentialsResponse(RpcMessage):
    class CredentialInfo(RpcMessage):
        Mechanism: Int8 = 0
        Iterations: Int32 = 0

    class DescribeUserScramCredentialsResult(RpcMessage):
        User: str = ""
        ErrorCode: Int16 = 0
        ErrorMessage: Annotated[str | None, versions("0+", nullable="0+")] = None
        CredentialInfos: list[DescribeUserScramCredentialsResponse.CredentialInfo] = Field(
            default_factory=list
        )

    ThrottleTimeMs: Int32 = 0
    ErrorCode: Int16 = 0
    ErrorMessage: Annotated[str | None, versions("0+", nullable="0+")] = None
    Results: list[DescribeUserScramCredentialsResult] = Field(default_factory=list)


for _model in (
    DescribeUserScramCredentialsResponse.DescribeUserScramCredentialsResult,
    DescribeUserScramCredentialsResponse,
):
    _model.model_rebuild()


SPEC = ApiSpec(
    name="DescribeUserScramCredentials",
    api_key=50,
    min_version=0,
    max_version=0,
    request_model=DescribeUserScramCredentialsRequest,
    response_model=DescribeUserScramCredentialsResponse,
    flexible_versions="0+",
)
