"""The answer to DescribeQuorum: the leader's view of every voter's and observer's progress.

Only the leader tracks replicas (from their Fetch requests); another controller answers
NOT_LEADER_OR_FOLLOWER naming the leader it knows, so a tool can ask there. The leader counts itself
as fetched and caught up now (KafkaRaftClient does the same).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.errors import Errors
from protocol.rpc.describe_quorum import DescribeQuorumRequest, DescribeQuorumResponse, ReplicaState

if TYPE_CHECKING:
    from controller.raft_client import RaftClient


def describe_quorum(
    req: DescribeQuorumRequest, raft: RaftClient, *, now_ms: int, leading: bool
) -> DescribeQuorumResponse:
    if not leading:
        return DescribeQuorumResponse(
            ErrorCode=int(Errors.NOT_LEADER_OR_FOLLOWER),
            LeaderId=raft.leader_id,
            LeaderEpoch=raft.leader_epoch,
        )
    voters = sorted(raft.config.voters)
    progress = dict(raft.replicas)
    current = []
    for voter in voters:
        if voter == raft.node_id:
            current.append(
                ReplicaState(
                    ReplicaId=voter,
                    LogEndOffset=raft.log_end_offset,
                    LastFetchTimestamp=now_ms,
                    LastCaughtUpTimestamp=now_ms,
                )
            )
            continue
        p = progress.get(voter)
        current.append(
            ReplicaState(
                ReplicaId=voter,
                LogEndOffset=p.log_end_offset if p else -1,
                LastFetchTimestamp=p.last_fetch_ms if p else -1,
                LastCaughtUpTimestamp=p.last_caught_up_ms if p else -1,
            )
        )
    observers = [
        ReplicaState(
            ReplicaId=replica,
            LogEndOffset=p.log_end_offset,
            LastFetchTimestamp=p.last_fetch_ms,
            LastCaughtUpTimestamp=p.last_caught_up_ms,
        )
        for replica, p in sorted(progress.items())
        if replica not in raft.config.voters and replica >= 0
    ]
    return DescribeQuorumResponse(
        LeaderId=raft.leader_id,
        LeaderEpoch=raft.leader_epoch,
        HighWatermark=raft.high_watermark,
        CurrentVoters=current,
        Observers=observers,
    )
