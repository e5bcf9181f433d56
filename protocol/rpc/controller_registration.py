"""ControllerRegistration (apiKey 70, v0, KIP-919): a controller announces itself to the active one.

Every voter registers, so the active controller knows each one's endpoints, supported features and
whether it is ready for a ZooKeeper migration (ZkMigrationReady): the migration waits for all of
them. The active controller writes what it hears as a RegisterControllerRecord.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from protocol.rpc.broker_registration import BrokerRegistrationRequest
from protocol.rpc.message import RpcMessage, versions
from protocol.rpc.spec import ApiSpec
from protocol.rpc.types import MAX_LISTENERS, Int16, Int32, NodeId, Uuid
from protocol.uuid import Uuid as _Uuid

# The same fields as a broker's registration carries, under the same names.
Listener = BrokerRegistrationRequest.Listener
Feature = BrokerRegistrationRequest.Feature


class ControllerRegistrationRequest(RpcMessage):
    ControllerId: NodeId = 0
    IncarnationId: Uuid = _Uuid.ZERO
    ZkMigrationReady: bool = False
    Listeners: Annotated[list[Listener], Field(max_length=MAX_LISTENERS)] = Field(default_factory=list)
    Features: Annotated[list[Feature], Field(max_length=100)] = Field(default_factory=list)


class ControllerRegistrationResponse(RpcMessage):
    ThrottleTimeMs: Int32 = 0
    ErrorCode: Int16 = 0
    ErrorMessage: Annotated[str | None, versions("0+", nullable="0+")] = None


SPEC = ApiSpec(
    name="ControllerRegistration",
    api_key=70,
    min_version=0,
    max_version=0,
    request_model=ControllerRegistrationRequest,
    response_model=ControllerRegistrationResponse,
)
