"""Per-log-dir offset checkpoints: `0`, `<n>`, then `<topic> <partition> <offset>` lines.

- `replication-offset-checkpoint`: each partition's high watermark;
- `log-start-offset-checkpoint`: each partition's log start offset;
- `recovery-point-offset-checkpoint`: offsets below which each log was fsynced, so recovery on
  open only needs to check what lies above.

The file format is kraftpy.log.checkpoint_file's; these files hold many partitions of one log dir,
so they stay with the broker (the metadata log checks every batch on open and keeps none).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from broker.storage.dir_names import TopicPartition
from kraftpy.log.checkpoint_file import parse_int, read_checkpoint, write_checkpoint
from kraftpy.log.errors import CorruptCheckpointError

REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
RECOVERY_POINT_OFFSET_CHECKPOINT = "recovery-point-offset-checkpoint"


class OffsetCheckpointFile:
    """One checkpoint file of a log dir; read and write are single sync calls for the dir's executor."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def write(self, offsets: Mapping[TopicPartition, int]) -> None:
        entries = [(tp.topic, tp.partition, offset) for tp, offset in sorted(offsets.items())]
        write_checkpoint(self.path, entries)

    def read(self) -> dict[TopicPartition, int]:
        offsets: dict[TopicPartition, int] = {}
        for topic, partition, offset in read_checkpoint(self.path, 3):
            tp = TopicPartition(topic, parse_int(self.path, partition, "partition"))
            value = parse_int(self.path, offset, "offset")
            if tp.partition < 0:
                raise CorruptCheckpointError(self.path, f"negative partition in {topic} {partition}")
            offsets[tp] = value
        return offsets
