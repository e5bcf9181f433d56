"""ZkControllerCore: the ZooKeeper-mode controller's decisions, after Kafka's KafkaController.

It holds what Kafka's ControllerContext holds: live brokers (with the epoch of their registration),
topics with their ids and assignments, each partition's leader and ISR with the version of its
state znode, the replicas on offline log dirs (KIP-112) and the topics being deleted. Each event
returns a `ZkControllerResult`: the ZooKeeper writes to make (every one checked by the shell against
`/controller_epoch`, partition states against their znode version) and the requests to send once
they are made.

Partition states change only in `replay`, which the shell calls with the writes ZooKeeper took. What
lives only in the controller's memory in Kafka too (live brokers, offline-dir replicas, brokers
shutting down, deletions in flight) moves when the event is handled.

An event sees its own changes through `_Event`: several state machine steps on one partition in one
event (an election, then a replica leaving the ISR) give one write, checked against the version
the event started from, and every request leaving with the event carries the state it ends with.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import structlog

from controller.zk.election import controlled_shutdown_leader, offline_partition_leader, preferred_leader
from controller.zk.model import (
    LEADER_DURING_DELETE,
    NO_LEADER,
    LeaderAndIsr,
    LiveBroker,
    TopicAssignment,
    TopicPartition,
)
from controller.zk.requests import BrokerRequest, PartitionStateOut, RequestBatch
from protocol.errors import Errors
from protocol.uuid import Uuid

log = structlog.get_logger("controller.zk")


# ---- writes ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PartitionStateWrite:
    """Create (`expected_version` None) or replace a partition's state znode; `state.zk_version` is
    the version the znode has once written."""

    tp: TopicPartition
    state: LeaderAndIsr
    expected_version: int | None


@dataclass(frozen=True, slots=True)
class DeleteTopicWrite:
    """The end of a topic deletion: its partition znodes, `/brokers/topics/<t>`, its config and its
    `/admin/delete_topics` entry."""

    topic: str
    partitions: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class DeleteLogDirEventWrite:
    """A `/log_dir_event_notification` child the controller has read."""

    name: str


@dataclass(frozen=True, slots=True)
class DeleteTopicRequestWrite:
    """An `/admin/delete_topics` entry naming no topic."""

    topic: str


ZkWrite = PartitionStateWrite | DeleteTopicWrite | DeleteLogDirEventWrite | DeleteTopicRequestWrite


@dataclass(frozen=True)
class ZkControllerResult:
    writes: list[ZkWrite] = field(default_factory=list)
    requests: list[BrokerRequest] = field(default_factory=list)
    response: Any = None


@dataclass(frozen=True, slots=True)
class AlterPartitionItem:
    tp: TopicPartition
    leader_epoch: int
    new_isr: tuple[int, ...]
    partition_epoch: int
    leader_recovery_state: int = 0


@dataclass(frozen=True, slots=True)
class AlterPartitionAnswer:
    tp: TopicPartition
    error: Errors
    state: LeaderAndIsr | None = None


@dataclass(frozen=True)
class ZkSnapshot:
    """What a new controller reads from ZooKeeper before it acts (KafkaController.initializeControllerContext)."""

    live: Mapping[int, LiveBroker]
    topics: Mapping[str, TopicAssignment]
    states: Mapping[TopicPartition, LeaderAndIsr]
    topics_to_delete: Iterable[str] = ()
    log_dir_events: Iterable[str] = ()


# ---- the controller ----------------------------------------------------------------------------


class ZkControllerCore:
    def __init__(
        self,
        controller_id: int,
        epoch: int,
        *,
        unclean_leader_election: bool = False,
        imbalance_percentage: int = 10,
    ) -> None:
        self.controller_id = controller_id
        self.epoch = epoch
        self.unclean_leader_election = unclean_leader_election
        self.imbalance_percentage = imbalance_percentage
        self.live: dict[int, LiveBroker] = {}
        self.shutting_down: set[int] = set()
        self.topics: dict[str, TopicAssignment] = {}
        self.states: dict[TopicPartition, LeaderAndIsr] = {}
        self.offline_dirs: dict[int, set[TopicPartition]] = {}
        """replicasOnOfflineDirs: per broker, the partitions it answered KAFKA_STORAGE_ERROR for."""
        self.deleting: dict[str, set[tuple[int, int]]] = {}
        """Topics being deleted: the (partition, broker) replicas not yet confirmed deleted."""

    # ---- views ---------------------------------------------------------------------------------

    def partitions(self) -> list[TopicPartition]:
        return [(t, p) for t in sorted(self.topics) for p in sorted(self.topics[t].partitions)]

    def replicas(self, tp: TopicPartition) -> tuple[int, ...]:
        topic = self.topics.get(tp[0])
        return topic.partitions.get(tp[1], ()) if topic is not None else ()

    def topic_id(self, tp: TopicPartition) -> Uuid:
        return self.topics[tp[0]].topic_id

    def is_replica_online(
        self, broker: int, tp: TopicPartition, *, include_shutting_down: bool = False
    ) -> bool:
        """Kafka's isReplicaOnline: the broker is live (and not shutting down, unless asked) and
        the replica is not in one of its offline log dirs."""
        if broker not in self.live or (broker in self.shutting_down and not include_shutting_down):
            return False
        return tp not in self.offline_dirs.get(broker, ())

    def offline_replicas(self, tp: TopicPartition) -> tuple[int, ...]:
        return tuple(
            b for b in self.replicas(tp) if not self.is_replica_online(b, tp, include_shutting_down=True)
        )

    def preferred_replica_imbalance_count(self) -> int:
        """PreferredReplicaImbalanceCount: partitions not led by their first replica (leaderless included)."""
        return sum(
            1
            for tp in self.partitions()
            if tp[0] not in self.deleting
            and (replicas := self.replicas(tp))
            and ((st := self.states.get(tp)) is None or st.leader != replicas[0])
        )

    def offline_partition_count(self) -> int:
        """OfflinePartitionsCount: partitions without a leader that can serve."""
        return sum(
            1
            for tp in self.partitions()
            if tp[0] not in self.deleting
            and (
                (st := self.states.get(tp)) is None
                or not self.is_replica_online(st.leader, tp, include_shutting_down=True)
            )
        )

    def partitions_on(self, broker: int) -> list[TopicPartition]:
        return [tp for tp in self.partitions() if broker in self.replicas(tp)]

    # ---- replay --------------------------------------------------------------------------------

    def replay(self, writes: Iterable[ZkWrite]) -> None:
        """The writes ZooKeeper took: only now does the state they describe become the controller's."""
        for w in writes:
            if isinstance(w, PartitionStateWrite):
                self.states[w.tp] = w.state
            elif isinstance(w, DeleteTopicWrite):
                topic = self.topics.pop(w.topic, None)
                self.deleting.pop(w.topic, None)
                for p in w.partitions if topic is None else topic.partitions:
                    self.states.pop((w.topic, p), None)
                    for offline in self.offline_dirs.values():
                        offline.discard((w.topic, p))

    # ---- events --------------------------------------------------------------------------------

    def on_become_controller(self, snapshot: ZkSnapshot) -> ZkControllerResult:
        """onControllerFailover: read everything, tell every broker everything, elect where needed,
        and take the replicas of brokers that died before this controller took office out of the
        ISRs (ReplicaStateMachine.startup's offline transition): no broker event will come for them,
        and a leader cannot drop them itself, since an ISR naming a dead broker is ineligible."""
        self.live = dict(snapshot.live)
        self.topics = dict(snapshot.topics)
        self.states = dict(snapshot.states)
        self.offline_dirs = {}
        self.shutting_down = set()
        ev = _Event(self)
        # The notifications are stale: the full LeaderAndIsr below finds every offline replica.
        ev.writes += [DeleteLogDirEventWrite(n) for n in snapshot.log_dir_events]
        ev.batch.add_update_metadata(
            set(self.live), [ev.out(tp) for tp in self.partitions() if tp in self.states]
        )
        for b in self.live:
            ev.batch.full_leader_and_isr.add(b)
        for tp in self.partitions():
            st = self.states.get(tp)
            if st is not None:
                ev.batch.add_leader_and_isr(self._live_replicas(tp), ev.out(tp))
        dead = [(tp, b) for tp in self.partitions() for b in self.replicas(tp) if b not in self.live]
        self._on_replicas_offline(ev, dead)
        for name in snapshot.topics_to_delete:
            self._start_deletion(ev, name)
        return ev.result()

    def on_broker_change(self, live_now: Mapping[int, LiveBroker]) -> ZkControllerResult:
        """The children of `/brokers/ids` changed: brokers came, went, or came back with a new epoch."""
        new = sorted(b for b in live_now if b not in self.live)
        dead = sorted(b for b in self.live if b not in live_now)
        bounced = sorted(b for b in live_now if b in self.live and self.live[b].epoch != live_now[b].epoch)
        if not (new or dead or bounced):
            # Same brokers, new data (endpoints): the metadata caches learn it.
            changed = any(self.live[b] != live_now[b] for b in live_now)
            self.live = dict(live_now)
            ev = _Event(self)
            if changed:
                ev.batch.add_update_metadata(set(self.live), [])
            return ev.result()
        log.info("brokers changed", new=new, dead=dead, bounced=bounced)
        ev = _Event(self)
        if bounced:
            for b in bounced:
                del self.live[b]
            ev.batch.live = dict(self.live)
            self._on_broker_failure(ev, bounced)
        for b in dead:
            self.live.pop(b, None)
        ev.batch.live = dict(self.live)
        if dead:
            self._on_broker_failure(ev, dead)
        for b in new + bounced:
            self.live[b] = live_now[b]
        ev.batch.live = dict(self.live)
        if new or bounced:
            self._on_broker_startup(ev, sorted(new + bounced))
        return ev.result()

    def on_topic_change(self, topics: Mapping[str, TopicAssignment]) -> ZkControllerResult:
        """The children of `/brokers/topics` changed: `topics` is every topic there, read."""
        ev = _Event(self)
        new = sorted(t for t in topics if t not in self.topics)
        for t in sorted(t for t in self.topics if t not in topics):
            # Removed from ZooKeeper behind the controller's back: forget it.
            ev.writes.append(DeleteTopicWrite(t, tuple(self.topics[t].partitions)))
        for t in new:
            self.topics[t] = topics[t]
        if new:
            log.info("new topics", topics=new)
            self._elect(ev, only=[tp for tp in self.partitions() if tp[0] in new])
        return ev.result()

    def on_topic_deletion(self, names: Iterable[str]) -> ZkControllerResult:
        """Children of `/admin/delete_topics`: start deleting each topic named there."""
        ev = _Event(self)
        for name in sorted(set(names)):
            if name not in self.topics:
                ev.writes.append(DeleteTopicRequestWrite(name))
            elif name not in self.deleting:
                self._start_deletion(ev, name)
        self._maybe_finish_deletions(ev)
        return ev.result()

    def on_stop_replica_response(
        self, broker: int, errors: Mapping[TopicPartition, Errors]
    ) -> ZkControllerResult:
        ev = _Event(self)
        for (topic, p), err in errors.items():
            if err == Errors.NONE and topic in self.deleting:
                self.deleting[topic].discard((p, broker))
        self._maybe_finish_deletions(ev)
        return ev.result()

    def on_log_dir_event(self, notifications: Mapping[str, int]) -> ZkControllerResult:
        """`/log_dir_event_notification` children (name -> broker id): ask those brokers, with a
        LeaderAndIsr for every partition they host, which of their replicas are offline."""
        ev = _Event(self)
        ev.writes += [DeleteLogDirEventWrite(n) for n in sorted(notifications)]
        brokers = sorted({b for b in notifications.values() if b in self.live})
        if brokers:
            log.info("log dir failure notified", brokers=brokers)
        for b in brokers:
            for tp in self.partitions_on(b):
                if tp in self.states and tp[0] not in self.deleting:
                    ev.batch.add_leader_and_isr([b], ev.out(tp))
        return ev.result()

    def on_leader_and_isr_response(
        self, broker: int, errors: Mapping[TopicPartition, Errors]
    ) -> ZkControllerResult:
        """KIP-112: a broker's KAFKA_STORAGE_ERROR answers say which of its replicas are offline."""
        ev = _Event(self)
        if broker not in self.live:
            return ev.result()
        previous = set(self.offline_dirs.get(broker, set()))
        online = {tp for tp, e in errors.items() if e == Errors.NONE}
        offline = {tp for tp, e in errors.items() if e == Errors.KAFKA_STORAGE_ERROR}
        current = (previous - online) | offline
        self.offline_dirs[broker] = current
        newly = sorted(current - previous)
        if newly:
            log.info("replicas on offline log dirs", broker=broker, partitions=[f"{t}-{p}" for t, p in newly])
            self._on_replicas_offline(ev, [(tp, broker) for tp in newly])
        return ev.result()

    def on_alter_partition(
        self, broker_id: int, broker_epoch: int, items: Iterable[AlterPartitionItem]
    ) -> ZkControllerResult:
        """A leader's ISR change (KafkaController.processAlterPartition in ZooKeeper mode)."""
        ev = _Event(self)
        broker = self.live.get(broker_id)
        if broker is None or (broker_epoch != -1 and broker.epoch != broker_epoch):
            return ev.result(response=(Errors.STALE_BROKER_EPOCH, []))
        answers: list[AlterPartitionAnswer] = []
        changed: list[TopicPartition] = []
        for item in items:
            tp = item.tp
            st = ev.state(tp)
            if st is None or tp[0] in self.deleting:
                answers.append(AlterPartitionAnswer(tp, Errors.UNKNOWN_TOPIC_OR_PARTITION))
            elif st.leader != broker_id:
                answers.append(AlterPartitionAnswer(tp, Errors.NOT_LEADER_OR_FOLLOWER))
            elif item.leader_epoch != st.leader_epoch:
                answers.append(AlterPartitionAnswer(tp, Errors.FENCED_LEADER_EPOCH))
            elif item.partition_epoch != st.zk_version:
                answers.append(AlterPartitionAnswer(tp, Errors.INVALID_UPDATE_VERSION))
            elif tuple(item.new_isr) == st.isr:
                answers.append(AlterPartitionAnswer(tp, Errors.NONE, st))
            elif any(not self.is_replica_online(r, tp) or r not in self.replicas(tp) for r in item.new_isr):
                answers.append(AlterPartitionAnswer(tp, Errors.INELIGIBLE_REPLICA))
            else:
                new = ev.set_state(tp, st.new_isr(tuple(item.new_isr), self.epoch))
                answers.append(AlterPartitionAnswer(tp, Errors.NONE, new))
                changed.append(tp)
        ev.batch.add_update_metadata(set(self.live), [ev.out(tp) for tp in changed])
        return ev.result(response=(Errors.NONE, answers))

    def on_controlled_shutdown(self, broker_id: int, broker_epoch: int) -> ZkControllerResult:
        """A broker going down cleanly: its leaderships move, its follower replicas leave the ISRs.
        The response lists the partitions it still leads (ControlledShutdownResponse's
        RemainingPartitions); it asks again until none are left."""
        ev = _Event(self)
        broker = self.live.get(broker_id)
        if broker is None:
            return ev.result(response=(Errors.BROKER_NOT_AVAILABLE, []))
        if broker_epoch != -1 and broker.epoch != broker_epoch:
            return ev.result(response=(Errors.STALE_BROKER_EPOCH, []))
        self.shutting_down.add(broker_id)
        followers: list[tuple[TopicPartition, int]] = []
        for tp in self.partitions_on(broker_id):
            st = ev.state(tp)
            if st is None or len(self.replicas(tp)) <= 1 or tp[0] in self.deleting:
                continue
            if st.leader == broker_id:
                leader, isr = controlled_shutdown_leader(
                    self.replicas(tp),
                    st.isr,
                    lambda b, tp=tp: self.is_replica_online(b, tp),
                    self.shutting_down,
                )
                if leader is not None:
                    ev.set_state(tp, st.new_leader_and_isr(leader, isr, self.epoch))
                    ev.batch.add_leader_and_isr(
                        self._live_replicas(tp, include_shutting_down=True), ev.out(tp)
                    )
            else:
                followers.append((tp, broker_id))
        self._offline_replica_transition(ev, followers)
        remaining = [
            tp
            for tp in self.partitions_on(broker_id)
            if (st := ev.state(tp)) is not None and st.leader == broker_id and len(self.replicas(tp)) > 1
        ]
        return ev.result(response=(Errors.NONE, remaining))

    def on_preferred_election_check(self) -> ZkControllerResult:
        """auto.leader.rebalance.enable: move leadership back to preferred replicas on brokers whose
        imbalance passes leader.imbalance.per.broker.percentage."""
        ev = _Event(self)
        by_preferred: dict[int, list[TopicPartition]] = {}
        for tp in self.partitions():
            replicas = self.replicas(tp)
            if replicas and tp in self.states and tp[0] not in self.deleting:
                by_preferred.setdefault(replicas[0], []).append(tp)
        for broker, tps in sorted(by_preferred.items()):
            if broker not in self.live or broker in self.shutting_down:
                continue
            imbalanced = [tp for tp in tps if self.states[tp].leader != broker]
            if not imbalanced or len(imbalanced) * 100 <= self.imbalance_percentage * len(tps):
                continue
            for tp in imbalanced:
                st = ev.state(tp)
                assert st is not None
                if (
                    preferred_leader(
                        self.replicas(tp), st.isr, lambda b, tp=tp: self.is_replica_online(b, tp)
                    )
                    == broker
                ):
                    ev.set_state(tp, st.new_leader_and_isr(broker, st.isr, self.epoch))
                    ev.batch.add_leader_and_isr(self._live_replicas(tp), ev.out(tp))
        return ev.result()

    # ---- state machine steps -------------------------------------------------------------------

    def _live_replicas(self, tp: TopicPartition, *, include_shutting_down: bool = False) -> list[int]:
        return [
            b
            for b in self.replicas(tp)
            if self.is_replica_online(b, tp, include_shutting_down=include_shutting_down)
        ]

    def _elect(self, ev: _Event, only: Iterable[TopicPartition] | None = None) -> None:
        """triggerOnlinePartitionStateChange: new partitions get their first leader and ISR, those
        whose leader cannot serve get a new one from the ISR."""
        for tp in self.partitions() if only is None else list(only):
            if tp[0] in self.deleting:
                continue
            st = ev.state(tp)
            replicas = self.replicas(tp)
            live = self._live_replicas(tp)
            if st is None:
                if not live:
                    log.warning(
                        "no replica of a new partition is online; it waits", partition=f"{tp[0]}-{tp[1]}"
                    )
                    continue
                ev.set_state(tp, LeaderAndIsr(live[0], 0, tuple(live), self.epoch), create=True)
                ev.batch.add_leader_and_isr(live, ev.out(tp, is_new=True))
            elif not self.is_replica_online(st.leader, tp):
                leader, isr = offline_partition_leader(
                    replicas,
                    st.isr,
                    lambda b, tp=tp: self.is_replica_online(b, tp),
                    unclean=self.unclean_leader_election,
                )
                if leader is None:
                    continue
                if leader not in st.isr:
                    log.warning("unclean leader election", partition=f"{tp[0]}-{tp[1]}", leader=leader)
                ev.set_state(tp, st.new_leader_and_isr(leader, isr, self.epoch))
                ev.batch.add_leader_and_isr(live, ev.out(tp))

    def _on_broker_startup(self, ev: _Event, brokers: list[int]) -> None:
        for b in brokers:
            self.offline_dirs.pop(b, None)
            self.shutting_down.discard(b)
        existing = set(self.live) - set(brokers)
        ev.batch.add_update_metadata(existing, [])
        ev.batch.add_update_metadata(set(brokers), [ev.out(tp) for tp in self.partitions() if ev.state(tp)])
        for b in brokers:
            ev.batch.full_leader_and_isr.add(b)
            for tp in self.partitions_on(b):
                if ev.state(tp) is not None and tp[0] not in self.deleting:
                    ev.batch.add_leader_and_isr([b], ev.out(tp))
        self._elect(ev)
        for topic, pending in self.deleting.items():
            for p, b in pending:
                if b in brokers:
                    ev.batch.add_stop_replica(b, (topic, p), -1, True)

    def _on_broker_failure(self, ev: _Event, brokers: list[int]) -> None:
        for b in brokers:
            self.offline_dirs.pop(b, None)
            self.shutting_down.discard(b)
        offline = [(tp, b) for b in brokers for tp in self.partitions_on(b)]
        self._on_replicas_offline(ev, offline)

    def _on_replicas_offline(self, ev: _Event, replicas: list[tuple[TopicPartition, int]]) -> None:
        """onReplicasBecomeOffline: new leaders where the leader went, then the replicas leave the ISRs."""
        before = len(ev.changed)
        self._elect(ev)
        self._offline_replica_transition(ev, [(tp, b) for tp, b in replicas if tp[0] not in self.deleting])
        if len(ev.changed) == before:
            ev.batch.add_update_metadata(set(self.live), [])

    def _offline_replica_transition(self, ev: _Event, replicas: list[tuple[TopicPartition, int]]) -> None:
        """OfflineReplica: stop the replica (without deleting it) and take it out of the ISR; a
        leader going out leaves the partition leaderless, and the last ISR member stays in it."""
        for tp, b in replicas:
            st = ev.state(tp)
            if st is None:
                continue
            ev.batch.add_stop_replica(b, tp, st.leader_epoch, False)
            if b not in st.isr and st.leader != b:
                # Nothing to write, but every broker must learn the replica is offline now.
                ev.batch.add_update_metadata(set(self.live), [ev.out(tp)])
                continue
            isr = st.isr if st.isr == (b,) else tuple(r for r in st.isr if r != b)
            leader = NO_LEADER if st.leader == b else st.leader
            ev.set_state(tp, st.new_leader_and_isr(leader, isr, self.epoch))
            ev.batch.add_leader_and_isr([r for r in self.replicas(tp) if r != b], ev.out(tp))

    def _start_deletion(self, ev: _Event, topic: str) -> None:
        assignment = self.topics.get(topic)
        if assignment is None:
            ev.writes.append(DeleteTopicRequestWrite(topic))
            return
        log.info("deleting topic", topic=topic)
        self.deleting[topic] = {(p, b) for p, rs in assignment.partitions.items() for b in rs}
        parts = []
        for p in sorted(assignment.partitions):
            tp = (topic, p)
            st = ev.state(tp) or LeaderAndIsr(NO_LEADER, 0, (), self.epoch)
            parts.append(
                PartitionStateOut(
                    tp, assignment.topic_id, replace(st, leader=LEADER_DURING_DELETE), self.replicas(tp)
                )
            )
            for b in self.replicas(tp):
                ev.batch.add_stop_replica(b, tp, st.leader_epoch, True)
        ev.batch.add_update_metadata(set(self.live), parts)

    def _maybe_finish_deletions(self, ev: _Event) -> None:
        for topic, pending in sorted(self.deleting.items()):
            if not pending:
                ev.writes.append(DeleteTopicWrite(topic, tuple(sorted(self.topics[topic].partitions))))


