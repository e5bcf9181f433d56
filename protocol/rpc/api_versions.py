"""ApiVersions (apiKey 18, v0-4): which APIs, at which versions, a listener serves.

A client sends it first on every connection and then speaks, per API, the highest version both
sides know. The Kafka-protocol listener answers it itself from the APIs it serves, so the answer
lists exactly what is implemented there. Its response header is always v0, even at v3+ (Kafka:
a client that does not know the broker cannot yet know whether to expect tagged fields).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from protocol.rpc.message import RpcMessage, versions
from protocol.rpc.spec import ApiSpec
from protocol.rpc.types import Int16, Int32, Int64


class ApiVersionsRequest(RpcMessage):
    ClientSoftwareName: Annotated[str, versions("3+", ignorable=True)] = ""
    ClientSoftwareVersion: Annotated[str, versions("3+", ignorable=True)] = ""


class ApiVersionsResponse(RpcMessage):
    class ApiVersion(RpcMessage):
        ApiKey: Int16 = 0
        MinVersion: Int16 = 0
        MaxVersion: Int16 = 0

    class SupportedFeatureKey(RpcMessage):
        Name: str = ""
        MinVersion: Int16 = 0
        MaxVersion: Int16 = 0

    class FinalizedFeatureKey(RpcMessage):
        Name: str = ""
        MaxVersionLevel: Int16 = 0
        MinVersionLevel: Int16 = 0

    ErrorCode: Int16 = 0
    ApiKeys: list[ApiVersion] = Field(default_factory=list)
    ThrottleTimeMs: Annotated[Int32, versions("1+", ignorable=True)] = 0
    SupportedFeatures: Annotated[
        list[SupportedFeatureKey], versions("3+", tagged="3+", tag=0, ignorable=True)
    ] = Field(default_factory=list)
    FinalizedFeaturesEpoch: Annotated[Int64, versions("3+", tagged="3+", tag=1, ignorable=True)] = -1
    FinalizedFeatures: Annotated[
        list[FinalizedFeatureKey], versions("3+", tagged="3+", tag=2, ignorable=True)
    ] = Field(default_factory=list)
    ZkMigrationReady: Annotated[bool, versions("3+", tagged="3+", tag=3, ignorable=True)] = False


SPEC = ApiSpec(
    name="ApiVersions",
    api_key=18,
    min_version=0,
    max_version=4,
    request_model=ApiVersionsRequest,
    response_model=ApiVersionsResponse,
    flexible_versions="3+",
)
