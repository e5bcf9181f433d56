"""When to write a metadata snapshot (Kafka's SnapshotGenerator): by committed bytes or by time.

Pure bookkeeping, shared by the controller (which counts the batches it committed) and the broker
(which counts the batches it fetched into its own copy of the log): the shell reports batch sizes and
asks `due(now_ms, end_offset)`. A snapshot is due once `metadata.log.max.record.bytes.between.snapshots`
bytes of records were appended since the last one, or `metadata.log.max.snapshot.interval.ms` passed
(0 turns the time trigger off) and something was appended since; never twice for the same offset,
one at a time.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class SnapshotPolicy:
    max_bytes_between: int
    max_interval_ms: int
    last_snapshot_ms: int
    last_snapshot_end_offset: int = 0
    bytes_since: int = 0
    in_progress: bool = False

    def on_appended(self, batch_bytes: int) -> None:
        self.bytes_since += batch_bytes

    def due(self, now_ms: int, end_offset: int) -> str | None:
        """Why a snapshot ending at `end_offset` (exclusive) should be written now, or None."""
        if self.in_progress or end_offset <= self.last_snapshot_end_offset:
            return None
        if self.bytes_since >= self.max_bytes_between:
            return f"{self.bytes_since} bytes of batches since the last snapshot"
        if self.max_interval_ms > 0 and now_ms - self.last_snapshot_ms >= self.max_interval_ms:
            return f"{now_ms - self.last_snapshot_ms} ms since the last snapshot"
        return None

    def started(self) -> None:
        self.in_progress = True

    def finished(self, now_ms: int, end_offset: int, bytes_covered: int) -> None:
        """A snapshot ending at `end_offset` is on disk; `bytes_covered` of the counted bytes are in it."""
        self.in_progress = False
        self.last_snapshot_ms = now_ms
        self.last_snapshot_end_offset = max(self.last_snapshot_end_offset, end_offset)
        self.bytes_since = max(0, self.bytes_since - bytes_covered)

    def installed(self, end_offset: int) -> None:
        """A snapshot ending at `end_offset` came from elsewhere (a broker installing the controller's):
        none is due at or below it."""
        self.last_snapshot_end_offset = max(self.last_snapshot_end_offset, end_offset)

    def failed(self) -> None:
        self.in_progress = False
