"""Raft RPCs as small frozen values, with Kafka's field names (raft/src/main/resources/common/message/*.json).

The `__cluster_metadata` topic and partition are implied: the quorum replicates one log, so the
per-topic and per-partition nesting of the wire format is flattened away. Every message travels in an
`Envelope` naming its source and destination, because responses in Kafka are matched to a connection,
which a sans-IO core does not have.
"""

from __future__ import annotations

from dataclasses import dataclass

from protocol.errors import Errors


@dataclass(frozen=True, slots=True)
class Entry:
    """One batch of the replicated log: `count` records from `offset` on, all of one epoch, kept whole
    so that every voter's log holds the same batches byte for byte; `control` marks Kafka's control
    batches (LeaderChange)."""

    offset: int
    epoch: int
    data: bytes
    control: bool = False
    count: int = 1

    @property
    def end(self) -> int:
        """The offset after this batch."""
        return self.offset + self.count


@dataclass(frozen=True, slots=True)
class SnapshotId:
    """Kafka's OffsetAndEpoch for a snapshot: it covers every offset below EndOffset."""

    EndOffset: int
    Epoch: int


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A snapshot as the core sees it: its id and the application's state, opaque to Raft."""

    snapshot_id: SnapshotId
    state: bytes


@dataclass(frozen=True, slots=True)
class DivergingEpoch:
    """The leader's largest epoch <= the follower's LastFetchedEpoch, and where that epoch ends."""

    Epoch: int
    EndOffset: int


@dataclass(frozen=True, slots=True, kw_only=True)
class VoteRequest:
    ClusterId: str
    CandidateEpoch: int
    CandidateId: int
    LastOffsetEpoch: int
    LastOffset: int


@dataclass(frozen=True, slots=True, kw_only=True)
class VoteResponse:
    ErrorCode: Errors
    LeaderId: int
    LeaderEpoch: int
    VoteGranted: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class BeginQuorumEpochRequest:
    ClusterId: str
    LeaderId: int
    LeaderEpoch: int


@dataclass(frozen=True, slots=True, kw_only=True)
class BeginQuorumEpochResponse:
    ErrorCode: Errors
    LeaderId: int
    LeaderEpoch: int


@dataclass(frozen=True, slots=True, kw_only=True)
class EndQuorumEpochRequest:
    ClusterId: str
    LeaderId: int
    LeaderEpoch: int
    PreferredSuccessors: tuple[int, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class EndQuorumEpochResponse:
    ErrorCode: Errors
    LeaderId: int
    LeaderEpoch: int


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchRequest:
    ClusterId: str
    ReplicaId: int
    CurrentLeaderEpoch: int
    FetchOffset: int
    LastFetchedEpoch: int


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchResponse:
    """FetchOffset and LastFetchedEpoch echo the request: with no correlation ids, the follower uses
    them to drop a late or duplicated reply that no longer fits the end of its log."""

    ErrorCode: Errors
    LeaderId: int
    LeaderEpoch: int
    FetchOffset: int
    LastFetchedEpoch: int
    HighWatermark: int = -1
    Records: tuple[Entry, ...] = ()
    DivergingEpoch: DivergingEpoch | None = None
    SnapshotId: SnapshotId | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchSnapshotRequest:
    ClusterId: str
    ReplicaId: int
    CurrentLeaderEpoch: int
    SnapshotId: SnapshotId
    Position: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchSnapshotResponse:
    """Simplified: the whole snapshot travels in one chunk (Position 0, Size = len(UnalignedRecords))."""

    ErrorCode: Errors
    LeaderId: int
    LeaderEpoch: int
    SnapshotId: SnapshotId
    Size: int = 0
    Position: int = 0
    UnalignedRecords: bytes = b""


Request = VoteRequest | BeginQuorumEpochRequest | EndQuorumEpochRequest | FetchRequest | FetchSnapshotRequest
Response = (
    VoteResponse | BeginQuorumEpochResponse | EndQuorumEpochResponse | FetchResponse | FetchSnapshotResponse
)
Message = Request | Response


@dataclass(frozen=True, slots=True)
class Envelope:
    source: int
    destination: int
    message: Message
