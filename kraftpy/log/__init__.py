"""The log stack both kinds of log are built on (Kafka's storage module: LogSegment and its indexes).

Record batch v2 segments with their `.index` and `.timeindex` (segment, indexes, batch_io), the
segment list of one log with rolling and cutting back (segments), opening them after a crash with
torn-tail recovery (loader, segment), the files beside the segments
(leader-epoch-checkpoint, partition.metadata, the checkpoint-file format) and one set of errors.

Everything here is sync file code; its owner runs it off the event loop: a broker on each log dir's
own executor (broker.storage.LogDir), the controller on the metadata log's thread
(kraftpy.metalog.GroupCommitLog).

Built on it: broker.storage.PartitionLog (producer state, retention, the per-dir executor) and
kraftpy.metalog.MetadataLog (snapshots, quorum-state, group commit).
"""

from kraftpy.log.epoch_cache import EpochEntry, LeaderEpochCache, OffsetAndEpoch
from kraftpy.log.errors import (
    CorruptCheckpointError,
    CorruptLogError,
    FilePath,
    LogError,
    OffsetOutOfRangeError,
)
from kraftpy.log.leader_epoch_checkpoint import LeaderEpochFileCache
from kraftpy.log.segment import LogSegment, TornTail

__all__ = [
    "CorruptCheckpointError",
    "CorruptLogError",
    "EpochEntry",
    "FilePath",
    "LeaderEpochCache",
    "LeaderEpochFileCache",
    "LogError",
    "LogSegment",
    "OffsetAndEpoch",
    "OffsetOutOfRangeError",
    "TornTail",
]
