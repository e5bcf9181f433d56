"""ACLs and SCRAM credentials on a broker, as KRaft brokers serve them: DescribeAcls and
DescribeUserScramCredentials from the broker's own metadata image (its copy of the ACL and
credential records), CreateAcls, DeleteAcls and AlterUserScramCredentials forwarded to the active
controller, which writes them as records that reach every broker's image.

One method per API, each the unit an authorizer guards (kraftpy.security.guard). A forwarded request
the controller cannot be reached for is answered item by item with the error, as Kafka's
getErrorResponse for these requests does, so a client learns the fate of every creation, filter and
user it sent.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from kraftpy.image import MetadataImage
from kraftpy.security.describe import describe_acls, describe_user_scram_credentials
from protocol.errors import KafkaError
from protocol.rpc.alter_user_scram_credentials import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
)
from protocol.rpc.alter_user_scram_credentials import refuse_all as refuse_users
from protocol.rpc.create_acls import CreateAclsRequest, CreateAclsResponse
from protocol.rpc.create_acls import refuse_all as refuse_creations
from protocol.rpc.delete_acls import DeleteAclsRequest, DeleteAclsResponse
from protocol.rpc.delete_acls import refuse_all as refuse_filters
from protocol.rpc.describe_acls import DescribeAclsRequest, DescribeAclsResponse
from protocol.rpc.describe_user_scram_credentials import (
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
)

FORWARD_TIMEOUT_S = 30.0

Handler = Callable[[Any, int], Awaitable[Any]]


class ControllerCaller(Protocol):
    async def call(self, api: str, request: Any, version: int | None = None, **kw: Any) -> Any: ...


class SecurityApis:
    def __init__(self, image: Callable[[], MetadataImage], controller: ControllerCaller) -> None:
        self._image = image
        self._controller = controller

    def handlers(self) -> dict[str, Handler]:
        return {
            "CreateAcls": self.create_acls,
            "DeleteAcls": self.delete_acls,
            "DescribeAcls": self.describe_acls,
            "AlterUserScramCredentials": self.alter_user_scram_credentials,
            "DescribeUserScramCredentials": self.describe_user_scram_credentials,
        }

    # ---- read from the image ----------------------------------------------------------------------

    async def describe_acls(self, req: DescribeAclsRequest, version: int) -> DescribeAclsResponse:
        return describe_acls(self._image().acls.records.values(), req, version)

    async def describe_user_scram_credentials(
        self, req: DescribeUserScramCredentialsRequest, version: int
    ) -> DescribeUserScramCredentialsResponse:
        return describe_user_scram_credentials(self._image().scram.records.values(), req)

    # ---- forwarded to the controller --------------------------------------------------------------

    async def create_acls(self, req: CreateAclsRequest, version: int) -> CreateAclsResponse:
        try:
            resp: CreateAclsResponse = await self._forward("CreateAcls", req, version)
        except KafkaError as e:
            return refuse_creations(req, e.code, e.message)
        return resp

    async def delete_acls(self, req: DeleteAclsRequest, version: int) -> DeleteAclsResponse:
        try:
            resp: DeleteAclsResponse = await self._forward("DeleteAcls", req, version)
        except KafkaError as e:
            return refuse_filters(req, e.code, e.message)
        return resp

    async def alter_user_scram_credentials(
        self, req: AlterUserScramCredentialsRequest, version: int
    ) -> AlterUserScramCredentialsResponse:
        try:
            resp: AlterUserScramCredentialsResponse = await self._forward(
                "AlterUserScramCredentials", req, version
            )
        except KafkaError as e:
            return refuse_users(req, e.code, e.message)
        return resp

    async def _forward(self, api: str, req: Any, version: int) -> Any:
        return await self._controller.call(api, req, version, timeout=FORWARD_TIMEOUT_S)
