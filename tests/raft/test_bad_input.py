"""Bad input is answered with Kafka's error code; nothing is persisted and nothing raises."""

from __future__ import annotations

import pytest

from kraftpy.raft.messages import (
    BeginQuorumEpochRequest,
    EndQuorumEpochRequest,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    Message,
    SnapshotId,
    VoteRequest,
)
from kraftpy.raft.state import QuorumState
from protocol.errors import Errors
from tests.raft.harness import CLUSTER_ID, ScriptedCluster

# The cluster below is led by voter 1 in epoch 1; every request is sent from `source` to `destination`.
LEADER, EPOCH = 1, 2


def vote(**kw: object) -> VoteRequest:
    base = dict(
        ClusterId=CLUSTER_ID, CandidateEpoch=EPOCH + 1, CandidateId=2, LastOffsetEpoch=1, LastOffset=1
    )
    return VoteRequest(**{**base, **kw})


def fetch(**kw: object) -> FetchRequest:
    base = dict(
        ClusterId=CLUSTER_ID, ReplicaId=2, CurrentLeaderEpoch=EPOCH, FetchOffset=0, LastFetchedEpoch=0
    )
    return FetchRequest(**{**base, **kw})


def begin(**kw: object) -> BeginQuorumEpochRequest:
    return BeginQuorumEpochRequest(**{**dict(ClusterId=CLUSTER_ID, LeaderId=2, LeaderEpoch=EPOCH + 1), **kw})


CASES: list[tuple[str, int, int, Message, Errors]] = [
    ("vote wrong cluster", 2, 3, vote(ClusterId="other"), Errors.INCONSISTENT_CLUSTER_ID),
    ("vote stale epoch", 2, 3, vote(CandidateEpoch=EPOCH - 1, LastOffsetEpoch=0), Errors.FENCED_LEADER_EPOCH),
    ("vote negative offset", 2, 3, vote(LastOffset=-1), Errors.INVALID_REQUEST),
    ("vote negative last epoch", 2, 3, vote(LastOffsetEpoch=-1), Errors.INVALID_REQUEST),
    (
        "vote last epoch not below candidate epoch",
        2,
        3,
        vote(LastOffsetEpoch=EPOCH + 1),
        Errors.INVALID_REQUEST,
    ),
    ("vote from unknown voter", 7, 3, vote(CandidateId=7), Errors.INCONSISTENT_VOTER_SET),
    ("vote candidate id is not the sender", 2, 3, vote(CandidateId=1), Errors.INVALID_REQUEST),
    ("vote to an observer", 2, 4, vote(), Errors.INCONSISTENT_VOTER_SET),
    ("fetch wrong cluster", 2, LEADER, fetch(ClusterId="other"), Errors.INCONSISTENT_CLUSTER_ID),
    ("fetch stale epoch", 2, LEADER, fetch(CurrentLeaderEpoch=EPOCH - 1), Errors.FENCED_LEADER_EPOCH),
    ("fetch future epoch", 2, LEADER, fetch(CurrentLeaderEpoch=5), Errors.UNKNOWN_LEADER_EPOCH),
    ("fetch negative offset", 2, LEADER, fetch(FetchOffset=-3), Errors.INVALID_REQUEST),
    ("fetch negative last epoch", 2, LEADER, fetch(LastFetchedEpoch=-1), Errors.INVALID_REQUEST),
    ("fetch replica id is not the sender", 2, LEADER, fetch(ReplicaId=3), Errors.INVALID_REQUEST),
    ("fetch from a follower", 3, 2, fetch(ReplicaId=3), Errors.NOT_LEADER_OR_FOLLOWER),
    ("begin wrong cluster", 2, 3, begin(ClusterId="other"), Errors.INCONSISTENT_CLUSTER_ID),
    ("begin stale epoch", 2, 3, begin(LeaderEpoch=EPOCH - 1), Errors.FENCED_LEADER_EPOCH),
    ("begin from unknown voter", 9, 3, begin(LeaderId=9), Errors.INCONSISTENT_VOTER_SET),
    ("begin second leader of an epoch", 2, 3, begin(LeaderEpoch=EPOCH), Errors.INVALID_REQUEST),
    (
        "end wrong cluster",
        2,
        3,
        EndQuorumEpochRequest(ClusterId="x", LeaderId=2, LeaderEpoch=EPOCH, PreferredSuccessors=()),
        Errors.INCONSISTENT_CLUSTER_ID,
    ),
    (
        "snapshot that does not exist",
        2,
        LEADER,
        FetchSnapshotRequest(
            ClusterId=CLUSTER_ID, ReplicaId=2, CurrentLeaderEpoch=EPOCH, SnapshotId=SnapshotId(5, 1)
        ),
        Errors.SNAPSHOT_NOT_FOUND,
    ),
]


@pytest.fixture
def cluster() -> ScriptedCluster:
    c = ScriptedCluster([1, 2, 3], observers=(4,))
    for node in c.nodes.values():  # start every node in epoch 1 so that epoch 1 can be stale
        node.store.quorum_state = QuorumState(leader_epoch=EPOCH - 1, voters=frozenset({1, 2, 3}))
        node.restart(0)
    c.now = 300
    c.tick(LEADER)
    c.stabilize()
    c.run(50)
    assert c.leaders() == [LEADER] and c[LEADER].core.epoch == EPOCH
    return c


@pytest.mark.parametrize(
    ("name", "source", "destination", "message", "error"), CASES, ids=[c[0] for c in CASES]
)
def test_bad_request_gets_its_error_code_and_changes_nothing(
    cluster: ScriptedCluster, name: str, source: int, destination: int, message: Message, error: Errors
) -> None:
    node = cluster[destination]
    before = (node.core.role, node.core.epoch, node.core.leader_id, node.core.voted_id, node.store.end_offset)
    ready = cluster.inject(source, destination, message)
    assert [e.message.ErrorCode for e in ready.messages] == [error]
    assert [e.destination for e in ready.messages] == [source]
    assert not ready.persists_anything
    assert (
        node.core.role,
        node.core.epoch,
        node.core.leader_id,
        node.core.voted_id,
        node.store.end_offset,
    ) == before


def test_malformed_fetch_responses_are_dropped(cluster: ScriptedCluster) -> None:
    from kraftpy.raft.messages import Entry

    follower = cluster[2]
    end = follower.store.end_offset
    bogus = [
        FetchResponse(
            ErrorCode=Errors.NONE, LeaderId=1, LeaderEpoch=EPOCH, FetchOffset=end, LastFetchedEpoch=9
        ),
        FetchResponse(
            ErrorCode=Errors.NONE,
            LeaderId=1,
            LeaderEpoch=EPOCH,
            FetchOffset=end,
            LastFetchedEpoch=EPOCH,
            Records=(Entry(end + 3, EPOCH, b"gap"),),
        ),
        FetchResponse(
            ErrorCode=Errors.NONE,
            LeaderId=1,
            LeaderEpoch=EPOCH,
            FetchOffset=end,
            LastFetchedEpoch=EPOCH,
            Records=(Entry(end, EPOCH + 4, b"future epoch"),),
        ),
        FetchResponse(
            ErrorCode=Errors.NONE, LeaderId=3, LeaderEpoch=EPOCH, FetchOffset=end, LastFetchedEpoch=EPOCH
        ),
    ]
    for response in bogus:
        ready = cluster.inject(1 if response.LeaderId == 1 else 3, 2, response)
        assert not ready.persists_anything and ready.messages == []
    assert follower.store.end_offset == end
