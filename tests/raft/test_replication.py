"""Scripted replication: Fetch, the high watermark, observers, divergence and truncation, snapshots."""

from __future__ import annotations

from kraftpy.raft.core import LEADER_CHANGE
from kraftpy.raft.messages import (
    DivergingEpoch,
    Entry,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    SnapshotId,
    VoteRequest,
)
from kraftpy.raft.state import QuorumState, Role
from protocol.errors import Errors
from tests.raft.harness import CLUSTER_ID, ScriptedCluster


def elected(voters: list[int], observers: tuple[int, ...] = ()) -> tuple[ScriptedCluster, int]:
    c = ScriptedCluster(voters, observers)
    c.run(400)
    [leader] = c.leaders()
    return c, leader


def fetch(
    c: ScriptedCluster, replica: int, offset: int, last_epoch: int, epoch: int | None = None
) -> FetchRequest:
    return FetchRequest(
        ClusterId=CLUSTER_ID,
        ReplicaId=replica,
        CurrentLeaderEpoch=c[c.leaders()[0]].core.epoch if epoch is None else epoch,
        FetchOffset=offset,
        LastFetchedEpoch=last_epoch,
    )


def test_proposals_commit_on_every_node_including_observers() -> None:
    c, leader = elected([1, 2, 3], observers=(4, 5))
    c.propose(leader, b"a", b"b", b"c")
    c.run(100)
    expected = [e.data for e in c[leader].entries()]
    assert expected[-3:] == [b"a", b"b", b"c"]
    for node in c.nodes.values():
        assert [data for _, _, data in node.machine] == expected
        assert node.core.high_watermark == len(expected)
    assert c[4].role is Role.OBSERVER and c[4].core.leader_id == leader


def test_high_watermark_is_the_majority_and_observers_do_not_count() -> None:
    c, leader = elected([1, 2, 3], observers=(4, 5))
    hw = c[leader].core.high_watermark
    followers = sorted({1, 2, 3} - {leader})
    c.down.update(followers)
    c.propose(leader, b"a")
    c.run(100)  # the observers fetch the record, the followers do not
    assert c[4].store.end_offset == c[5].store.end_offset == hw + 1
    assert c[leader].core.high_watermark == hw
    c.down.discard(followers[0])
    c.run(50)
    assert c[leader].core.high_watermark == hw + 1


def test_high_watermark_waits_for_a_record_of_the_leaders_own_epoch() -> None:
    c = ScriptedCluster([1, 2, 3])
    # Voter 1 holds two records of epoch 1 that no one committed; it wins epoch 2.
    for node_id in (1, 2, 3):
        c[node_id].store.quorum_state = QuorumState(leader_epoch=1, voters=frozenset({1, 2, 3}))
    c[1].store.entries = [Entry(0, 1, b"old-0"), Entry(1, 1, b"old-1")]
    for node_id in (1, 2, 3):
        c[node_id].restart(0)
    c.now = 300
    c.tick(1)
    c.stabilize()
    assert c[1].role is Role.LEADER and c[1].core.epoch == 2
    c.take()
    # A follower that has copied the old records (but not the LeaderChange at offset 2) does not commit them.
    c.inject(2, 1, fetch(c, 2, 2, 1))
    assert c[1].core.high_watermark == 0
    c.inject(2, 1, fetch(c, 2, 3, 2))
    assert c[1].core.high_watermark == 3
    assert [data for _, _, data in c[1].machine] == [b"old-0", b"old-1", LEADER_CHANGE]


def restarted_with(majority: list[Entry], voter_2: list[Entry]) -> ScriptedCluster:
    """Voters 1 and 3 hold `majority`, voter 2 `voter_2`; all restart at epoch 3 and voter 1 wins epoch 4."""
    c = ScriptedCluster([1, 2, 3])
    voters = frozenset({1, 2, 3})
    c[1].store.entries = list(majority)
    c[3].store.entries = list(majority)
    c[2].store.entries = list(voter_2)
    for node_id in (1, 2, 3):
        c[node_id].store.quorum_state = QuorumState(leader_epoch=3, voters=voters)
        c[node_id].restart(0)
    c.now = 300
    c.tick(1)
    c.stabilize()
    assert c[1].role is Role.LEADER and c[1].core.epoch == 4
    c.take()
    return c


