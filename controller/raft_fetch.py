"""What the leader answers to a Raft Fetch or FetchSnapshot: a pure function of the log's state.

No I/O here. The shell takes a `LogState` view of the metadata log (start and end offsets, high
watermark, leader-epoch history, snapshot ids), asks `decide_fetch` what to do, then reads the bytes
the decision names (only below the high watermark) or parks the request until the watermark moves.
The rules follow KafkaRaftClient.handleFetchRequest/tryCompleteFetchRequest and
KafkaMetadataLog.validateOffsetAndEpoch/endOffsetForEpoch (reference 9).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

from kraftpy.log.epoch_cache import UNDEFINED_OFFSET, EpochEntry, LeaderEpochCache, OffsetAndEpoch
from protocol.errors import Errors

__all__ = [
    "BOOTSTRAP_SNAPSHOT_ID",
    "EpochEntry",
    "FetchDecision",
    "FetchKind",
    "FetchRequestView",
    "LogState",
    "OffsetAndEpoch",
]


BOOTSTRAP_SNAPSHOT_ID = OffsetAndEpoch(0, 0)


@dataclass(frozen=True)
class LogState:
    """Everything the fetch rules look at, captured at one moment.

    `high_watermark` is the exclusive end of committed data (on a single voter, the flushed end
    offset). `epochs` is ascending by epoch and start offset. `snapshots` lists the snapshot ids on
    disk, ascending; the bootstrap id (0, 0) counts as none.
    """

    cluster_id: str
    leader_id: int
    leader_epoch: int
    log_start_offset: int
    log_end_offset: int
    high_watermark: int
    epochs: tuple[EpochEntry, ...] = ()
    snapshots: tuple[OffsetAndEpoch, ...] = ()
    is_leader: bool = True
    shutting_down: bool = False

    @property
    def earliest_snapshot(self) -> OffsetAndEpoch | None:
        return self.snapshots[0] if self.snapshots else None

    @property
    def latest_snapshot(self) -> OffsetAndEpoch | None:
        return self.snapshots[-1] if self.snapshots else None

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        """The largest epoch <= `epoch` the log knows and the offset where it ended.

        LeaderEpochFileCache.endOffsetFor, then KafkaMetadataLog's corrections: an epoch older than
        the log's first one ends where the oldest snapshot does (the history before it was cut away);
        an epoch the history cannot place is taken to run to the log end.
        """
        cache = LeaderEpochCache(list(self.epochs))
        end = cache.end_offset_for(epoch, self.log_end_offset)
        found = None if end.offset == UNDEFINED_OFFSET else OffsetAndEpoch(end.offset, end.epoch)
        earliest = self.earliest_snapshot
        if (
            found is not None
            and earliest is not None
            and found.offset == earliest.offset
            and found.epoch < epoch
        ):
            return earliest
        if found is not None:
            return found
        return OffsetAndEpoch(self.log_end_offset, epoch)


class FetchKind(Enum):
    ERROR = "error"  # reply with error_code and nothing else
    RECORDS = "records"  # read committed batches from read_offset (may be none yet: long-poll)
    DIVERGING = "diverging"  # the follower must truncate to `diverging`
    SNAPSHOT = "snapshot"  # the follower must load snapshot `snapshot_id`


@dataclass(frozen=True)
class FetchRequestView:
    cluster_id: str | None
    replica_id: int
    current_leader_epoch: int
    fetch_offset: int
    last_fetched_epoch: int
    max_wait_ms: int = 0


@dataclass(frozen=True)
class FetchDecision:
    kind: FetchKind
    error: Errors = Errors.NONE
    read_offset: int = -1
    diverging: OffsetAndEpoch | None = None
    snapshot_id: OffsetAndEpoch | None = None

    def records_available(self, state: LogState) -> bool:
        """Whether committed data lies at or after `read_offset` (else the request may wait)."""
        return self.kind is FetchKind.RECORDS and self.read_offset < state.high_watermark

    def should_wait(self, state: LogState, max_wait_ms: int) -> bool:
        """Long-poll only a clean RECORDS answer with nothing to send yet (tryCompleteFetchRequest)."""
        return max_wait_ms > 0 and self.kind is FetchKind.RECORDS and not self.records_available(state)


def _error(code: Errors) -> FetchDecision:
    return FetchDecision(FetchKind.ERROR, error=code)


def validate_leader_request(state: LogState, cluster_id: str | None, request_epoch: int) -> Errors:
    """Checks every leader-only Raft request passes (hasValidClusterId, validateLeaderOnlyRequest)."""
    if cluster_id is not None and cluster_id != state.cluster_id:
        return Errors.INCONSISTENT_CLUSTER_ID
    if request_epoch < state.leader_epoch:
        return Errors.FENCED_LEADER_EPOCH
    if request_epoch > state.leader_epoch:
        return Errors.UNKNOWN_LEADER_EPOCH
    if not state.is_leader:
        return Errors.NOT_LEADER_OR_FOLLOWER
    if state.shutting_down:
        return Errors.BROKER_NOT_AVAILABLE
    return Errors.NONE


def validate_offset_and_epoch(state: LogState, offset: int, epoch: int) -> FetchDecision:
    """KafkaMetadataLog.validateOffsetAndEpoch: valid, diverging, or go load a snapshot."""
    if state.log_start_offset == 0 and offset == 0:
        return FetchDecision(FetchKind.RECORDS, read_offset=0)
    earliest = state.earliest_snapshot
    if earliest is not None and (
        offset < state.log_start_offset
        or (offset == state.log_start_offset and epoch != earliest.epoch)
        or epoch < earliest.epoch
    ):
        return FetchDecision(FetchKind.SNAPSHOT, snapshot_id=state.latest_snapshot)
    end = state.end_offset_for_epoch(epoch)
    if end.epoch != epoch or end.offset < offset:
        return FetchDecision(FetchKind.DIVERGING, diverging=end)
    return FetchDecision(FetchKind.RECORDS, read_offset=offset)


def decide_fetch(state: LogState, request: FetchRequestView) -> FetchDecision:
    """The whole answer to one Fetch, minus the bytes."""
    if request.cluster_id is not None and request.cluster_id != state.cluster_id:
        return _error(Errors.INCONSISTENT_CLUSTER_ID)
    if (
        request.max_wait_ms < 0
        or request.fetch_offset < 0
        or request.last_fetched_epoch < 0
        or request.last_fetched_epoch > request.current_leader_epoch
    ):
        return _error(Errors.INVALID_REQUEST)
    code = validate_leader_request(state, None, request.current_leader_epoch)
    if code is not Errors.NONE:
        return _error(code)
    latest = state.latest_snapshot
    # An empty follower is better off loading the latest snapshot than replaying from offset 0.
    if request.fetch_offset == 0 and latest is not None and latest != BOOTSTRAP_SNAPSHOT_ID:
        return FetchDecision(FetchKind.SNAPSHOT, snapshot_id=latest)
    return validate_offset_and_epoch(state, request.fetch_offset, request.last_fetched_epoch)


@dataclass(frozen=True)
class SnapshotChunk:
    """Where to read a FetchSnapshot answer from, or the error to send instead."""

    error: Errors = Errors.NONE
    snapshot_id: OffsetAndEpoch | None = None
    position: int = 0
    length: int = 0
    size: int = 0


def decide_fetch_snapshot(
    state: LogState,
    snapshot_sizes: Mapping[OffsetAndEpoch, int],
    *,
    cluster_id: str | None,
    current_leader_epoch: int,
    snapshot_id: OffsetAndEpoch,
    position: int,
    max_bytes: int,
) -> SnapshotChunk:
    """KafkaRaftClient.handleFetchSnapshotRequest: which slice of which snapshot file to send."""
    code = validate_leader_request(state, cluster_id, current_leader_epoch)
    if code is not Errors.NONE:
        return SnapshotChunk(error=code)
    size = snapshot_sizes.get(snapshot_id)
    if size is None:
        return SnapshotChunk(error=Errors.SNAPSHOT_NOT_FOUND, snapshot_id=snapshot_id)
    if position < 0 or position >= size:
        return SnapshotChunk(error=Errors.POSITION_OUT_OF_RANGE, snapshot_id=snapshot_id)
    if max_bytes <= 0:
        return SnapshotChunk(error=Errors.INVALID_REQUEST, snapshot_id=snapshot_id)
    return SnapshotChunk(
        snapshot_id=snapshot_id, position=position, length=min(max_bytes, size - position), size=size
    )
