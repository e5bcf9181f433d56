"""DescribeGroups (apiKey 15, v0-5): the state, protocol and members of classic consumer groups.

Each group has its own error; v6's per-group error message is not served.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from protocol.errors import Errors
from protocol.rpc._bytes_field import Bytes, BytesWireMixin
from protocol.rpc.message import RpcMessage, versions
from protocol.rpc.spec import ApiSpec
from protocol.rpc.types import Int16, Int32

AUTHORIZED_OPERATIONS_OMITTED = -(2**31)


class DescribeGroupsRequest(RpcMessage):
    Groups: list[str] = Field(default_factory=list)
    IncludeAuthorizedOperations: Annotated[bool, versions("3+")] = False


class DescribeGroupsResponse(RpcMessage):
    class DescribedGroupMember(BytesWireMixin):
        MemberId: str = ""
        GroupInstanceId: Annotated[str | None, versions("4+", nullable="4+", ignorable=True)] = None
        ClientId: str = ""
        ClientHost: str = ""
        MemberMetadata: Bytes = b""
        MemberAssignment: Bytes = b""

    class DescribedGroup(RpcMessage):
        ErrorCode: Int16 = 0
        GroupId: str = ""
        GroupState: str = ""
        ProtocolType: str = ""
        ProtocolData: str = ""
        Members: list[DescribeGroupsResponse.DescribedGroupMember] = Field(default_factory=list)
        AuthorizedOperations: Annotated[Int32, versions("3+")] = AUTHORIZED_OPERATIONS_OMITTED

    ThrottleTimeMs: Annotated[Int32, versions("1+", ignorable=True)] = 0
    Groups: list[DescribedGroup] = Field(default_factory=list)


for _model in (DescribeGroupsResponse.DescribedGroup, DescribeGroupsResponse):
    _model.model_rebuild()


def _error_response(spec: ApiSpec, code: Errors) -> RpcMessage:
    # No top-level ErrorCode in this response; without the request there are no groups to name.
    return DescribeGroupsResponse()


SPEC = ApiSpec(
    name="DescribeGroups",
    api_key=15,
    min_version=0,
    max_version=5,
    request_model=DescribeGroupsRequest,
    response_model=DescribeGroupsResponse,
    error_response_factory=_error_response,
    flexible_versions="5+",
)
