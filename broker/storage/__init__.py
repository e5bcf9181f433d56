"""The broker's partition logs inside its log dirs, and the per-dir I/O executor.

Built on kraftpy.log (segments, indexes, recovery, checkpoint files, errors), shared with the
metadata log. What stays here is the broker's alone: the log dir with its own executor and failure
channel, partition dir names (-future, -delete, -stray), the offset checkpoints of a log dir,
producer state and PartitionLog itself. The log stack's errors are exported here too, as partition
log callers catch them.

Everything here except `LogDir.run` is sync file code: the broker runs each call on the log dir's
own thread through `LogDir.run`, which turns an OSError into the dir's failure.
"""

from broker.storage.checkpoints import (
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_OFFSET_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    OffsetCheckpointFile,
)
from broker.storage.dir_names import DirKind, PartitionDirName, TopicPartition, parse_partition_dir_name
from broker.storage.errors import (
    InconsistentTopicIdError,
    LogClosedError,
    LogDirOfflineError,
    UnexpectedAppendOffsetError,
)
from broker.storage.log_config import LogConfig
from broker.storage.log_dir import DirUsage, LogDir, LogDirStallError
from broker.storage.partition_log import AppendResult, EpochEndOffset, PartitionLog, ReadResult
from kraftpy.log.errors import CorruptCheckpointError, CorruptLogError, OffsetOutOfRangeError

__all__ = [
    "LOG_START_OFFSET_CHECKPOINT",
    "RECOVERY_POINT_OFFSET_CHECKPOINT",
    "REPLICATION_OFFSET_CHECKPOINT",
    "AppendResult",
    "CorruptCheckpointError",
    "CorruptLogError",
    "DirKind",
    "DirUsage",
    "EpochEndOffset",
    "InconsistentTopicIdError",
    "LogClosedError",
    "LogConfig",
    "LogDir",
    "LogDirOfflineError",
    "LogDirStallError",
    "OffsetCheckpointFile",
    "OffsetOutOfRangeError",
    "PartitionDirName",
    "PartitionLog",
    "ReadResult",
    "TopicPartition",
    "UnexpectedAppendOffsetError",
    "parse_partition_dir_name",
]
