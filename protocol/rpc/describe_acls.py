"""DescribeAcls (apiKey 29, v0-3): the ACLs one filter matches, grouped by resource pattern.

A null ResourceNameFilter, PrincipalFilter or HostFilter matches any; ANY (1) as a type, operation
or permission matches any; MATCH (2) as a pattern type also matches the patterns that would apply to
the named resource (kraftpy.security.acl.AclBindingFilter).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from protocol.rpc.message import RpcMessage, versions
from protocol.rpc.spec import ApiSpec
from protocol.rpc.types import Int8, Int16, Int32

PATTERN_TYPE_LITERAL = 3


class DescribeAclsRequest(RpcMessage):
    ResourceTypeFilter: Int8 = 0
    ResourceNameFilter: Annotated[str | None, versions("0+", nullable="0+")] = None
    PatternTypeFilter: Annotated[Int8, versions("1+")] = PATTERN_TYPE_LITERAL
    PrincipalFilter: Annotated[str | None, versions("0+", nullable="0+")] = None
    HostFilter: Annotated[str | None, versions("0+", nullable="0+")] = None
    Operation: Int8 = 0
    PermissionType: Int8 = 0


class DescribeAclsResponse(RpcMessage):
    class AclDescription(RpcMessage):
        Principal: str = ""
        Host: str = ""
        Operation: Int8 = 0
        PermissionType: Int8 = 0

    class DescribeAclsResource(RpcMessage):
        ResourceType: Int8 = 0
        ResourceName: str = ""
        PatternType: Annotated[Int8, versions("1+")] = PATTERN_TYPE_LITERAL
        Acls: list[DescribeAclsResponse.AclDescription] = Field(default_factory=list)

    ThrottleTimeMs: Int32 = 0
    ErrorCode: Int16 = 0
    ErrorMessage: Annotated[str | None, versions("0+", nullable="0+")] = None
    Resources: list[DescribeAclsResource] = Field(default_factory=list)


for _model in (DescribeAclsResponse.DescribeAclsResource, DescribeAclsResponse):
    _model.model_rebuild()


SPEC = ApiSpec(
    name="DescribeAcls",
    api_key=29,
    min_version=0,
    max_version=3,
    request_model=DescribeAclsRequest,
    response_model=DescribeAclsResponse,
    flexible_versions="2+",
)
