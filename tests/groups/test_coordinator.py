"""The classic group coordinator's decisions, scripted: joins, syncs, heartbeats, leaves, commits,
the timer, and reading a partition back, with the clock passed in and no I/O."""

from __future__ import annotations

import itertools

import pytest

from broker.groups.coordinator import Effects, GroupConfig, GroupCoordinator, partition_for
from broker.groups.group import GroupState
from protocol.coordinator_records import decode_record
from protocol.errors import Errors
from protocol.rpc.heartbeat import HeartbeatRequest
from protocol.rpc.join_group import JoinGroupRequest, JoinGroupResponse
from protocol.rpc.leave_group import LeaveGroupRequest
from protocol.rpc.offset_commit import OffsetCommitRequest
from protocol.rpc.sync_group import SyncGroupRequest

G = "orders"
SESSION = 10_000


@pytest.mark.parametrize(
    ("group", "expected"),
    # from Java 17: Math.abs("...".hashCode()) % 50
    [("my-group", 12), ("console-consumer-12345", 6), ("g", 3), ("groupé-ü", 23), ("", 0), ("z" * 30, 12)],
)
def test_a_group_lives_where_kafka_puts_it(group: str, expected: int) -> None:
    assert partition_for(group, 50) == expected


class Script:
    """A coordinator owning every partition, a ticket counter, and the answers it gave."""

    def __init__(self, initial_delay_ms: int = 0) -> None:
        ids = itertools.count(1)
        self.core = GroupCoordinator(
            GroupConfig(offsets_topic_partitions=3, initial_rebalance_delay_ms=initial_delay_ms),
            lambda client: f"{client}-{next(ids)}",
        )
        for p in range(3):
            self.core.loaded_partition(p)
        self.tickets = itertools.count(1)
        self.answers: dict[int, object] = {}
        self.writes: list = []
        self.now = 1000

    def run(self, effects: Effects) -> Effects:
        for r in effects.replies:
            self.answers[r.ticket] = r.response
        self.writes += effects.writes
        return effects

    def flush(self, error: Errors = Errors.NONE) -> list:
        done, self.writes = self.writes, []
        for w in done:
            self.run(self.core.write_done(w.id, error, self.now))
        return done

    def join(
        self, member: str = "", protocols=(("range", b"sub"),), version: int = 9, client: str = "c"
    ) -> int:
        t = next(self.tickets)
        req = JoinGroupRequest(
            GroupId=G,
            SessionTimeoutMs=SESSION,
            RebalanceTimeoutMs=SESSION,
            MemberId=member,
            ProtocolType="consumer",
            Protocols=[JoinGroupRequest.JoinGroupRequestProtocol(Name=n, Metadata=m) for n, m in protocols],
        )
        self.run(self.core.join(t, req, version, client, "/127.0.0.1", self.now))
        return t

    def new_member(self, client: str = "c") -> str:
        t = self.join(client=client)
        first = self.answers[t]
        assert isinstance(first, JoinGroupResponse)
        assert first.ErrorCode == Errors.MEMBER_ID_REQUIRED
        return first.MemberId

    def sync(self, member: str, generation: int, assignments: dict[str, bytes] | None = None) -> int:
        t = next(self.tickets)
        req = SyncGroupRequest(
            GroupId=G,
            GenerationId=generation,
            MemberId=member,
            Assignments=[
                SyncGroupRequest.SyncGroupRequestAssignment(MemberId=m, Assignment=a)
                for m, a in (assignments or {}).items()
            ],
        )
        self.run(self.core.sync(t, req, 5, self.now))
        return t

    def heartbeat(self, member: str, generation: int) -> Errors:
        req = HeartbeatRequest(GroupId=G, GenerationId=generation, MemberId=member)
        return Errors(self.core.heartbeat(req, self.now).ErrorCode)

    def commit(self, member: str, generation: int, offsets: dict[tuple[str, int], int]) -> int:
        t = next(self.tickets)
        R = OffsetCommitRequest
        by_topic: dict[str, list] = {}
        for (topic, p), o in offsets.items():
            by_topic.setdefault(topic, []).append(
                R.OffsetCommitRequestPartition(PartitionIndex=p, CommittedOffset=o)
            )
        req = R(
            GroupId=G,
            GenerationIdOrMemberEpoch=generation,
            MemberId=member,
            Topics=[R.OffsetCommitRequestTopic(Name=n, Partitions=ps) for n, ps in by_topic.items()],
        )
        self.run(self.core.commit(t, req, 9, self.now))
        return t

    def committed(self, topic: str, p: int) -> int:
        err, found = self.core.fetch_offsets(G, [(topic, [p])])
        assert err is Errors.NONE
        c = found[0][1][0][1]
        return c.offset if c is not None else -1


