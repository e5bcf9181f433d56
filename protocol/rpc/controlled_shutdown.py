"""ControlledShutdown (apiKey 7, v0-3, flexible from v3): a ZooKeeper-mode broker asks the
controller to move its leaderships away before it stops; the answer lists the partitions it still
leads. KRaft brokers use BrokerHeartbeat's WantShutDown instead."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from protocol.rpc.message import RpcMessage, versions
from protocol.rpc.spec import ApiSpec
from protocol.rpc.types import Int16, Int32, Int64


class ControlledShutdownRequest(RpcMessage):
    BrokerId: Int32 = 0
    BrokerEpoch: Annotated[Int64, versions("2+", ignorable=True)] = -1


class ControlledShutdownResponse(RpcMessage):
    class RemainingPartition(RpcMessage):
        TopicName: str = ""
        PartitionIndex: Int32 = 0

    ErrorCode: Int16 = 0
    RemainingPartitions: list[RemainingPartition] = Field(default_factory=list)


SPEC = ApiSpec(
    name="ControlledShutdown",
    api_key=7,
    min_version=0,
    max_version=3,
    request_model=ControlledShutdownRequest,
    response_model=ControlledShutdownResponse,
)
