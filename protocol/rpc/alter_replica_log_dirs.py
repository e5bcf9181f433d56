"""AlterReplicaLogDirs (apiKey 34, v1-2): move replicas of this broker into another of its log dirs (KIP-113).

Sent to the broker hosting the replicas (not forwarded): for each destination `Path`, the partitions
to move there. The broker answers per partition: NONE once a move is under way (or the replica is
already there), LOG_DIR_NOT_FOUND for a path that is not one of its `log.dirs`, KAFKA_STORAGE_ERROR
for an offline destination or partition, REPLICA_NOT_AVAILABLE when it hosts no replica yet (the
destination is kept for when it does), UNKNOWN_TOPIC_OR_PARTITION for a partition that does not exist.
"""

from __future__ import annotations

from pydantic import Field

from protocol.rpc.message import RpcMessage
from protocol.rpc.spec import ApiSpec
from protocol.rpc.types import Int16, Int32


class AlterReplicaLogDirsRequest(RpcMessage):
    class AlterReplicaLogDirTopic(RpcMessage):
        Name: str = ""
        Partitions: list[Int32] = Field(default_factory=list)

    class AlterReplicaLogDir(RpcMessage):
        Path: str = ""
        Topics: list[AlterReplicaLogDirsRequest.AlterReplicaLogDirTopic] = Field(default_factory=list)

    Dirs: list[AlterReplicaLogDir] = Field(default_factory=list)


class AlterReplicaLogDirsResponse(RpcMessage):
    class AlterReplicaLogDirPartitionResult(RpcMessage):
        PartitionIndex: Int32 = 0
        ErrorCode: Int16 = 0

    class AlterReplicaLogDirTopicResult(RpcMessage):
        TopicName: str = ""
        Partitions: list[AlterReplicaLogDirsResponse.AlterReplicaLogDirPartitionResult] = Field(
            default_factory=list
        )

    ThrottleTimeMs: Int32 = 0
    Results: list[AlterReplicaLogDirTopicResult] = Field(default_factory=list)


for _model in (
    AlterReplicaLogDirsRequest.AlterReplicaLogDir,
    AlterReplicaLogDirsRequest,
    AlterReplicaLogDirsResponse.AlterReplicaLogDirTopicResult,
    AlterReplicaLogDirsResponse,
):
    _model.model_rebuild()


SPEC = ApiSpec(
    name="AlterReplicaLogDirs",
    api_key=34,
    min_version=1,
    max_version=2,
    request_model=AlterReplicaLogDirsRequest,
    response_model=AlterReplicaLogDirsResponse,
    flexible_versions="2+",
)
