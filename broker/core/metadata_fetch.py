"""The broker as a Raft observer of `__cluster_metadata` (KafkaRaftClient's follower side), without I/O.

`MetadataFetchState.next_request(log)` builds the Fetch for where the local copy of the log ends;
`handle(response, log)` says what the answer means:

- `Append(records, high_watermark)`: batches to append as they are (their offsets follow the local end);
- `Truncate(offset)`: the leader's log diverges; cut the local log back to `offset` (reference 9,
  `truncateToEndOffset`) and fetch again;
- `LoadSnapshot(snapshot_id)`: the leader no longer has the offsets we need (or we have nothing
  and it has a snapshot): fetch that snapshot with FetchSnapshot, install it, restart the log at it;
- `Retry(delay_ms, reason)`: an error; the leader epoch is corrected first when the reply tells it
  (or guessed one step in the right direction when it does not).

`SnapshotDownload` does the FetchSnapshot side: requests by position until the file is complete.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from kraftpy.log.epoch_cache import OffsetAndEpoch
from kraftpy.log.epoch_cache import truncation_offset as epoch_truncation_offset
from protocol.errors import Errors
from protocol.rpc.fetch import FetchRequest, FetchResponse, SnapshotIdData
from protocol.rpc.fetch_snapshot import FetchSnapshotRequest, FetchSnapshotResponse

MAX_WAIT_MS = 500
RETRY_BACKOFF_MS = 100
SNAPSHOT_CHUNK_BYTES = 4 << 20


class LogPosition(Protocol):
    """What the fetcher reads from the local metadata log."""

    @property
    def log_end_offset(self) -> int: ...

    @property
    def latest_epoch(self) -> int: ...

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """(end offset, epoch) of the largest epoch <= `epoch` in the local log (Kafka's endOffsetForEpoch)."""
        ...


@dataclass(frozen=True)
class Append:
    records: bytes
    high_watermark: int


@dataclass(frozen=True)
class Truncate:
    offset: int
    diverging_epoch: int
    diverging_end_offset: int


@dataclass(frozen=True)
class LoadSnapshot:
    end_offset: int
    epoch: int


@dataclass(frozen=True)
class Retry:
    delay_ms: int
    reason: str


FetchOutcome = Append | Truncate | LoadSnapshot | Retry


def truncation_offset(diverging_epoch: int, diverging_end_offset: int, log: LogPosition) -> int:
    """Where to cut the local log for a DivergingEpoch: the epoch cache's rule on this log."""
    local_end, local_epoch = log.end_offset_for_epoch(diverging_epoch)
    return epoch_truncation_offset(
        OffsetAndEpoch(diverging_end_offset, diverging_epoch),
        OffsetAndEpoch(local_end, local_epoch),
        log.log_end_offset,
    )


class MetadataFetchState:
    def __init__(self, cluster_id: str, replica_id: int, *, max_wait_ms: int = MAX_WAIT_MS) -> None:
        self.cluster_id = cluster_id
        self.replica_id = replica_id
        self.max_wait_ms = max_wait_ms
        self.leader_epoch = -1
        self.leader_id = -1
        self.high_watermark = -1

    def next_request(self, log: LogPosition) -> FetchRequest:
        last_epoch = max(log.latest_epoch, 0)
        if self.leader_epoch < last_epoch:
            self.leader_epoch = last_epoch
        return FetchRequest(
            ClusterId=self.cluster_id,
            ReplicaId=self.replica_id,
            MaxWaitMs=self.max_wait_ms,
            CurrentLeaderEpoch=self.leader_epoch,
            FetchOffset=log.log_end_offset,
            LastFetchedEpoch=min(last_epoch, self.leader_epoch),
        )

    def handle(self, response: FetchResponse, log: LogPosition) -> FetchOutcome:
        if response.CurrentLeader is not None and response.CurrentLeader.LeaderEpoch >= 0:
            self.leader_id = response.CurrentLeader.LeaderId
            if response.CurrentLeader.LeaderEpoch != self.leader_epoch:
                self.leader_epoch = response.CurrentLeader.LeaderEpoch
                if response.ErrorCode in (Errors.FENCED_LEADER_EPOCH, Errors.UNKNOWN_LEADER_EPOCH):
                    return Retry(0, f"leader epoch is now {self.leader_epoch}")
        code = response.ErrorCode
        if code == Errors.FENCED_LEADER_EPOCH:
            self.leader_epoch += 1
            return Retry(0, "our leader epoch is stale")
        if code == Errors.UNKNOWN_LEADER_EPOCH:
            self.leader_epoch = max(self.leader_epoch - 1, 0)
            return Retry(RETRY_BACKOFF_MS, "the leader does not know our leader epoch")
        if code != Errors.NONE:
            return Retry(RETRY_BACKOFF_MS, _name(code))
        if response.HighWatermark >= 0:
            self.high_watermark = response.HighWatermark
        if response.DivergingEpoch is not None and response.DivergingEpoch.Epoch >= 0:
            d = response.DivergingEpoch
            return Truncate(truncation_offset(d.Epoch, d.EndOffset, log), d.Epoch, d.EndOffset)
        if response.SnapshotId is not None and response.SnapshotId.EndOffset >= 0:
            s = response.SnapshotId
            return LoadSnapshot(s.EndOffset, s.Epoch)
        return Append(response.Records, response.HighWatermark)


class SnapshotDownload:
    """Fetch one snapshot, chunk by chunk, into memory."""

    def __init__(self, state: MetadataFetchState, end_offset: int, epoch: int) -> None:
        self.state = state
        self.snapshot_id = SnapshotIdData(EndOffset=end_offset, Epoch=epoch)
        self.chunks: list[bytes] = []
        self.position = 0
        self.size: int | None = None

    @property
    def done(self) -> bool:
        return self.size is not None and self.position >= self.size

    def next_request(self) -> FetchSnapshotRequest:
        return FetchSnapshotRequest(
            ClusterId=self.state.cluster_id,
            ReplicaId=self.state.replica_id,
            MaxBytes=SNAPSHOT_CHUNK_BYTES,
            CurrentLeaderEpoch=self.state.leader_epoch,
            SnapshotId=self.snapshot_id,
            Position=self.position,
        )

    def handle(self, response: FetchSnapshotResponse) -> Retry | None:
        """None when the chunk was taken; Retry to ask again; raises when the snapshot is gone."""
        if response.CurrentLeader is not None and response.CurrentLeader.LeaderEpoch >= 0:
            self.state.leader_epoch = response.CurrentLeader.LeaderEpoch
        code = response.ErrorCode
        if code in (Errors.SNAPSHOT_NOT_FOUND, Errors.POSITION_OUT_OF_RANGE):
            raise SnapshotGoneError(
                f"{_name(code)} fetching snapshot {self.snapshot_id.EndOffset}-{self.snapshot_id.Epoch}"
            )
        if code != Errors.NONE:
            return Retry(RETRY_BACKOFF_MS, _name(code))
        if response.Position != self.position:
            return Retry(RETRY_BACKOFF_MS, f"chunk at position {response.Position}, wanted {self.position}")
        self.size = response.Size
        self.chunks.append(response.UnalignedRecords)
        self.position += len(response.UnalignedRecords)
        if not response.UnalignedRecords and self.position < response.Size:
            return Retry(RETRY_BACKOFF_MS, "empty snapshot chunk")
        return None

    def data(self) -> bytes:
        return b"".join(self.chunks)


class SnapshotGoneError(RuntimeError):
    """The snapshot the leader pointed at is no longer there: start over with a Fetch."""


def _name(code: int) -> str:
    try:
        return Errors(code).name
    except ValueError:
        return str(code)