def test_two_members_join_sync_and_get_their_assignments() -> None:
    s = Script()
    a = s.new_member("a")
    ta = s.join(a, client="a")
    first = s.answers[ta]
    assert (first.ErrorCode, first.GenerationId, first.Leader, first.MemberId) == (0, 1, a, a)
    assert [m.MemberId for m in first.Members] == [a]
    s.sync(a, 1, {a: b"all"})
    s.flush()
    assert s.core.groups[G].state is GroupState.STABLE

    b = s.new_member("b")
    tb = s.join(b, client="b")
    assert tb not in s.answers  # waits for the leader to rejoin
    assert s.heartbeat(a, 1) is Errors.REBALANCE_IN_PROGRESS
    ta2 = s.join(a, client="a")
    leader, follower = s.answers[ta2], s.answers[tb]
    assert (leader.GenerationId, follower.GenerationId) == (2, 2)
    assert leader.Leader == follower.Leader == a
    assert sorted(m.MemberId for m in leader.Members) == sorted([a, b]) and follower.Members == []

    tsb = s.sync(b, 2)
    assert tsb not in s.answers  # the follower waits for the leader's assignment
    tsa = s.sync(a, 2, {a: b"p0", b: b"p1"})
    assert tsa not in s.answers and tsb not in s.answers  # not before the group metadata is written
    (write,) = s.flush()
    assert decode_record(*write.records[0]).value.Generation == 2
    assert (s.answers[tsa].Assignment, s.answers[tsb].Assignment) == (b"p0", b"p1")
    assert s.heartbeat(b, 2) is Errors.NONE
    assert s.heartbeat(b, 1) is Errors.ILLEGAL_GENERATION
    assert s.heartbeat("nobody", 2) is Errors.UNKNOWN_MEMBER_ID


def test_a_failed_group_write_fails_the_sync_and_rebalances() -> None:
    s = Script()
    a = s.new_member()
    s.join(a)
    t = s.sync(a, 1, {a: b"x"})
    s.flush(Errors.NOT_LEADER_OR_FOLLOWER)
    assert s.answers[t].ErrorCode == Errors.NOT_LEADER_OR_FOLLOWER
    assert s.core.groups[G].state is GroupState.PREPARING_REBALANCE


def test_commits_count_only_once_written() -> None:
    s = Script()
    a = s.new_member()
    s.join(a)
    s.sync(a, 1, {a: b"x"})
    s.flush()
    t = s.commit(a, 1, {("t", 0): 42, ("t", 1): 7})
    assert s.committed("t", 0) == -1
    s.flush()
    assert [p.ErrorCode for p in s.answers[t].Topics[0].Partitions] == [0, 0]
    assert (s.committed("t", 0), s.committed("t", 1)) == (42, 7)

    t = s.commit(a, 1, {("t", 0): 50})
    s.flush(Errors.NOT_ENOUGH_REPLICAS)
    assert s.answers[t].Topics[0].Partitions[0].ErrorCode == Errors.COORDINATOR_NOT_AVAILABLE
    assert s.committed("t", 0) == 42
    t = s.commit(a, 0, {("t", 0): 51})
    assert s.answers[t].Topics[0].Partitions[0].ErrorCode == Errors.ILLEGAL_GENERATION


def test_a_simple_consumer_commits_without_joining() -> None:
    s = Script()
    t = s.commit("", -1, {("t", 3): 9})
    s.flush()
    assert s.answers[t].Topics[0].Partitions[0].ErrorCode == 0
    assert s.committed("t", 3) == 9


def test_a_silent_member_is_removed_and_the_group_rebalances() -> None:
    s = Script()
    a = s.new_member("a")
    s.join(a, client="a")
    s.sync(a, 1, {a: b""})
    s.flush()
    b = s.new_member("b")
    tb = s.join(b, client="b")
    s.now += SESSION + 1  # a never rejoins: the rebalance times out without it
    s.run(s.core.tick(s.now))
    answer = s.answers[tb]
    assert (answer.GenerationId, answer.Leader, [m.MemberId for m in answer.Members]) == (2, b, [b])
    assert a not in s.core.groups[G].members


