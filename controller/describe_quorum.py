"""What a tool asks the quorum: DescribeQuorum, and DescribeCluster for the controllers (KIP-919).

Only the leader tracks replicas (from their Fetch requests); another controller answers
NOT_LEADER_OR_FOLLOWER naming the leader it knows. The leader counts itself as fetched and caught up
now (KafkaRaftClient does the same). Every controller answers DescribeCluster with EndpointType
CONTROLLER: the active controller's id and every voter's endpoint, so a tool given any one
controller (`--bootstrap-controller`) finds the leader to ask.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from protocol.errors import Errors
from protocol.rpc.describe_cluster import (
    ENDPOINT_TYPE_CONTROLLER,
    DescribeClusterRequest,
    DescribeClusterResponse,
)
from protocol.rpc.describe_quorum import DescribeQuorumRequest, DescribeQuorumResponse, ReplicaState

if TYPE_CHECKING:
    from controller.raft_client import RaftClient
    from kraftpy.config import QuorumVoter


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


def asks_for_controllers(req: DescribeClusterRequest, version: int) -> bool:
    return version >= 1 and req.EndpointType == ENDPOINT_TYPE_CONTROLLER


def describe_controllers(
    *, cluster_id: str, leader_id: int, voters: Sequence[QuorumVoter]
) -> DescribeClusterResponse:
    """The voters of controller.quorum.voters and the leader this controller knows (-1: none yet).

    Kafka lists the controllers that registered (RegisterControllerRecord); here only the active
    controller registers, so the static voter set is the full list (docs/kip-deviations.md)."""
    return DescribeClusterResponse(
        EndpointType=ENDPOINT_TYPE_CONTROLLER,
        ClusterId=cluster_id,
        ControllerId=leader_id,
        Brokers=[
            DescribeClusterResponse.DescribeClusterBroker(BrokerId=v.id, Host=v.host, Port=v.port)
            for v in sorted(voters, key=lambda v: v.id)
        ],
    )
