"""AlterPartitionReassignments (apiKey 45, v0): move partitions to other brokers (KIP-455).

For each partition, `Replicas` is the wanted replica list (null cancels the reassignment under
way). A client sends it to any broker, which forwards it to the active controller. The answer
says, per partition, whether the reassignment was started (or cancelled); not that it finished:
ListPartitionReassignments tells that. Kafka 4.1's v1 (AllowReplicationFactorChange, KIP-860) is
not served, as in Kafka 3.9.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from protocol.rpc.message import RpcMessage, versions
from protocol.rpc.spec import ApiSpec
from protocol.rpc.types import Int16, Int32


class AlterPartitionReassignmentsRequest(RpcMessage):
    class ReassignablePartition(RpcMessage):
        PartitionIndex: Int32 = 0
        Replicas: Annotated[list[Int32] | None, versions("0+", nullable="0+")] = None

    class ReassignableTopic(RpcMessage):
        Name: str = ""
        Partitions: list[AlterPartitionReassignmentsRequest.ReassignablePartition] = Field(
            default_factory=list
        )

    TimeoutMs: Int32 = 60000
    Topics: list[ReassignableTopic] = Field(default_factory=list)


class AlterPartitionReassignmentsResponse(RpcMessage):
    class ReassignablePartitionResponse(RpcMessage):
        PartitionIndex: Int32 = 0
        ErrorCode: Int16 = 0
        ErrorMessage: Annotated[str | None, versions("0+", nullable="0+")] = None

    class ReassignableTopicResponse(RpcMessage):
        Name: str = ""
        Partitions: list[AlterPartitionReassignmentsResponse.ReassignablePartitionResponse] = Field(
            default_factory=list
        )

    ThrottleTimeMs: Int32 = 0
    ErrorCode: Int16 = 0
    ErrorMessage: Annotated[str | None, versions("0+", nullable="0+")] = None
    Responses: list[ReassignableTopicResponse] = Field(default_factory=list)


for _model in (
    AlterPartitionReassignmentsRequest.ReassignableTopic,
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse.ReassignableTopicResponse,
    AlterPartitionReassignmentsResponse,
):
    _model.model_rebuild()


SPEC = ApiSpec(
    name="AlterPartitionReassignments",
    api_key=45,
    min_version=0,
    max_version=0,
    request_model=AlterPartitionReassignmentsRequest,
    response_model=AlterPartitionReassignmentsResponse,
    flexible_versions="0+",
)