def test_diverging_follower_truncates_and_refetches() -> None:
    common = [Entry(0, 1, b"a"), Entry(1, 1, b"b")]
    # Voter 2 kept records of epoch 2 from a leader that never committed them.
    c = restarted_with(
        [*common, Entry(2, 3, b"x"), Entry(3, 3, b"y")],
        [*common, Entry(2, 2, b"p"), Entry(3, 2, b"q"), Entry(4, 2, b"r")],
    )
    ready = c.inject(2, 1, fetch(c, 2, 5, 2))
    response = ready.messages[0].message
    assert response.DivergingEpoch == DivergingEpoch(Epoch=1, EndOffset=2)
    assert response.Records == ()
    ready = c.inject(1, 2, response)
    assert ready.truncate_to == 2 and c[2].store.end_offset == 2
    c.run(100)
    assert c[2].entries() == c[1].entries()
    assert [data for _, _, data in c[2].machine] == [b"a", b"b", b"x", b"y", LEADER_CHANGE]


def test_a_follower_left_with_a_lone_older_epoch_truncates_it() -> None:
    """A split election at startup: voter 2 won epoch 1 and wrote its LeaderChange, voter 1 won epoch 2
    and went on. Voter 2's last epoch is older than anything in the leader's log; the leader must still
    name an epoch (>= 0: on Kafka's wire a negative one means no divergence) so that it truncates."""
    c = restarted_with([Entry(0, 2, b"a"), Entry(1, 2, b"b"), Entry(2, 3, b"x")], [Entry(0, 1, b"lone")])
    ready = c.inject(2, 1, fetch(c, 2, 1, 1))
    response = ready.messages[0].message
    assert response.DivergingEpoch == DivergingEpoch(Epoch=1, EndOffset=0)
    ready = c.inject(1, 2, response)
    assert ready.truncate_to == 0 and c[2].store.end_offset == 0
    c.run(100)
    assert c[2].entries() == c[1].entries()


def test_a_late_duplicate_fetch_response_is_ignored() -> None:
    c, leader = elected([1, 2, 3])
    follower = next(i for i in (1, 2, 3) if i != leader)
    c.propose(leader, b"a")
    c.now += 30
    c.tick(follower)
    [request] = c.take(lambda e: e.source == follower)
    [reply] = c.inject(follower, leader, request.message).messages
    c.inject(leader, follower, reply.message)
    end = c[follower].store.end_offset
    ready = c.inject(leader, follower, reply.message)  # the network duplicated it
    assert ready.appends == [] and c[follower].store.end_offset == end


def test_a_follower_fetches_again_at_once_after_records_but_not_after_an_empty_answer() -> None:
    # fetch_idle_ms=0, as the controller runs it (its leader parks empty fetches): records send
    # the next Fetch in the same Ready (it carries the end offset the leader commits with); an empty
    # answer, as from a leader shutting down, leaves the next one to the tick.
    c = ScriptedCluster([1, 2, 3], fetch_idle_ms=0)
    c.run(400)
    [leader] = c.leaders()
    follower = next(i for i in (1, 2, 3) if i != leader)
    c.run(50)
    c.take()
    c.propose(leader, b"a")
    end = c[follower].store.end_offset
    c.tick(follower)
    [request] = c.take(lambda e: e.source == follower)
    [reply] = c.inject(follower, leader, request.message).messages
    ready = c.inject(leader, follower, reply.message)
    assert ready.appends and c[follower].store.end_offset == end + 1
    [again] = [e.message for e in ready.messages]
    assert isinstance(again, FetchRequest) and again.FetchOffset == end + 1
    [empty] = c.inject(follower, leader, again).messages
    assert isinstance(empty.message, FetchResponse) and not empty.message.Records
    assert c.inject(leader, follower, empty.message).messages == []


