"""CreateAcls (apiKey 30, v0-3): ACL bindings to add, one result per creation in request order.

v0 has no pattern type: its creations are LITERAL. v2 is the first flexible version; v3 lets a
binding name the USER resource type.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from protocol.errors import Errors
from protocol.rpc.message import RpcMessage, versions
from protocol.rpc.spec import ApiSpec
from protocol.rpc.types import Int8, Int16, Int32

PATTERN_TYPE_LITERAL = 3


class CreateAclsRequest(RpcMessage):
    class AclCreation(RpcMessage):
        ResourceType: Int8 = 0
        ResourceName: str = ""
        ResourcePatternType: Annotated[Int8, versions("1+")] = PATTERN_TYPE_LITERAL
        Principal: str = ""
        Host: str = ""
        Operation: Int8 = 0
        PermissionType: Int8 = 0

    Creations: list[AclCreation] = Field(default_factory=list)


class CreateAclsResponse(RpcMessage):
    class AclCreationResult(RpcMessage):
        ErrorCode: Int16 = 0
        ErrorMessage: Annotated[str | None, versions("0+", nullable="0+")] = None

    ThrottleTimeMs: Int32 = 0
    Results: list[AclCreationResult] = Field(default_factory=list)


def refuse_all(req: CreateAclsRequest, code: Errors, message: str | None = None) -> CreateAclsResponse:
    """Every creation answered with `code` (Kafka's CreateAclsRequest.getErrorResponse)."""
    R = CreateAclsResponse
    return R(Results=[R.AclCreationResult(ErrorCode=int(code), ErrorMessage=message) for _ in req.Creations])


def _error_response(spec: ApiSpec, code: Errors) -> RpcMessage:
    # No top-level ErrorCode; without the request there are no creations to answer one by one.
    return CreateAclsResponse()


SPEC = ApiSpec(
    name="CreateAcls",
    api_key=30,
    min_version=0,
    max_version=3,
    request_model=CreateAclsRequest,
    response_model=CreateAclsResponse,
    error_response_factory=_error_response,
    flexible_versions="2+",
)
