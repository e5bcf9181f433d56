"""BrokerRegistration (apiKey 62, v0-4): a broker announces itself, its listeners, features and log dirs.

v1 adds IsMigratingZkBroker, v2 LogDirs (KIP-858), v3 PreviousBrokerEpoch (KIP-966); v4 only
changes which features are sent (KAFKA-17011).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from protocol.rpc.message import RpcMessage, versions
from protocol.rpc.spec import ApiSpec
from protocol.rpc.types import MAX_LISTENERS, MAX_LOG_DIRS, Int16, Int32, Int64, NodeId, UInt16, Uuid
from protocol.uuid import Uuid as _Uuid


class BrokerRegistrationRequest(RpcMessage):
    class Listener(RpcMessage):
        Name: str = ""
        Host: str = ""
        Port: UInt16 = 0
        SecurityProtocol: Int16 = 0

    class Feature(RpcMessage):
        Name: str = ""
        MinSupportedVersion: Int16 = 0
        MaxSupportedVersion: Int16 = 0

    BrokerId: NodeId = 0
    ClusterId: str = ""
    IncarnationId: Uuid = _Uuid.ZERO
    Listeners: Annotated[list[Listener], Field(max_length=MAX_LISTENERS)] = Field(default_factory=list)
    Features: list[Feature] = Field(default_factory=list)
    Rack: Annotated[str | None, versions("0+", nullable="0+")] = ""
    IsMigratingZkBroker: Annotated[bool, versions("1+")] = False
    # IDs of the broker's online log directories, sorted as Uuid.compareTo sorts them.
    LogDirs: Annotated[list[Uuid], versions("2+", ignorable=True), Field(max_length=MAX_LOG_DIRS)] = Field(
        default_factory=list
    )
    PreviousBrokerEpoch: Annotated[Int64, versions("3+", ignorable=True)] = -1


class BrokerRegistrationResponse(RpcMessage):
    ThrottleTimeMs: Int32 = 0
    ErrorCode: Int16 = 0
    BrokerEpoch: Int64 = -1


SPEC = ApiSpec(
    name="BrokerRegistration",
    api_key=62,
    min_version=0,
    max_version=4,
    request_model=BrokerRegistrationRequest,
    response_model=BrokerRegistrationResponse,
)
