"""Scripted elections: timeouts, votes persisted before replies, split votes and backoff, resignation."""

from __future__ import annotations

from kraftpy.raft.core import LEADER_CHANGE
from kraftpy.raft.messages import (
    BeginQuorumEpochRequest,
    EndQuorumEpochRequest,
    Entry,
    VoteRequest,
    VoteResponse,
)
from kraftpy.raft.state import QuorumState, Role
from protocol.errors import Errors
from tests.raft.harness import CLUSTER_ID, ScriptedCluster


def test_single_voter_elects_itself_and_commits_its_leader_change() -> None:
    c = ScriptedCluster([1])
    c.now = 250
    ready = c.tick(1)
    assert c[1].role is Role.LEADER
    assert ready.quorum_state == QuorumState(leader_id=1, leader_epoch=1, voted_id=1, voters=frozenset({1}))
    assert [(e.offset, e.epoch, e.data) for e in ready.committed] == [(0, 1, LEADER_CHANGE)]
    ready = c.propose(1, b"a", b"b")
    assert [e.data for e in ready.committed] == [b"a", b"b"]


def test_timeout_makes_a_candidate_that_persists_its_vote_with_the_requests() -> None:
    c = ScriptedCluster([1, 2, 3])
    c.now = 99
    assert c.tick(1).messages == []  # the election timeout is at least 100 ms
    c.now = 200
    ready = c.tick(1)
    assert c[1].role is Role.CANDIDATE
    assert ready.quorum_state == QuorumState(
        leader_id=-1, leader_epoch=1, voted_id=1, voters=frozenset({1, 2, 3})
    )
    votes = [e for e in ready.messages if isinstance(e.message, VoteRequest)]
    assert sorted(e.destination for e in votes) == [2, 3]
    assert votes[0].message == VoteRequest(
        ClusterId=CLUSTER_ID, CandidateEpoch=1, CandidateId=1, LastOffsetEpoch=0, LastOffset=0
    )


def test_three_voters_elect_one_leader_and_commit_its_leader_change() -> None:
    c = ScriptedCluster([1, 2, 3])
    c.now = 200
    c.tick(1)
    granted = c.deliver()  # the vote requests
    assert {e.destination for e in granted} == {2, 3}
    for voter in (2, 3):
        assert c[voter].readies[-1].quorum_state.voted_id == 1  # persisted in the same Ready as the reply
        assert c[voter].role is Role.VOTED
    c.deliver()  # the grants
    assert c[1].role is Role.LEADER
    begins = [e for e in c.inflight if isinstance(e.message, BeginQuorumEpochRequest)]
    assert sorted(e.destination for e in begins) == [2, 3]
    c.run(50)
    assert c.leaders() == [1]
    assert all(n.core.leader_id == 1 and n.core.epoch == 1 for n in c.nodes.values())
    assert all(n.machine == [(0, 1, LEADER_CHANGE)] for n in c.nodes.values())


def test_vote_rules_one_vote_per_epoch_and_the_log_must_be_as_long() -> None:
    c = ScriptedCluster([1, 2, 3])
    request = VoteRequest(
        ClusterId=CLUSTER_ID, CandidateEpoch=1, CandidateId=1, LastOffsetEpoch=0, LastOffset=0
    )
    ready = c.inject(1, 3, request)
    assert ready.messages[0].message == VoteResponse(
        ErrorCode=Errors.NONE, LeaderId=-1, LeaderEpoch=1, VoteGranted=True
    )
    # The same candidate retrying is granted again, and nothing new is persisted.
    ready = c.inject(1, 3, request)
    assert ready.messages[0].message.VoteGranted and ready.quorum_state is None
    # Another candidate of the same epoch is refused.
    other = VoteRequest(
        ClusterId=CLUSTER_ID, CandidateEpoch=1, CandidateId=2, LastOffsetEpoch=0, LastOffset=0
    )
    assert not c.inject(2, 3, other).messages[0].message.VoteGranted
    # A voter whose log is longer refuses a candidate with a shorter one, even in a newer epoch.
    c[3].core.view.append((Entry(0, 1, b"x"),))
    short = VoteRequest(
        ClusterId=CLUSTER_ID, CandidateEpoch=2, CandidateId=2, LastOffsetEpoch=0, LastOffset=0
    )
    ready = c.inject(2, 3, short)
    assert not ready.messages[0].message.VoteGranted
    assert ready.quorum_state == QuorumState(leader_epoch=2, voters=frozenset({1, 2, 3}))  # epoch, no vote
    # Same end offset with a newer last epoch wins: epoch is compared first.
    newer = VoteRequest(
        ClusterId=CLUSTER_ID, CandidateEpoch=3, CandidateId=1, LastOffsetEpoch=2, LastOffset=0
    )
    assert c.inject(1, 3, newer).messages[0].message.VoteGranted


