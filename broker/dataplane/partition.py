"""One partition's replication state on this broker, sans-IO (the decisions of Kafka's Partition.scala).

Holds what the metadata says (leader, epochs, replicas, the committed ISR), what an AlterPartition
in flight proposes, the high watermark, and, on the leader, every follower's progress. The process
shell feeds it events (metadata, appends, follower fetches, clock ticks) and acts on its answers
(complete produce requests, send AlterPartition, wake fetches). No clocks, no disks, no sockets.

Rules, as in Kafka 3.9 (reference 7.9):
- the HW is the smallest LEO among the leader and the replicas of the *maximal* ISR (committed ISR
  plus a pending expansion), and of followers caught up enough to be about to join; it never moves back;
- a produce with acks=all is refused with NOT_ENOUGH_REPLICAS when the committed ISR is below
  min.insync.replicas; it completes once the HW passes its last offset, with
  NOT_ENOUGH_REPLICAS_AFTER_APPEND if the maximal ISR has shrunk below min.insync.replicas meanwhile;
- a follower is out of sync unless its LEO equals the leader's or it caught up within
  replica.lag.time.max.ms; one joins the ISR when its LEO reaches the HW and the leader epoch's
  start offset, and its broker is unfenced with the epoch it fetched with;
- one ISR change at a time is in flight; until the controller (or the metadata) commits it, a
  shrink keeps counting the leaving replica and an expansion already counts the joining one.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING

from kraftpy.image import TopicIdPartition
from protocol.errors import Errors, KafkaError

if TYPE_CHECKING:
    from broker.core.partition_state import PartitionState

UNKNOWN_OFFSET = -1


class Role(Enum):
    NONE = "none"
    LEADER = "leader"
    FOLLOWER = "follower"
    OFFLINE = "offline"


@dataclass(slots=True)
class FollowerProgress:
    """The leader's view of one follower (Kafka's Replica state)."""

    broker_id: int
    log_end_offset: int = UNKNOWN_OFFSET
    last_caught_up_ms: int = 0
    last_fetch_leader_leo: int = UNKNOWN_OFFSET
    last_fetch_ms: int = 0
    broker_epoch: int = -1

    def update(self, fetch_offset: int, leader_leo: int, now_ms: int, broker_epoch: int) -> None:
        # Caught up now if it asked for the leader's end; caught up as of its previous fetch if it
        # now asks from where the leader's log ended then.
        if fetch_offset >= leader_leo:
            self.last_caught_up_ms = max(self.last_caught_up_ms, now_ms)
        elif fetch_offset >= self.last_fetch_leader_leo:
            self.last_caught_up_ms = max(self.last_caught_up_ms, self.last_fetch_ms)
        self.log_end_offset = fetch_offset
        self.last_fetch_leader_leo = leader_leo
        self.last_fetch_ms = now_ms
        self.broker_epoch = broker_epoch

    def is_caught_up(self, leader_leo: int, now_ms: int, lag_ms: int) -> bool:
        return self.log_end_offset == leader_leo or now_ms - self.last_caught_up_ms <= lag_ms


@dataclass(frozen=True, slots=True)
class IsrChange:
    """An AlterPartition the leader wants sent: `new_isr` at the epochs it was computed from."""

    topic_partition: TopicIdPartition
    leader_epoch: int
    partition_epoch: int
    new_isr: tuple[int, ...]
    broker_epochs: tuple[int, ...]
    """Index-aligned with new_isr (-1 when unknown), for AlterPartition v3's NewIsrWithEpochs."""


@dataclass(frozen=True, slots=True)
class FollowerFetchResult:
    high_watermark_moved: bool
    isr_change: IsrChange | None


