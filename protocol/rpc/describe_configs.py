"""DescribeConfigs (apiKey 32, v1-4): a topic's or a broker's configs, with where each value comes from.

Kafka 4 serves v1 and up. ConfigSource and ConfigType carry Kafka's numbers (the constants below).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from protocol.rpc.message import RpcMessage, versions
from protocol.rpc.spec import ApiSpec
from protocol.rpc.types import Int8, Int16, Int32

RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4

SOURCE_DYNAMIC_TOPIC_CONFIG = 1
SOURCE_STATIC_BROKER_CONFIG = 4
SOURCE_DEFAULT_CONFIG = 5

TYPE_BOOLEAN = 1
TYPE_STRING = 2
TYPE_INT = 3
TYPE_LONG = 5
TYPE_DOUBLE = 6
TYPE_LIST = 7


class DescribeConfigsRequest(RpcMessage):
    class DescribeConfigsResource(RpcMessage):
        ResourceType: Int8 = 0
        ResourceName: str = ""
        ConfigurationKeys: Annotated[list[str] | None, versions("0+", nullable="0+")] = None

    Resources: list[DescribeConfigsResource] = Field(default_factory=list)
    IncludeSynonyms: Annotated[bool, versions("1+")] = False
    IncludeDocumentation: Annotated[bool, versions("3+")] = False


class DescribeConfigsResponse(RpcMessage):
    class DescribeConfigsSynonym(RpcMessage):
        Name: Annotated[str, versions("1+")] = ""
        Value: Annotated[str | None, versions("1+", nullable="0+")] = None
        Source: Annotated[Int8, versions("1+")] = 0

    class DescribeConfigsResourceResult(RpcMessage):
        Name: str = ""
        Value: Annotated[str | None, versions("0+", nullable="0+")] = None
        ReadOnly: bool = False
        ConfigSource: Annotated[Int8, versions("1+", ignorable=True)] = -1
        IsDefault: Annotated[bool, versions("0", ignorable=True)] = False
        IsSensitive: bool = False
        Synonyms: Annotated[
            list[DescribeConfigsResponse.DescribeConfigsSynonym], versions("1+", ignorable=True)
        ] = Field(default_factory=list)
        ConfigType: Annotated[Int8, versions("3+", ignorable=True)] = 0
        Documentation: Annotated[str | None, versions("3+", nullable="0+", ignorable=True)] = None

    class DescribeConfigsResult(RpcMessage):
        ErrorCode: Int16 = 0
        ErrorMessage: Annotated[str | None, versions("0+", nullable="0+")] = None
        ResourceType: Int8 = 0
        ResourceName: str = ""
        Configs: list[DescribeConfigsResponse.DescribeConfigsResourceResult] = Field(default_factory=list)

    ThrottleTimeMs: Int32 = 0
    Results: list[DescribeConfigsResult] = Field(default_factory=list)


for _model in (
    DescribeConfigsResponse.DescribeConfigsResourceResult,
    DescribeConfigsResponse.DescribeConfigsResult,
    DescribeConfigsResponse,
):
    _model.model_rebuild()


def _error_response(spec: ApiSpec, code: object) -> RpcMessage:
    return DescribeConfigsResponse()


SPEC = ApiSpec(
    name="DescribeConfigs",
    api_key=32,
    min_version=1,
    max_version=4,
    request_model=DescribeConfigsRequest,
    response_model=DescribeConfigsResponse,
    error_response_factory=_error_response,  # type: ignore[arg-type]
    flexible_versions="4+",
)
