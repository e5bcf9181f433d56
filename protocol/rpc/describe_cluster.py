"""DescribeCluster (apiKey 60, v0-1): the cluster id, the controller and the live brokers."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from protocol.rpc.message import RpcMessage, versions
from protocol.rpc.spec import ApiSpec
from protocol.rpc.types import Int8, Int16, Int32

AUTHORIZED_OPERATIONS_OMITTED = -(2**31)
ENDPOINT_TYPE_BROKER = 1
ENDPOINT_TYPE_CONTROLLER = 2


class DescribeClusterRequest(RpcMessage):
    IncludeClusterAuthorizedOperations: bool = False
    EndpointType: Annotated[Int8, versions("1+")] = ENDPOINT_TYPE_BROKER


class DescribeClusterResponse(RpcMessage):
    class DescribeClusterBroker(RpcMessage):
        BrokerId: Int32 = 0
        Host: str = ""
        Port: Int32 = 0
        Rack: Annotated[str | None, versions("0+", nullable="0+")] = None

    ThrottleTimeMs: Int32 = 0
    ErrorCode: Int16 = 0
    ErrorMessage: Annotated[str | None, versions("0+", nullable="0+")] = None
    EndpointType: Annotated[Int8, versions("1+")] = ENDPOINT_TYPE_BROKER
    ClusterId: str = ""
    ControllerId: Int32 = -1
    Brokers: list[DescribeClusterBroker] = Field(default_factory=list)
    ClusterAuthorizedOperations: Int32 = AUTHORIZED_OPERATIONS_OMITTED


SPEC = ApiSpec(
    name="DescribeCluster",
    api_key=60,
    min_version=0,
    max_version=1,
    request_model=DescribeClusterRequest,
    response_model=DescribeClusterResponse,
    flexible_versions="0+",
)
