"""ListPartitionReassignments (apiKey 46, v0): the partitions being reassigned (KIP-455).

`Topics` null asks for every reassignment under way; otherwise only the named partitions, of which
those not being reassigned (or unknown) are left out of the answer. Brokers forward it to the
active controller.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from protocol.rpc.message import RpcMessage, versions
from protocol.rpc.spec import ApiSpec
from protocol.rpc.types import Int16, Int32


class ListPartitionReassignmentsRequest(RpcMessage):
    class ListPartitionReassignmentsTopics(RpcMessage):
        Name: str = ""
        PartitionIndexes: list[Int32] = Field(default_factory=list)

    TimeoutMs: Int32 = 60000
    Topics: Annotated[list[ListPartitionReassignmentsTopics] | None, versions("0+", nullable="0+")] = None


class ListPartitionReassignmentsResponse(RpcMessage):
    class OngoingPartitionReassignment(RpcMessage):
        PartitionIndex: Int32 = 0
        Replicas: list[Int32] = Field(default_factory=list)
        AddingReplicas: list[Int32] = Field(default_factory=list)
        RemovingReplicas: list[Int32] = Field(default_factory=list)

    class OngoingTopicReassignment(RpcMessage):
        Name: str = ""
        Partitions: list[ListPartitionReassignmentsResponse.OngoingPartitionReassignment] = Field(
            default_factory=list
        )

    ThrottleTimeMs: Int32 = 0
    ErrorCode: Int16 = 0
    ErrorMessage: Annotated[str | None, versions("0+", nullable="0+")] = None
    Topics: list[OngoingTopicReassignment] = Field(default_factory=list)


for _model in (
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse.OngoingTopicReassignment,
    ListPartitionReassignmentsResponse,
):
    _model.model_rebuild()


SPEC = ApiSpec(
    name="ListPartitionReassignments",
    api_key=46,
    min_version=0,
    max_version=0,
    request_model=ListPartitionReassignmentsRequest,
    response_model=ListPartitionReassignmentsResponse,
    flexible_versions="0+",
)
