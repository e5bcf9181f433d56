"""A Hypothesis state machine driving the controller core with brokers that register, heartbeat,
place replicas, lose dirs, go quiet and come back, checking after every step that:

- no partition is led by a fenced, unregistered or shutting-down broker, or from an offline dir;
- the leader is in the ISR, the ISR is a non-empty subset of the replicas, directories line up;
- a reassignment under way names only replicas of its partition;
- the indexes agree with a scan of every partition;
- replaying every record written so far into an empty controller gives the same state.
"""

from __future__ import annotations

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from protocol.uuid import LOST, MIGRATING, UNASSIGNED
from tests.controller.control_context import SESSION_TIMEOUT_MS, ControlTestContext

BROKERS = st.integers(min_value=1, max_value=4)


class ControllerMachine(RuleBasedStateMachine):
    @initialize(
        unclean=st.booleans(), dir_counts=st.lists(st.sampled_from([2, 3, 1]), min_size=1, max_size=3)
    )
    def start(self, unclean: bool, dir_counts: list[int]) -> None:
        """A running cluster to start from: brokers 1.. with these many dirs each, unfenced."""
        self.ctx = ControlTestContext(unclean_leader_election_enable=unclean)
        self.dirs: dict[int, list[str]] = {}
        self.topics = 0
        for broker, ndirs in enumerate(dir_counts, start=1):
            self.dirs[broker] = [f"b{broker}d{k}" for k in range(ndirs)]
            self.ctx.register(broker, self.dirs[broker])
            self.ctx.heartbeat(broker)

    # ---- rules ---------------------------------------------------------------------------------

    @rule(
        broker=BROKERS,
        ndirs=st.sampled_from([2, 3, 1]),
        new_incarnation=st.booleans(),
        keep=st.integers(1, 3),
    )
    def register(self, broker: int, ndirs: int, new_incarnation: bool, keep: int) -> None:
        known = self.dirs.get(broker)
        if known is not None and not new_incarnation:
            dirs = known[: max(1, min(keep, len(known)))]
        else:
            dirs = [f"b{broker}d{k}" for k in range(ndirs)]
        result = self.ctx.register(broker, dirs, new_incarnation=new_incarnation)
        if result.response.ErrorCode == 0:
            self.dirs[broker] = dirs

    @precondition(lambda self: bool(self.dirs))
    @rule(
        data=st.data(),
        want_fence=st.sampled_from([False, False, False, True]),
        want_shut_down=st.sampled_from([False] * 7 + [True]),
        offline=st.sampled_from([set(), {0}, set(), {1}, set(), {0, 1}, set(), {2}]),
        lagging=st.sampled_from([False, False, False, True]),
    )
    def heartbeat(
        self, data: st.DataObject, want_fence: bool, want_shut_down: bool, offline: set[int], lagging: bool
    ) -> None:
        broker = data.draw(st.sampled_from(sorted(self.dirs)))
        dirs = self.dirs[broker]
        offline_names = [dirs[i] for i in sorted(offline) if i < len(dirs)]
        offset = (
            self.ctx.core.m.cluster.register_broker_record_offsets.get(broker, 0) - 1 if lagging else None
        )
        self._heartbeat(
            broker, want_fence=want_fence, want_shut_down=want_shut_down, offline=offline_names, offset=offset
        )

    def _heartbeat(self, broker: int, **kwargs: object) -> None:
        """A heartbeat that must never unfence a multi-dir broker with unplaced replicas (KIP-858)."""
        cluster = self.ctx.core.m.cluster
        before = cluster.registration(broker)
        unplaced = self.ctx.core.m.replication.unplaced_directories(before) if before else []
        self.ctx.heartbeat(broker, **kwargs)  # type: ignore[arg-type]
        after = cluster.registration(broker)
        if before is not None and before.fenced and after is not None and not after.fenced:
            assert not unplaced, f"broker {broker} unfenced with replicas in {unplaced}"

    @precondition(lambda self: bool(self.dirs))
    @rule()
    def everyone_heartbeats(self) -> None:
        """The steady state: every broker caught up, wanting to run."""
        for broker in sorted(self.dirs):
            self._heartbeat(broker)

    @rule(partitions=st.integers(1, 3), rf=st.integers(1, 3))
    def create_topic(self, partitions: int, rf: int) -> None:
        self.topics += 1
        self.ctx.create_topic(f"t{self.topics}", partitions, rf)

    @rule(data=st.data())
    def create_topic_by_hand(self, data: st.DataObject) -> None:
        registered = sorted(self.ctx.core.m.cluster.registrations)
        if not registered:
            return
        replicas = data.draw(st.lists(st.sampled_from(registered), min_size=1, max_size=3, unique=True))
        self.topics += 1
        self.ctx.create_topic(f"m{self.topics}", assignment=[replicas])

    @rule(broker=BROKERS, where=st.sampled_from(["online", "online", "unknown", "LOST"]), data=st.data())
    def assign(self, broker: int, where: str, data: st.DataObject) -> None:
        registration = self.ctx.core.m.cluster.registration(broker)
        if registration is None:
            return
        hosted = [
            tp
            for d in self.ctx.core.m.replication.replica_directories(broker)
            for tp in self.ctx.core.m.replication.partitions_on(broker, d)
        ]
        if not hosted:
            return
        chosen = data.draw(st.lists(st.sampled_from(hosted), min_size=1, max_size=4, unique=True))
        if where == "online" and registration.directories:
            name = self.ctx.dir_names[data.draw(st.sampled_from(registration.directories))]
        elif where == "LOST":
            name = "LOST"
        else:
            name = f"gone{broker}"
        self.ctx.assign(broker, name, [(tid, pid) for tid, pid in chosen])

    @precondition(lambda self: bool(self.dirs))
    @rule(data=st.data())
    def brokers_place_their_replicas(self, data: st.DataObject) -> None:
        """What a broker's AssignmentsManager does: every replica not in one of its online dirs
        gets assigned to one of them."""
        replication = self.ctx.core.m.replication
        for broker in sorted(self.dirs):
            r = self.ctx.core.m.cluster.registration(broker)
            if r is None or not r.directories:
                continue
            unplaced = [
                tp
                for d in replication.replica_directories(broker)
                if d not in r.directories
                for tp in replication.partitions_on(broker, d)
            ]
            if unplaced:
                target = self.ctx.dir_names[data.draw(st.sampled_from(r.directories))]
                self.ctx.assign(broker, target, unplaced)

    @rule(data=st.data())
    def leader_expands_isr(self, data: st.DataObject) -> None:
        replication = self.ctx.core.m.replication
        led = [
            (tid, pid)
            for tid, t in replication.topics.items()
            for pid, p in t.partitions.items()
            if p.leader >= 0
        ]
        if not led:
            return
        tid, pid = data.draw(st.sampled_from(led))
        p = replication.partition((tid, pid))
        assert p is not None
        new_isr = [b for b in p.replicas if b in p.isr or data.draw(st.booleans())]
        if p.leader not in new_isr:
            new_isr.append(p.leader)
        self.ctx.alter_partition(replication.topics[tid].name, pid, new_isr)

    @rule(data=st.data(), cancel=st.sampled_from([False, False, False, True]))
    def reassign(self, data: st.DataObject, cancel: bool) -> None:
        """AlterPartitionReassignments of one partition to brokers drawn from the registered ones,
        or its cancellation."""
        from protocol.rpc.alter_partition_reassignments import AlterPartitionReassignmentsRequest as A

        replication = self.ctx.core.m.replication
        parts = [(t.name, pid) for t in replication.topics.values() for pid in t.partitions]
        registered = sorted(self.ctx.core.m.cluster.registrations)
        if not parts or not registered:
            return
        name, pid = data.draw(st.sampled_from(parts))
        target = (
            None
            if cancel
            else data.draw(st.lists(st.sampled_from(registered), min_size=1, max_size=3, unique=True))
        )
        req = A(
            Topics=[
                A.ReassignableTopic(
                    Name=name, Partitions=[A.ReassignablePartition(PartitionIndex=pid, Replicas=target)]
                )
            ]
        )
        result = self.ctx.apply(self.ctx.core.alter_partition_reassignments(req, 0))
        if replication.reassigning_partition_count():
            event("a reassignment under way")
        if result.response.Responses[0].Partitions[0].ErrorCode == 0 and target is not None:
            event("a reassignment started or completed")

    @rule(ms=st.sampled_from([100, 2000, SESSION_TIMEOUT_MS // 2, SESSION_TIMEOUT_MS + 1]))
    def advance_clock(self, ms: int) -> None:
        self.ctx.advance(ms)
        for _ in range(5):
            if self.ctx.fence_stale().response is None:
                break

    @precondition(lambda self: self.topics > 0)
    @rule(data=st.data())
    def delete_topic(self, data: st.DataObject) -> None:
        names = sorted(self.ctx.core.m.replication.topics_by_name)
        if names:
            self.ctx.delete_topic(data.draw(st.sampled_from(names)))

    @rule()
    def preferred_election(self) -> None:
        self.ctx.elect_preferred()

    # ---- invariants ----------------------------------------------------------------------------

    @invariant()
    def partitions_are_sound(self) -> None:
        cluster = self.ctx.core.m.cluster
        unfenced_multi = sum(1 for r in cluster.registrations.values() if r.multi_dir and not r.fenced)
        event(f"unfenced multi-dir brokers: {min(unfenced_multi, 2)}")
        for topic in self.ctx.core.m.replication.topics.values():
            for pid, p in topic.partitions.items():
                where = f"{topic.name}-{pid} {p!r}"
                assert len(p.directories) == len(p.replicas), where
                assert p.isr, where
                assert set(p.isr) <= set(p.replicas) and len(set(p.isr)) == len(p.isr), where
                assert set(p.adding_replicas) | set(p.removing_replicas) <= set(p.replicas), where
                if p.leader == -1:
                    event("a partition without leader")
                    continue
                assert p.leader in p.isr, where
                r = cluster.registration(p.leader)
                if r is not None and r.multi_dir:
                    event("a partition led by a multi-dir broker")
                assert r is not None and not r.fenced and not r.in_controlled_shutdown, where
                directory = p.directory(p.leader)
                assert directory is not None and r.directory_online(directory), where
                if r.multi_dir:
                    assert directory not in (UNASSIGNED, MIGRATING, LOST), where

    @invariant()
    def indexes_match_a_full_scan(self) -> None:
        replication = self.ctx.core.m.replication
        replicas: dict[int, dict[object, set[object]]] = {}
        isr: dict[int, set[object]] = {}
        leaders: dict[int, set[object]] = {}
        leaderless = set()
        reassigning = set()
        for tid, topic in replication.topics.items():
            for pid, p in topic.partitions.items():
                tp = (tid, pid)
                if p.adding_replicas or p.removing_replicas:
                    reassigning.add(tp)
                for b, d in zip(p.replicas, p.directories, strict=True):
                    replicas.setdefault(b, {}).setdefault(d, set()).add(tp)
                for b in p.isr:
                    isr.setdefault(b, set()).add(tp)
                if p.leader == -1:
                    leaderless.add(tp)
                else:
                    leaders.setdefault(p.leader, set()).add(tp)
        state = replication.state()
        assert state[2:] == (replicas, isr, leaders, leaderless, reassigning)
        cluster = self.ctx.core.m.cluster
        owned = {d: b for b, r in cluster.registrations.items() for d in r.directories}
        assert cluster.directory_to_broker == owned

    @invariant()
    def replay_from_empty_gives_the_same_state(self) -> None:
        assert self.ctx.replayed_from_empty().state() == self.ctx.core.state()


ControllerMachine.TestCase.settings = settings(
    max_examples=50,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
test_controller_state_machine = ControllerMachine.TestCase
