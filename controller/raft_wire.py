"""Between the Raft core's messages and Kafka's wire models of the quorum RPCs.

The core's messages are small frozen values without the `__cluster_metadata` nesting; the wire
models carry Kafka's field names. A Fetch answer's records travel as the batches' bytes, split
back into one entry per batch on arrival. A missing ClusterId is accepted, as Kafka does.
"""

from __future__ import annotations

from controller.raft_store import entries_of
from kraftpy.raft import messages as raft
from protocol.errors import Errors
from protocol.rpc.begin_quorum_epoch import BeginQuorumEpochRequest, BeginQuorumEpochResponse
from protocol.rpc.current_leader import LeaderIdAndEpoch
from protocol.rpc.end_quorum_epoch import EndQuorumEpochRequest, EndQuorumEpochResponse
from protocol.rpc.fetch import EpochEndOffset, FetchRequest, FetchResponse, SnapshotIdData
from protocol.rpc.vote import VoteRequest, VoteResponse


def _error(code: int) -> Errors:
    try:
        return Errors(code)
    except ValueError:
        return Errors.UNKNOWN_SERVER_ERROR


def _leader(hint: LeaderIdAndEpoch | None) -> tuple[int, int]:
    if hint is None:
        return -1, -1
    return hint.LeaderId, hint.LeaderEpoch


# ---- Vote ----------------------------------------------------------------------------------------


def vote_request_to_wire(m: raft.VoteRequest) -> VoteRequest:
    return VoteRequest(
        ClusterId=m.ClusterId,
        CandidateEpoch=m.CandidateEpoch,
        CandidateId=m.CandidateId,
        LastOffsetEpoch=m.LastOffsetEpoch,
        LastOffset=m.LastOffset,
    )


def vote_request_from_wire(w: VoteRequest, cluster_id: str) -> raft.VoteRequest:
    return raft.VoteRequest(
        ClusterId=w.ClusterId if w.ClusterId is not None else cluster_id,
        CandidateEpoch=w.CandidateEpoch,
        CandidateId=w.CandidateId,
        LastOffsetEpoch=w.LastOffsetEpoch,
        LastOffset=w.LastOffset,
    )


def vote_response_to_wire(m: raft.VoteResponse) -> VoteResponse:
    return VoteResponse(
        ErrorCode=int(m.ErrorCode), LeaderId=m.LeaderId, LeaderEpoch=m.LeaderEpoch, VoteGranted=m.VoteGranted
    )


def vote_response_from_wire(w: VoteResponse) -> raft.VoteResponse:
    return raft.VoteResponse(
        ErrorCode=_error(w.ErrorCode),
        LeaderId=w.LeaderId,
        LeaderEpoch=w.LeaderEpoch,
        VoteGranted=w.VoteGranted,
    )


# ---- BeginQuorumEpoch / EndQuorumEpoch ------------------------------------------------------------


def begin_request_to_wire(m: raft.BeginQuorumEpochRequest) -> BeginQuorumEpochRequest:
    return BeginQuorumEpochRequest(ClusterId=m.ClusterId, LeaderId=m.LeaderId, LeaderEpoch=m.LeaderEpoch)


def begin_request_from_wire(w: BeginQuorumEpochRequest, cluster_id: str) -> raft.BeginQuorumEpochRequest:
    return raft.BeginQuorumEpochRequest(
        ClusterId=w.ClusterId if w.ClusterId is not None else cluster_id,
        LeaderId=w.LeaderId,
        LeaderEpoch=w.LeaderEpoch,
    )


def begin_response_to_wire(m: raft.BeginQuorumEpochResponse) -> BeginQuorumEpochResponse:
    return BeginQuorumEpochResponse(
        ErrorCode=int(m.ErrorCode), LeaderId=m.LeaderId, LeaderEpoch=m.LeaderEpoch
    )


def begin_response_from_wire(w: BeginQuorumEpochResponse) -> raft.BeginQuorumEpochResponse:
    return raft.BeginQuorumEpochResponse(
        ErrorCode=_error(w.ErrorCode), LeaderId=w.LeaderId, LeaderEpoch=w.LeaderEpoch
    )


def end_request_to_wire(m: raft.EndQuorumEpochRequest) -> EndQuorumEpochRequest:
    return EndQuorumEpochRequest(
        ClusterId=m.ClusterId,
        LeaderId=m.LeaderId,
        LeaderEpoch=m.LeaderEpoch,
        PreferredSuccessors=list(m.PreferredSuccessors),
    )


