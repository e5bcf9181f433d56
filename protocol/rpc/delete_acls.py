"""DeleteAcls (apiKey 31, v0-3): filters, each answered with the ACLs it matched (and removed)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from protocol.errors import Errors
from protocol.rpc.message import RpcMessage, versions
from protocol.rpc.spec import ApiSpec
from protocol.rpc.types import Int8, Int16, Int32

PATTERN_TYPE_LITERAL = 3


class DeleteAclsRequest(RpcMessage):
    class DeleteAclsFilter(RpcMessage):
        ResourceTypeFilter: Int8 = 0
        ResourceNameFilter: Annotated[str | None, versions("0+", nullable="0+")] = None
        PatternTypeFilter: Annotated[Int8, versions("1+")] = PATTERN_TYPE_LITERAL
        PrincipalFilter: Annotated[str | None, versions("0+", nullable="0+")] = None
        HostFilter: Annotated[str | None, versions("0+", nullable="0+")] = None
        Operation: Int8 = 0
        PermissionType: Int8 = 0

    Filters: list[DeleteAclsFilter] = Field(default_factory=list)


class DeleteAclsResponse(RpcMessage):
    class DeleteAclsMatchingAcl(RpcMessage):
        ErrorCode: Int16 = 0
        ErrorMessage: Annotated[str | None, versions("0+", nullable="0+")] = None
        ResourceType: Int8 = 0
        ResourceName: str = ""
        PatternType: Annotated[Int8, versions("1+")] = PATTERN_TYPE_LITERAL
        Principal: str = ""
        Host: str = ""
        Operation: Int8 = 0
        PermissionType: Int8 = 0

    class DeleteAclsFilterResult(RpcMessage):
        ErrorCode: Int16 = 0
        ErrorMessage: Annotated[str | None, versions("0+", nullable="0+")] = None
        MatchingAcls: list[DeleteAclsResponse.DeleteAclsMatchingAcl] = Field(default_factory=list)

    ThrottleTimeMs: Int32 = 0
    FilterResults: list[DeleteAclsFilterResult] = Field(default_factory=list)


for _model in (DeleteAclsResponse.DeleteAclsFilterResult, DeleteAclsResponse):
    _model.model_rebuild()


def refuse_all(req: DeleteAclsRequest, code: Errors, message: str | None = None) -> DeleteAclsResponse:
    """Every filter answered with `code` (Kafka's DeleteAclsRequest.getErrorResponse)."""
    R = DeleteAclsResponse
    return R(
        FilterResults=[
            R.DeleteAclsFilterResult(ErrorCode=int(code), ErrorMessage=message) for _ in req.Filters
        ]
    )


def _error_response(spec: ApiSpec, code: Errors) -> RpcMessage:
    # No top-level ErrorCode; without the request there are no filters to answer one by one.
    return DeleteAclsResponse()


SPEC = ApiSpec(
    name="DeleteAcls",
    api_key=31,
    min_version=0,
    max_version=3,
    request_model=DeleteAclsRequest,
    response_model=DeleteAclsResponse,
    error_response_factory=_error_response,
    flexible_versions="2+",
)