@dataclass(slots=True)
class Partition:
    topic_partition: TopicIdPartition
    local_broker_id: int
    role: Role = Role.NONE
    leader_id: int = -1
    leader_epoch: int = -1
    partition_epoch: int = -1
    replicas: tuple[int, ...] = ()
    isr: tuple[int, ...] = ()
    pending_isr: tuple[int, ...] | None = None
    high_watermark: int = 0
    log_end_offset: int = 0
    log_start_offset: int = 0
    leader_epoch_start_offset: int = UNKNOWN_OFFSET
    followers: dict[int, FollowerProgress] = field(default_factory=dict)
    eligible_replicas: frozenset[int] = frozenset()
    """Brokers that may join the ISR (unfenced, not shutting down), with their registered epochs."""
    broker_epochs: dict[int, int] = field(default_factory=dict)
    refused: frozenset[int] = frozenset()
    """Newcomers the controller found ineligible (INELIGIBLE_REPLICA): not proposed again until the
    metadata changes, or every fetch of theirs would send another AlterPartition."""

    # ---- metadata -------------------------------------------------------------------------------

    @property
    def is_leader(self) -> bool:
        return self.role is Role.LEADER

    @property
    def maximal_isr(self) -> tuple[int, ...]:
        """Committed ISR plus a pending expansion (a pending shrink still counts the leaving replica)."""
        if self.pending_isr is None:
            return self.isr
        extra = tuple(b for b in self.pending_isr if b not in self.isr)
        return self.isr + extra

    @property
    def isr_change_in_flight(self) -> bool:
        return self.pending_isr is not None

    def set_cluster_view(self, eligible: Collection[int], broker_epochs: dict[int, int]) -> None:
        self.eligible_replicas = frozenset(eligible)
        self.broker_epochs = dict(broker_epochs)
        self.refused = frozenset()

    def become_leader(
        self,
        reg: PartitionState,
        *,
        log_end_offset: int,
        log_start_offset: int,
        high_watermark: int,
        now_ms: int,
    ) -> bool:
        """Take leadership as the registration says; True when this starts a new leader epoch here.

        The caller has assigned `reg.leader_epoch` to start at `log_end_offset` in the log's epoch
        cache. Follower progress restarts unknown: the HW waits until every ISR member has fetched.
        """
        new_epoch = not self.is_leader or reg.leader_epoch != self.leader_epoch
        self.role = Role.LEADER
        self._take_registration(reg)
        self.log_end_offset = log_end_offset
        self.log_start_offset = log_start_offset
        if new_epoch:
            self.leader_epoch_start_offset = log_end_offset
            self.high_watermark = min(max(self.high_watermark, high_watermark), log_end_offset)
            self.followers = {
                b: FollowerProgress(b, last_caught_up_ms=now_ms if b in reg.isr else 0)
                for b in reg.replicas
                if b != self.local_broker_id
            }
        else:
            for b in reg.replicas:
                if b != self.local_broker_id and b not in self.followers:
                    self.followers[b] = FollowerProgress(b)
            for b in list(self.followers):
                if b not in reg.replicas:
                    del self.followers[b]
        return new_epoch

    def become_follower(
        self, reg: PartitionState, *, log_end_offset: int, log_start_offset: int, high_watermark: int
    ) -> bool:
        """Follow `reg.leader`; True when the leader or its epoch changed (the fetcher must restart)."""
        changed = (
            self.role is not Role.FOLLOWER
            or reg.leader_epoch != self.leader_epoch
            or (reg.leader != self.leader_id)
        )
        self.role = Role.FOLLOWER
        self._take_registration(reg)
        self.followers = {}
        self.leader_epoch_start_offset = UNKNOWN_OFFSET
        self.log_end_offset = log_end_offset
        self.log_start_offset = log_start_offset
        self.high_watermark = min(max(self.high_watermark, high_watermark), log_end_offset)
        return changed

    def update_registration(self, reg: PartitionState) -> bool:
        """A change with the same leader and leader epoch (ISR, directories); True when the ISR changed."""
        before = self.isr
        self._take_registration(reg)
        for b in reg.replicas:
            if self.is_leader and b != self.local_broker_id and b not in self.followers:
                self.followers[b] = FollowerProgress(b)
        return before != self.isr

    def _take_registration(self, reg: PartitionState) -> None:
        if reg.partition_epoch > self.partition_epoch or reg.leader_epoch != self.leader_epoch:
            # A newer state than the one a pending ISR change was computed from: the change is
            # either in it already or refused (its reply will be ignored as stale).
            self.pending_isr = None
        self.leader_id = reg.leader
        self.leader_epoch = reg.leader_epoch
        self.partition_epoch = reg.partition_epoch
        self.replicas = tuple(reg.replicas)
        self.isr = tuple(reg.isr)
        self.refused = frozenset()

    def go_offline(self) -> None:
        """The log's dir failed: nothing is served from here until the metadata moves the replica."""
        self.role = Role.OFFLINE
        self.pending_isr = None
        self.followers = {}

    def stop(self) -> None:
        self.role = Role.NONE
        self.pending_isr = None
        self.followers = {}

    # ---- requests -------------------------------------------------------------------------------

    def check_leader_epoch(self, current_leader_epoch: int) -> None:
        """A request's CurrentLeaderEpoch against ours (-1 skips the check)."""
        if current_leader_epoch < 0:
            return
        if current_leader_epoch < self.leader_epoch:
            raise KafkaError(
                Errors.FENCED_LEADER_EPOCH,
                f"{self.topic_partition}: request epoch {current_leader_epoch} < leader epoch {self.leader_epoch}",
            )
        if current_leader_epoch > self.leader_epoch:
            raise KafkaError(
                Errors.UNKNOWN_LEADER_EPOCH,
                f"{self.topic_partition}: request epoch {current_leader_epoch} > leader epoch {self.leader_epoch}",
            )

    def check_leader(self) -> None:
        if self.role is Role.OFFLINE:
            raise KafkaError(Errors.KAFKA_STORAGE_ERROR, f"{self.topic_partition} is on an offline log dir")
        if not self.is_leader:
            raise KafkaError(
                Errors.NOT_LEADER_OR_FOLLOWER,
                f"broker {self.local_broker_id} is not the leader of {self.topic_partition} (leader {self.leader_id})",
            )

    def check_leader_at(self, current_leader_epoch: int) -> None:
        """A read of the leader (Fetch, ListOffsets, OffsetForLeaderEpoch) in Kafka's order
        (Partition.localLogWithEpochOrThrow): offline dir, then the request's epoch, then leadership.
        A follower that learned of its new leader first gets UNKNOWN_LEADER_EPOCH, which it retries
        at once, rather than NOT_LEADER_OR_FOLLOWER, which it retries after replica.fetch.backoff.ms."""
        if self.role is Role.OFFLINE:
            raise KafkaError(Errors.KAFKA_STORAGE_ERROR, f"{self.topic_partition} is on an offline log dir")
        self.check_leader_epoch(current_leader_epoch)
        self.check_leader()

    def check_produce(self, acks: int, min_insync_replicas: int) -> None:
        """Before appending: leader here, and enough in-sync replicas for acks=all."""
        self.check_leader()
        if acks == -1 and len(self.isr) < min_insync_replicas:
            raise KafkaError(
                Errors.NOT_ENOUGH_REPLICAS,
                f"{self.topic_partition}: ISR {list(self.isr)} is smaller than min.insync.replicas "
                f"{min_insync_replicas}",
            )

    def acks_all_status(self, required_offset: int, min_insync_replicas: int) -> Errors | None:
        """Whether a produce waiting for offsets below `required_offset` is done: None to keep waiting."""
        if self.role is Role.OFFLINE:
            return Errors.KAFKA_STORAGE_ERROR
        if not self.is_leader:
            return Errors.NOT_LEADER_OR_FOLLOWER
        if self.high_watermark < required_offset:
            return None
        if len(self.maximal_isr) < min_insync_replicas:
            return Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        return Errors.NONE

    # ---- leader progress ------------------------------------------------------------------------

    def leader_appended(self, log_end_offset: int) -> bool:
        """The local log grew; True when the HW moved (only possible when the ISR is the leader alone)."""
        self.log_end_offset = max(self.log_end_offset, log_end_offset)
        return self.maybe_increment_high_watermark(now_ms=None, lag_ms=0)

    def maybe_increment_high_watermark(self, now_ms: int | None, lag_ms: int) -> bool:
        if not self.is_leader:
            return False
        maximal = self.maximal_isr
        new_hw = self.log_end_offset
        for b, f in self.followers.items():
            if f.log_end_offset >= new_hw:
                continue
            waiting = b in maximal or (
                now_ms is not None
                and b in self.eligible_replicas
                and f.log_end_offset >= 0
                and f.is_caught_up(self.log_end_offset, now_ms, lag_ms)
            )
            if waiting:
                new_hw = f.log_end_offset
        if new_hw > self.high_watermark:
            self.high_watermark = new_hw
            return True
        return False

    def follower_fetched(
        self, replica_id: int, fetch_offset: int, broker_epoch: int, now_ms: int, lag_ms: int
    ) -> FollowerFetchResult:
        """A follower fetched from `fetch_offset` (its LEO): update its progress, the HW, maybe expand the ISR."""
        follower = self.followers.get(replica_id)
        if follower is None:
            raise KafkaError(
                Errors.NOT_LEADER_OR_FOLLOWER,
                f"broker {replica_id} is not a replica of {self.topic_partition} (replicas {list(self.replicas)})",
            )
        follower.update(fetch_offset, self.log_end_offset, now_ms, broker_epoch)
        moved = self.maybe_increment_high_watermark(now_ms, lag_ms)
        return FollowerFetchResult(moved, self._maybe_expand_isr(follower))

    def _maybe_expand_isr(self, follower: FollowerProgress) -> IsrChange | None:
        b = follower.broker_id
        if self.isr_change_in_flight or b in self.isr:
            return None
        if follower.log_end_offset < self.high_watermark:
            return None
        if follower.log_end_offset < self.leader_epoch_start_offset:
            return None
        if not self._isr_eligible(b, follower.broker_epoch):
            return None
        return self._propose((*self.isr, b))

    def _isr_eligible(self, broker_id: int, fetch_broker_epoch: int) -> bool:
        if broker_id not in self.eligible_replicas or broker_id in self.refused:
            return False
        registered = self.broker_epochs.get(broker_id, -1)
        return fetch_broker_epoch < 0 or registered < 0 or fetch_broker_epoch == registered

    def out_of_sync_replicas(self, now_ms: int, lag_ms: int) -> list[int]:
        return [
            b
            for b in self.isr
            if b != self.local_broker_id
            and (f := self.followers.get(b)) is not None
            and not f.is_caught_up(self.log_end_offset, now_ms, lag_ms)
        ]

    def maybe_shrink_isr(self, now_ms: int, lag_ms: int) -> IsrChange | None:
        """The periodic ISR check: propose dropping followers that fell behind."""
        if not self.is_leader or self.isr_change_in_flight:
            return None
        lagging = self.out_of_sync_replicas(now_ms, lag_ms)
        if not lagging:
            return None
        return self._propose(tuple(b for b in self.isr if b not in lagging))

    def _propose(self, new_isr: Iterable[int]) -> IsrChange:
        isr = tuple(new_isr)
        self.pending_isr = isr
        epochs = tuple(self._known_broker_epoch(b) for b in isr)
        return IsrChange(self.topic_partition, self.leader_epoch, self.partition_epoch, isr, epochs)

    def _known_broker_epoch(self, broker_id: int) -> int:
        f = self.followers.get(broker_id)
        if f is not None and f.broker_epoch >= 0:
            return f.broker_epoch
        return self.broker_epochs.get(broker_id, -1)

    def isr_change_committed(
        self, leader_id: int, leader_epoch: int, partition_epoch: int, isr: Iterable[int]
    ) -> bool:
        """The controller accepted an ISR change; True when it applied (it may be older than our state)."""
        if leader_epoch != self.leader_epoch or partition_epoch < self.partition_epoch:
            self.pending_isr = None
            return False
        if leader_id != self.local_broker_id:
            self.pending_isr = None
            return False
        self.isr = tuple(isr)
        self.partition_epoch = partition_epoch
        self.pending_isr = None
        return True

    def isr_change_failed(self, *, ineligible: bool = False) -> None:
        """The controller refused it or it could not be sent: the committed ISR stands; try again later
        (with `ineligible`, not for the newcomers it named until the metadata changes)."""
        if ineligible and self.pending_isr is not None:
            self.refused |= {b for b in self.pending_isr if b not in self.isr}
        self.pending_isr = None

    # ---- follower progress ----------------------------------------------------------------------

    def follower_appended(
        self, log_end_offset: int, leader_high_watermark: int, leader_log_start: int
    ) -> bool:
        """Fetched data landed here; True when our HW moved (consumers reading from us are not served)."""
        self.log_end_offset = log_end_offset
        self.log_start_offset = max(self.log_start_offset, min(leader_log_start, log_end_offset))
        new_hw = min(leader_high_watermark, log_end_offset)
        if new_hw > self.high_watermark:
            self.high_watermark = new_hw
            return True
        return False

    def truncated(self, log_end_offset: int) -> None:
        self.log_end_offset = log_end_offset
        self.high_watermark = min(self.high_watermark, log_end_offset)
