"""The durable metadata log, `<metadata.log.dir>/__cluster_metadata-0`, in Kafka's own layout.

Segments of record batches v2 with their indexes, leader-epoch-checkpoint, quorum-state,
partition.metadata and snapshots `<end offset>-<epoch>.checkpoint` (reference section 8). Segments,
indexes, recovery, the leader-epoch and partition.metadata files and the errors are kraftpy.log's,
the same as a broker's partition logs; snapshots, quorum-state, group commit and reading records are
this package's. `MetadataLog` is synchronous and file-level: a process runs it on one dedicated
thread; `GroupCommitLog` is the asyncio face.
"""

from kraftpy.log.epoch_cache import EpochEntry, LeaderEpochCache, OffsetAndEpoch
from kraftpy.log.errors import CorruptLogError, LogError, OffsetOutOfRangeError
from kraftpy.log.segment import TornTail
from kraftpy.metalog.checkpoints import QuorumStateData
from kraftpy.metalog.files import PARTITION_DIR, SnapshotId
from kraftpy.metalog.group_commit import GroupCommitLog
from kraftpy.metalog.log import MetadataLog, MetadataLogConfig, RecoveryReport
from kraftpy.metalog.reading import BatchInfo, LogEntry
from kraftpy.metalog.snapshots import SnapshotContents, build_snapshot, parse_snapshot, read_snapshot_file

__all__ = [
    "PARTITION_DIR",
    "BatchInfo",
    "CorruptLogError",
    "EpochEntry",
    "GroupCommitLog",
    "LeaderEpochCache",
    "LogEntry",
    "LogError",
    "MetadataLog",
    "MetadataLogConfig",
    "OffsetAndEpoch",
    "OffsetOutOfRangeError",
    "QuorumStateData",
    "RecoveryReport",
    "SnapshotContents",
    "SnapshotId",
    "TornTail",
    "build_snapshot",
    "parse_snapshot",
    "read_snapshot_file",
]