class _Event:
    """One event's view: the controller's states with this event's changes over them."""

    def __init__(self, core: ZkControllerCore) -> None:
        self.core = core
        self.changed: dict[TopicPartition, tuple[LeaderAndIsr, int | None]] = {}
        self.writes: list[ZkWrite] = []
        self.batch = RequestBatch(dict(core.live))

    def state(self, tp: TopicPartition) -> LeaderAndIsr | None:
        entry = self.changed.get(tp)
        return entry[0] if entry is not None else self.core.states.get(tp)

    def set_state(self, tp: TopicPartition, state: LeaderAndIsr, *, create: bool = False) -> LeaderAndIsr:
        original = self.core.states.get(tp)
        expected = None if create or original is None else original.zk_version
        new = replace(state, zk_version=0 if expected is None else expected + 1)
        self.changed[tp] = (new, expected)
        return new

    def out(self, tp: TopicPartition, *, is_new: bool = False) -> PartitionStateOut:
        st = self.state(tp)
        assert st is not None
        return PartitionStateOut(tp, self.core.topic_id(tp), st, self.core.replicas(tp), is_new)

    def result(self, response: Any = None) -> ZkControllerResult:
        writes: list[ZkWrite] = [PartitionStateWrite(tp, st, exp) for tp, (st, exp) in self.changed.items()]
        writes += self.writes
        # Every request leaves with the state the event ends with.
        batch = self.batch
        for per in (*batch.leader_and_isr.values(), *batch.update_metadata.values()):
            for tp, ps in per.items():
                final = self.changed.get(tp)
                if final is not None and ps.state.leader != LEADER_DURING_DELETE:
                    per[tp] = replace(ps, state=final[0])
        offline = {tp: self.core.offline_replicas(tp) for per in batch.update_metadata.values() for tp in per}
        return ZkControllerResult(writes, batch.build(offline), response)