def end_request_from_wire(w: EndQuorumEpochRequest, cluster_id: str) -> raft.EndQuorumEpochRequest:
    return raft.EndQuorumEpochRequest(
        ClusterId=w.ClusterId if w.ClusterId is not None else cluster_id,
        LeaderId=w.LeaderId,
        LeaderEpoch=w.LeaderEpoch,
        PreferredSuccessors=tuple(w.PreferredSuccessors),
    )


def end_response_to_wire(m: raft.EndQuorumEpochResponse) -> EndQuorumEpochResponse:
    return EndQuorumEpochResponse(ErrorCode=int(m.ErrorCode), LeaderId=m.LeaderId, LeaderEpoch=m.LeaderEpoch)


def end_response_from_wire(w: EndQuorumEpochResponse) -> raft.EndQuorumEpochResponse:
    return raft.EndQuorumEpochResponse(
        ErrorCode=_error(w.ErrorCode), LeaderId=w.LeaderId, LeaderEpoch=w.LeaderEpoch
    )


# ---- Fetch ---------------------------------------------------------------------------------------


def fetch_request_to_wire(m: raft.FetchRequest, max_wait_ms: int) -> FetchRequest:
    return FetchRequest(
        ClusterId=m.ClusterId,
        ReplicaId=m.ReplicaId,
        MaxWaitMs=max_wait_ms,
        CurrentLeaderEpoch=m.CurrentLeaderEpoch,
        FetchOffset=m.FetchOffset,
        LastFetchedEpoch=m.LastFetchedEpoch,
    )


def fetch_request_from_wire(w: FetchRequest, cluster_id: str) -> raft.FetchRequest:
    return raft.FetchRequest(
        ClusterId=w.ClusterId if w.ClusterId is not None else cluster_id,
        ReplicaId=w.ReplicaId,
        CurrentLeaderEpoch=w.CurrentLeaderEpoch,
        FetchOffset=w.FetchOffset,
        # An observer with an empty log may say -1; the core's "no epoch yet" is 0.
        LastFetchedEpoch=max(w.LastFetchedEpoch, 0) if w.FetchOffset == 0 else w.LastFetchedEpoch,
    )


def fetch_response_to_wire(m: raft.FetchResponse, log_start_offset: int) -> FetchResponse:
    return FetchResponse(
        ErrorCode=int(m.ErrorCode),
        HighWatermark=m.HighWatermark,
        LogStartOffset=log_start_offset,
        CurrentLeader=LeaderIdAndEpoch(LeaderId=m.LeaderId, LeaderEpoch=m.LeaderEpoch),
        DivergingEpoch=(
            EpochEndOffset(Epoch=m.DivergingEpoch.Epoch, EndOffset=m.DivergingEpoch.EndOffset)
            if m.DivergingEpoch is not None
            else None
        ),
        SnapshotId=(
            SnapshotIdData(EndOffset=m.SnapshotId.EndOffset, Epoch=m.SnapshotId.Epoch)
            if m.SnapshotId is not None
            else None
        ),
        Records=b"".join(e.data for e in m.Records),
    )


def fetch_response_from_wire(w: FetchResponse, request: raft.FetchRequest) -> raft.FetchResponse:
    leader_id, leader_epoch = _leader(w.CurrentLeader)
    return raft.FetchResponse(
        ErrorCode=_error(w.ErrorCode),
        LeaderId=leader_id,
        LeaderEpoch=leader_epoch,
        FetchOffset=request.FetchOffset,
        LastFetchedEpoch=request.LastFetchedEpoch,
        HighWatermark=w.HighWatermark,
        Records=tuple(entries_of(w.Records)) if w.Records else (),
        DivergingEpoch=(
            raft.DivergingEpoch(Epoch=w.DivergingEpoch.Epoch, EndOffset=w.DivergingEpoch.EndOffset)
            if w.DivergingEpoch is not None and w.DivergingEpoch.Epoch >= 0
            else None
        ),
        SnapshotId=(
            raft.SnapshotId(w.SnapshotId.EndOffset, w.SnapshotId.Epoch)
            if w.SnapshotId is not None and w.SnapshotId.EndOffset >= 0
            else None
        ),
    )
