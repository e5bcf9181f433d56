"""The core's view of its own log: where it starts and ends, and which epoch covers which offsets.

This is Kafka's leader-epoch cache plus the latest snapshot id; the records themselves stay in the
log, which the core reads through `LogReader` and changes only through its `Ready` outputs.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Protocol

from kraftpy.log.epoch_cache import UNDEFINED_OFFSET, OffsetAndEpoch, end_offset_for, truncation_offset
from kraftpy.raft.messages import DivergingEpoch, Entry, Snapshot, SnapshotId


class LogReader(Protocol):
    """What the core reads from the log: records to ship to followers and the snapshot to hand out."""

    def read(self, start: int, max_count: int) -> tuple[Entry, ...]: ...

    def latest_snapshot(self) -> Snapshot | None: ...


@dataclass(slots=True)
class LogView:
    log_start: int = 0
    end_offset: int = 0
    # (epoch, start offset), ascending: epoch e covers [start, next start) or up to end_offset.
    epochs: list[tuple[int, int]] = field(default_factory=list)
    snapshot_id: SnapshotId | None = None

    @property
    def last_epoch(self) -> int:
        if self.epochs:
            return self.epochs[-1][0]
        return self.snapshot_id.Epoch if self.snapshot_id else 0

    def epoch_at(self, offset: int) -> int:
        """Epoch of the record at `offset`; the snapshot's epoch for the record just before log start."""
        if self.snapshot_id and offset == self.snapshot_id.EndOffset - 1:
            return self.snapshot_id.Epoch
        starts = [s for _, s in self.epochs]
        i = bisect.bisect_right(starts, offset) - 1
        return self.epochs[i][0] if i >= 0 else 0

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """KafkaMetadataLog.endOffsetForEpoch: (largest epoch <= `epoch` in the log, offset where it ends).

        The epoch cache's rule (`end_offset_for`), which answers an epoch older than the whole log
        with that epoch, ending where the first one starts: a follower whose last record is from
        such an epoch, the lone LeaderChange of a split election, is then told where to cut. Where
        that start is the snapshot's end, an epoch below the snapshot's answers as the snapshot;
        where the cache knows nothing, the log's end and last epoch answer.
        """
        found = end_offset_for(self.epochs, epoch, self.end_offset)
        if found.offset == UNDEFINED_OFFSET:
            return self.last_epoch, self.end_offset
        snapshot = self.snapshot_id
        if snapshot is not None and found.offset == snapshot.EndOffset and found.epoch < snapshot.Epoch:
            return snapshot.Epoch, snapshot.EndOffset
        return found.epoch, found.offset

    def validate_offset_and_epoch(self, offset: int, epoch: int) -> DivergingEpoch | SnapshotId | None:
        """ReplicatedLog.validateOffsetAndEpoch on the leader: None if a follower whose log ends at
        `offset` with a last record of `epoch` matches ours; else the snapshot to load or where we diverge."""
        snapshot = self.snapshot_id
        if offset == 0 and self.log_start == 0:
            return None  # an empty follower always matches an uncompacted log
        if snapshot is not None and (
            offset < self.log_start
            or (offset == self.log_start and epoch != snapshot.Epoch)
            or epoch < snapshot.Epoch
        ):
            return snapshot
        end_epoch, end = self.end_offset_for_epoch(epoch)
        if end_epoch != epoch or end < offset:
            return DivergingEpoch(Epoch=end_epoch, EndOffset=end)
        return None

    def truncation_offset(self, diverging: DivergingEpoch) -> int:
        """ReplicatedLog.truncateToEndOffset on the follower (the epoch cache's rule), never below the
        log start: what a snapshot covers is committed."""
        local_epoch, local_end = self.end_offset_for_epoch(diverging.Epoch)
        target = truncation_offset(
            OffsetAndEpoch(diverging.EndOffset, diverging.Epoch),
            OffsetAndEpoch(local_end, local_epoch),
            self.end_offset,
        )
        return max(target, self.log_start)

    def append(self, entries: tuple[Entry, ...]) -> None:
        for entry in entries:
            if not self.epochs or self.epochs[-1][0] != entry.epoch:
                self.epochs.append((entry.epoch, entry.offset))
        if entries:
            self.end_offset = entries[-1].end

    def truncate_to(self, offset: int) -> None:
        self.end_offset = offset
        self.epochs = [(e, s) for e, s in self.epochs if s < offset]

    def install_snapshot(self, snapshot_id: SnapshotId) -> None:
        """A snapshot from the leader replaces the whole log."""
        self.snapshot_id = snapshot_id
        self.log_start = self.end_offset = snapshot_id.EndOffset
        self.epochs = []

    def delete_before(self, snapshot_id: SnapshotId) -> None:
        """A local snapshot frees the records it covers; the epochs after it stay."""
        self.snapshot_id = snapshot_id
        self.log_start = snapshot_id.EndOffset
        kept = [(e, s) for e, s in self.epochs if s >= self.log_start]
        covering = [(e, s) for e, s in self.epochs if s < self.log_start]
        if covering and (not kept or kept[0][1] > self.log_start) and self.end_offset > self.log_start:
            kept.insert(0, (covering[-1][0], self.log_start))
        self.epochs = kept
