"""High watermarks survive restarts in each log dir's `replication-offset-checkpoint` (Kafka's format).

Read once at start (a dir that cannot be read contributes nothing: the HW then restarts at 0 and
catches up from the leader), written every `replica.high.watermark.checkpoint.interval.ms` and at
shutdown, each dir on its own thread with the partitions it holds.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import structlog

from broker.storage import (
    REPLICATION_OFFSET_CHECKPOINT,
    CorruptCheckpointError,
    LogDirOfflineError,
    OffsetCheckpointFile,
)
from broker.storage.dir_names import TopicPartition
from broker.storage.errors import LogDirResourceError
from kraftpy.image import TopicIdPartition
from protocol.uuid import Uuid

if TYPE_CHECKING:
    from broker.dataplane.host import DataPlaneHost

log = structlog.get_logger("broker.dataplane")


class HighWatermarkCheckpoints:
    def __init__(self, host: DataPlaneHost) -> None:
        self.host = host
        self._stored: dict[TopicPartition, int] = {}

    async def load(self) -> None:
        for d in self.host.configured_log_dirs():
            if d.log_dir is None or not d.log_dir.online:
                continue
            ckpt = OffsetCheckpointFile(Path(d.path) / REPLICATION_OFFSET_CHECKPOINT)
            try:
                found = await d.log_dir.run(_read_if_present, ckpt)
            except (LogDirOfflineError, LogDirResourceError, CorruptCheckpointError) as e:
                log.warning("high watermark checkpoint unreadable", path=d.path, error=str(e))
                continue
            for tp, hw in found.items():
                self._stored[tp] = max(hw, self._stored.get(tp, 0))

    def initial(self, tp: TopicIdPartition, current: int) -> int:
        return max(current, self._stored.get(TopicPartition(tp.topic_name, tp.partition), 0))

    async def write(self, by_dir: dict[Uuid, dict[TopicIdPartition, int]]) -> None:
        for d in self.host.configured_log_dirs():
            if d.log_dir is None or not d.log_dir.online or d.dir_id is None:
                continue
            hws = {
                TopicPartition(tp.topic_name, tp.partition): hw for tp, hw in by_dir.get(d.dir_id, {}).items()
            }
            ckpt = OffsetCheckpointFile(Path(d.path) / REPLICATION_OFFSET_CHECKPOINT)
            try:
                await d.log_dir.run(ckpt.write, hws)
            except (LogDirOfflineError, LogDirResourceError):
                continue  # offline: nothing to keep; out of descriptors: the next round writes it


def _read_if_present(ckpt: OffsetCheckpointFile) -> dict[TopicPartition, int]:
    if not ckpt.path.exists():
        return {}
    return ckpt.read()