def test_follower_below_the_log_start_fetches_the_snapshot() -> None:
    c, leader = elected([1, 2, 3])
    lagging = next(i for i in (1, 2, 3) if i != leader)
    c.down.add(lagging)
    c.propose(leader, *[bytes([i]) for i in range(20)])
    c.run(100)
    core = c[leader].core
    hw = core.high_watermark
    c._out(c[leader], core.create_snapshot(hw, c[leader].snapshot_state(hw), c.now))
    assert c[leader].store.log_start == hw
    c.propose(leader, b"after")
    c.run(20)
    # The lagging voter comes back with an empty log and a stale epoch.
    c.down.discard(lagging)
    c.run(500)
    sent = [e.message for r in c[lagging].readies for e in r.messages]
    fetches = [m for m in sent if isinstance(m, FetchSnapshotRequest)]
    assert fetches and fetches[0].SnapshotId == SnapshotId(hw, core.epoch)
    assert c[lagging].store.log_start == hw
    assert c[lagging].machine == c[leader].machine
    assert c[lagging].machine[-1][2] == b"after"


def test_fetch_at_the_log_start_with_an_older_epoch_gets_the_snapshot_id() -> None:
    c, leader = elected([1, 2, 3])
    c.propose(leader, b"a", b"b")
    c.run(50)
    hw = c[leader].core.high_watermark
    c._out(c[leader], c[leader].core.create_snapshot(hw, c[leader].snapshot_state(hw), c.now))
    follower = next(i for i in (1, 2, 3) if i != leader)
    response: FetchResponse = c.inject(follower, leader, fetch(c, follower, 0, 0)).messages[0].message
    assert response.SnapshotId == c[leader].store.snapshot.snapshot_id
    response = c.inject(follower, leader, fetch(c, follower, hw, 0)).messages[0].message
    assert response.SnapshotId is not None
    response = c.inject(follower, leader, fetch(c, follower, hw, c[leader].core.epoch)).messages[0].message
    assert response.SnapshotId is None and response.ErrorCode == Errors.NONE


def test_observer_is_never_asked_to_vote_and_refuses_if_it_is() -> None:
    c, leader = elected([1, 2, 3], observers=(4,))
    assert all(
        e.destination != 4
        for r in c[leader].readies
        for e in r.messages
        if isinstance(e.message, VoteRequest)
    )
    request = VoteRequest(
        ClusterId=CLUSTER_ID, CandidateEpoch=9, CandidateId=1, LastOffsetEpoch=1, LastOffset=9
    )
    ready = c.inject(1, 4, request)
    assert ready.messages[0].message.ErrorCode == Errors.INCONSISTENT_VOTER_SET
    assert not ready.persists_anything
    c.down.add(leader)
    c.run(1000)
    assert c[4].role is Role.OBSERVER and c[4].core.leader_id in c.leaders()


def test_batches_of_several_records_replicate_whole_and_commit_at_their_ends() -> None:
    """The controller appends one batch per operation: offsets advance by the batch's record count,
    followers store the same batches, and nothing of a batch is committed before all of it is."""
    c = ScriptedCluster([1, 2, 3])
    c.now = 200
    c.tick(1)
    c.stabilize()
    c.run(50)
    assert c.leaders() == [1]
    start = c[1].core.view.end_offset
    ready = c[1].core.append([b"abc", b"de"], c.now, counts=[3, 2])
    assert [(e.offset, e.count) for e in ready.appends] == [(start, 3), (start + 3, 2)]
    c[1].handle(ready)
    c.run(100)
    for node in (1, 2, 3):
        tail = [(e.offset, e.count, e.data) for e in c[node].entries()][-2:]
        assert tail == [(start, 3, b"abc"), (start + 3, 2, b"de")]
        assert c[node].core.high_watermark == start + 5
        assert c[node].core.applied == start + 5