def test_split_vote_backs_off_exponentially_then_runs_in_a_new_epoch() -> None:
    c = ScriptedCluster([1, 2, 3])
    c.now = 200
    c.tick(1)
    c.tick(2)
    assert c[1].role is c[2].role is Role.CANDIDATE
    c.take(lambda e: e.destination == 3)  # voter 3 never hears either candidate
    c.stabilize()  # 1 and 2 refuse each other
    assert c[1].role is c[2].role is Role.CANDIDATE
    core = c[1].core
    assert not core._backing_off  # one refusal of three is not a lost election
    c.now = core._election_deadline
    c.take()
    c.tick(1)
    assert core._backing_off and core._election_retries == 1
    assert 0 <= core._backoff_deadline - c.now < 10 * 2  # step * random[0, 2^1)
    c.now = core._backoff_deadline
    ready = c.tick(1)
    assert core.role is Role.CANDIDATE and core.epoch == 2
    assert ready.quorum_state.voted_id == 1 and ready.quorum_state.leader_epoch == 2
    for retries in range(2, 8):
        c.take()
        c.now = core._election_deadline
        c.tick(1)
        assert core._election_retries == retries
        assert 0 <= core._backoff_deadline - c.now <= min(100, 10 * (2**retries - 1))
        c.now = core._backoff_deadline
        c.tick(1)
    c.take()
    c.run(600)
    assert len(c.leaders()) == 1


def test_rejection_by_a_majority_backs_off_at_once() -> None:
    c = ScriptedCluster([1, 2, 3])
    c.now = 200
    c.tick(1)
    for voter in (2, 3):
        c.inject(voter, 1, VoteResponse(ErrorCode=Errors.NONE, LeaderId=-1, LeaderEpoch=1, VoteGranted=False))
    assert c[1].core._backing_off