def test_leaving_rebalances_the_rest() -> None:
    s = Script()
    a = s.new_member("a")
    s.join(a, client="a")
    s.sync(a, 1, {a: b""})
    s.flush()
    resp, effects = s.core.leave(
        LeaveGroupRequest(GroupId=G, Members=[LeaveGroupRequest.MemberIdentity(MemberId=a)]), 5, s.now
    )
    s.run(effects)
    assert [m.ErrorCode for m in resp.Members] == [0]
    assert s.core.groups[G].state is GroupState.EMPTY
    resp, _ = s.core.leave(LeaveGroupRequest(GroupId=G, MemberId=a), 1, s.now)
    assert resp.ErrorCode == Errors.UNKNOWN_MEMBER_ID


def test_the_first_rebalance_waits_the_initial_delay() -> None:
    s = Script(initial_delay_ms=3000)
    a = s.new_member()
    t = s.join(a)
    assert t not in s.answers
    s.now += 2999
    s.run(s.core.tick(s.now))
    assert t not in s.answers
    s.now += 1
    s.run(s.core.tick(s.now))
    assert s.answers[t].GenerationId == 1


@pytest.mark.parametrize(
    ("change", "code"),
    [
        ({"SessionTimeoutMs": 10}, Errors.INVALID_SESSION_TIMEOUT),
        ({"GroupId": ""}, Errors.INVALID_GROUP_ID),
        ({"MemberId": "made-up"}, Errors.UNKNOWN_MEMBER_ID),
    ],
)
def test_bad_joins_are_refused(change: dict, code: Errors) -> None:
    s = Script()
    req = JoinGroupRequest(
        GroupId=G,
        SessionTimeoutMs=SESSION,
        ProtocolType="consumer",
        Protocols=[JoinGroupRequest.JoinGroupRequestProtocol(Name="range", Metadata=b"")],
    ).model_copy(update=change)
    s.run(s.core.join(1, req, 9, "c", "/h", s.now))
    assert s.answers[1].ErrorCode == code
    assert G not in s.core.groups or not s.core.groups[G].members


def test_a_member_with_another_protocol_type_is_refused() -> None:
    s = Script()
    a = s.new_member()
    s.join(a)
    t = next(s.tickets)
    req = JoinGroupRequest(
        GroupId=G,
        SessionTimeoutMs=SESSION,
        ProtocolType="connect",
        Protocols=[JoinGroupRequest.JoinGroupRequestProtocol(Name="range", Metadata=b"")],
    )
    s.run(s.core.join(t, req, 9, "c", "/h", s.now))
    assert s.answers[t].ErrorCode == Errors.INCONSISTENT_GROUP_PROTOCOL


def test_a_partition_read_back_restores_groups_and_offsets() -> None:
    s = Script()
    a = s.new_member()
    s.join(a)
    s.sync(a, 1, {a: b"mine"})
    written = s.flush()
    s.commit(a, 1, {("t", 0): 5})
    written += s.flush()
    records = [decode_record(k, v) for w in written for k, v in w.records]

    p = s.core.partition_of(G)
    fresh = GroupCoordinator(GroupConfig(offsets_topic_partitions=3), lambda c: c)
    fresh.begin_load(p)
    assert fresh.owner_error(G) is Errors.COORDINATOR_LOAD_IN_PROGRESS
    fresh.load(p, records, s.now)
    fresh.loaded_partition(p)
    assert fresh.owner_error(G) is Errors.NONE
    group = fresh.groups[G]
    assert (group.state, group.generation, group.members[a].assignment) == (GroupState.STABLE, 1, b"mine")
    assert fresh.fetch_offsets(G, [("t", [0])])[1][0][1][0][1].offset == 5
    assert fresh.heartbeat(HeartbeatRequest(GroupId=G, GenerationId=1, MemberId=a), s.now).ErrorCode == 0


def test_losing_the_partition_answers_waiting_members_not_coordinator() -> None:
    s = Script()
    a = s.new_member("a")
    s.join(a, client="a")
    s.sync(a, 1, {a: b""})
    s.flush()
    b = s.new_member("b")
    tb = s.join(b, client="b")
    s.run(s.core.unload(s.core.partition_of(G)))
    assert s.answers[tb].ErrorCode == Errors.NOT_COORDINATOR
    assert s.core.owner_error(G) is Errors.NOT_COORDINATOR
    assert s.heartbeat(a, 1) is Errors.NOT_COORDINATOR
