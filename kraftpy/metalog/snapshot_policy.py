"""When to write a metadata snapshot (Kafka's SnapshotGenerator): by committed bytes or by time.

Pure bookkeeping, shared by the controller (which counts the batches it committed) and the broker
(which counts the batches it fetched into its own copy of the log): the shell reports batch sizes and
asks `due(now_ms, end_offset)` after each of them (and, for the time trigger, now and then). A
snapshot is due once `metadata.log.max.record.bytes.between.snapshots` bytes of records were appended
since the last one, or (KIP-876) once the oldest record not in a snapshot is
`metadata.log.max.snapshot.interval.ms` old (0 turns the time trigger off); never twice for the same
offset, one at a time.

A record's age counts from the first `due` that saw it: the controller asks after each commit and
once a second, the broker after each fetch once what it applied is below the high watermark. Records
already beyond the last snapshot when the policy was made count from `last_snapshot_ms`.
So a quiet hour after a snapshot does not make the next record snapshot at once: it waits its own
interval, as KIP-876 says.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class SnapshotPolicy:
    max_bytes_between: int
    max_interval_ms: int
    last_snapshot_ms: int
    last_snapshot_end_offset: int = 0
    bytes_since: int = 0
    in_progress: bool = False
    pending_since_ms: int | None = None
    """When the oldest record not in a snapshot was first seen; None when every record is in one."""
    _seen_end: int = field(default=-1, repr=False)
    _end_at_start: int = field(default=-1, repr=False)
    _seen_while_writing_ms: int | None = field(default=None, repr=False)

    def on_appended(self, batch_bytes: int) -> None:
        self.bytes_since += batch_bytes

    def _observe(self, now_ms: int, end_offset: int) -> None:
        if end_offset <= self.last_snapshot_end_offset:
            self.pending_since_ms = None
        elif self.pending_since_ms is None:
            self.pending_since_ms = self.last_snapshot_ms if self._seen_end < 0 else now_ms
        if self.in_progress and end_offset > self._end_at_start and self._seen_while_writing_ms is None:
            self._seen_while_writing_ms = now_ms
        self._seen_end = max(self._seen_end, end_offset)

    def due(self, now_ms: int, end_offset: int) -> str | None:
        """Why a snapshot ending at `end_offset` (exclusive) should be written now, or None."""
        self._observe(now_ms, end_offset)
        if self.in_progress or end_offset <= self.last_snapshot_end_offset:
            return None
        if self.bytes_since >= self.max_bytes_between:
            return f"{self.bytes_since} bytes of batches since the last snapshot"
        pending = self.pending_since_ms
        if self.max_interval_ms > 0 and pending is not None and now_ms - pending >= self.max_interval_ms:
            return f"the oldest record not in a snapshot is {now_ms - pending} ms old"
        return None

    def started(self) -> None:
        self.in_progress = True
        self._end_at_start = self._seen_end
        self._seen_while_writing_ms = None

    def finished(self, now_ms: int, end_offset: int, bytes_covered: int) -> None:
        """A snapshot ending at `end_offset` is on disk; `bytes_covered` of the counted bytes are in it."""
        self.in_progress = False
        self.last_snapshot_ms = now_ms
        self.last_snapshot_end_offset = max(self.last_snapshot_end_offset, end_offset)
        self.bytes_since = max(0, self.bytes_since - bytes_covered)
        if self._seen_end > self.last_snapshot_end_offset:
            # Records past the snapshot arrived while it was written: their clock started then.
            seen = self._seen_while_writing_ms
            self.pending_since_ms = seen if seen is not None else now_ms
        else:
            self.pending_since_ms = None

    def installed(self, end_offset: int) -> None:
        """A snapshot ending at `end_offset` came from elsewhere (a broker installing the controller's):
        none is due at or below it."""
        self.last_snapshot_end_offset = max(self.last_snapshot_end_offset, end_offset)
        if self._seen_end <= self.last_snapshot_end_offset:
            self.pending_since_ms = None

    def failed(self) -> None:
        self.in_progress = False