def test_leader_that_loses_its_majority_resigns_and_the_rest_elect_a_new_one() -> None:
    c = ScriptedCluster([1, 2, 3])
    c.run(400)
    [old] = c.leaders()
    old_epoch = c[old].core.epoch
    c.down.add(old)  # partitioned: its messages go nowhere, nothing reaches it
    for _ in range(300 // 5):
        c.now += 5
        ready = c.tick(old)
        c.take(lambda e: e.source == old)
        if c[old].role is Role.RESIGNED:
            break
    assert c[old].role is Role.RESIGNED
    assert c.now <= 200 + 5 + 400
    assert {e.destination for e in ready.messages if isinstance(e.message, EndQuorumEpochRequest)} == (
        {1, 2, 3} - {old}
    )
    c.run(600)
    [new] = c.leaders()
    assert new != old and c[new].core.epoch > old_epoch
    c.down.clear()
    c.run(300)
    assert c.leaders() == [new] and c[old].role is Role.FOLLOWER


def test_graceful_resign_hands_over_to_the_first_preferred_successor() -> None:
    c = ScriptedCluster([1, 2, 3])
    c.run(400)
    [old] = c.leaders()
    epoch = c[old].core.epoch
    ready = c._out(c[old], c[old].core.resign(c.now))
    ends = [e for e in ready.messages if isinstance(e.message, EndQuorumEpochRequest)]
    successors = ends[0].message.PreferredSuccessors
    assert sorted(successors) == sorted({1, 2, 3} - {old})
    assert c[old].role is Role.RESIGNED
    c.deliver()
    c.now += 1
    c.tick(successors[0])  # the first successor waits 0 ms
    assert c[successors[0]].role is Role.CANDIDATE
    c.stabilize()
    assert c.leaders() == [successors[0]] and c[successors[0]].core.epoch == epoch + 1


def test_a_restarted_leader_comes_back_resigned_and_a_restarted_voter_keeps_its_vote() -> None:
    c = ScriptedCluster([1, 2, 3])
    c.run(400)
    [leader] = c.leaders()
    c[leader].restart(c.now)
    assert c[leader].role is Role.RESIGNED
    follower = next(i for i in c.nodes if i != leader)
    c[follower].restart(c.now)
    assert c[follower].role is Role.FOLLOWER and c[follower].core.leader_id == leader
    c.run(800)
    assert len(c.leaders()) == 1


def test_an_unreachable_voter_counts_as_a_rejection_so_a_split_vote_backs_off_at_once() -> None:
    """Voters 2 and 3 run in the same epoch after leader 1 died: each rejects the other, and the vote
    request to 1 cannot be delivered. Both back off at once rather than after an election timeout."""
    c = ScriptedCluster([1, 2, 3])
    c.now = 200
    c.tick(2)
    c.tick(3)
    assert c[2].role is Role.CANDIDATE and c[3].role is Role.CANDIDATE
    c.deliver(lambda e: isinstance(e.message, VoteRequest) and e.destination in (2, 3))
    c.deliver(lambda e: isinstance(e.message, VoteResponse))
    assert not c[2].core._backing_off  # one rejection of three voters: it could still win
    ready = c[2].core.unreachable(1, c.now)
    assert ready.messages == []
    assert c[2].core._backing_off and c[2].role is Role.CANDIDATE


def test_a_lone_leader_ticks_only_for_the_minute_of_log_cleaning() -> None:
    from kraftpy.raft.cleaning import LOG_CLEAN_INTERVAL_MS

    c = ScriptedCluster([1])
    assert c[1].core.next_tick_ms() == 0  # a quorum of one runs at once
    c.now = 250
    c.tick(1)
    assert c[1].role is Role.LEADER
    # No election or fetch timer: only retention's minute, counted from the core's start.
    assert c[1].core.next_tick_ms() == LOG_CLEAN_INTERVAL_MS


def test_a_tick_at_the_minute_asks_the_shell_to_clean_the_log_once() -> None:
    from kraftpy.raft.cleaning import LOG_CLEAN_INTERVAL_MS

    c = ScriptedCluster([1])
    c.now = 250
    c.tick(1)
    assert c[1].role is Role.LEADER
    core = c[1].core
    assert not core.tick(LOG_CLEAN_INTERVAL_MS - 1).clean_log
    assert core.tick(LOG_CLEAN_INTERVAL_MS + 5).clean_log
    assert not core.tick(LOG_CLEAN_INTERVAL_MS + 6).clean_log  # once per minute
    assert core.next_tick_ms() == 2 * LOG_CLEAN_INTERVAL_MS + 5


def test_a_candidates_next_tick_is_its_vote_resend_or_election_deadline() -> None:
    c = ScriptedCluster([1, 2, 3])
    c.now = 200
    c.tick(1)
    assert c[1].role is Role.CANDIDATE
    due = c[1].core.next_tick_ms()
    assert 200 < due < 1 << 62
    c.now = due
    c.tick(1)
    # Something was done then (votes asked again, or a backoff begun), which set a later timer.
    assert c[1].core.next_tick_ms() > due
