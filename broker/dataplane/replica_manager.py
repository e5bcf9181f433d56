"""The broker's replicas at work (the data half of Kafka's ReplicaManager): leaders append and serve,
followers copy, the high watermark and the ISR move.

Each hosted partition is a sans-IO `Partition` (the decisions) plus its `LocalLog` (the bytes, only
touched on its log dir's thread). This class turns metadata into leader/follower transitions,
appends produced batches, answers fetches, completes acks=all produces as the HW passes them, and
sends ISR changes to the controller. A partition whose log dir failed answers KAFKA_STORAGE_ERROR
until the metadata moves it; its parked produces are answered the same way at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, TypeVar

import structlog

from broker.core.partition_state import PartitionState
from broker.dataplane.alter_partition import AlterPartitionManager
from broker.dataplane.checkpoints import HighWatermarkCheckpoints
from broker.dataplane.fetcher import ReplicaFetcherManager
from broker.dataplane.host import DataPlaneHost
from broker.dataplane.hosted_partition import HostedPartition, PartitionKey, now_ms
from broker.dataplane.leader_tail import LeaderTails
from broker.dataplane.metadata_response import min_insync_replicas
from broker.dataplane.partition import Partition, Role
from broker.dataplane.purgatory import FetchWaiters, ProducePurgatory, wait_for_status
from broker.dataplane.settings import ReplicaSettings
from broker.dataplane.topic_stats import BrokerTopicStats, IsrStats
from broker.dataplane.truncation import EpochEnd, diverging_epoch
from broker.storage import AppendResult, LogDirOfflineError, OffsetOutOfRangeError, PartitionLog, ReadResult
from broker.storage.partition_log import EpochEndOffset
from kraftpy.config import KafkaConfig
from kraftpy.image import MetadataImage, TopicIdPartition
from kraftpy.security.tls import peer_context
from protocol.errors import Errors, KafkaError
from protocol.uuid import Uuid

if TYPE_CHECKING:
    from broker.log_dir_failure import LogDirFailure

log = structlog.get_logger("broker.dataplane")

T = TypeVar("T")

ISR_CHECK_MIN_MS = 50
OFFLINE_MOVE_WAIT_MS = 500
"""How long a produce to a partition whose dir just failed waits for the metadata to name its new
leader (as long as a follower's fetch waits for data by default)."""


@dataclass(frozen=True, slots=True)
class AppendOutcome:
    error: Errors
    base_offset: int = -1
    log_start_offset: int = -1
    message: str | None = None
    current_leader: tuple[int, int] | None = None
    """With NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH: (leader, leader epoch) as the metadata
    named them when the answer was decided (KIP-951's CurrentLeader)."""


_MOVED = (Errors.NOT_LEADER_OR_FOLLOWER, Errors.FENCED_LEADER_EPOCH)


@dataclass(frozen=True, slots=True)
class FetchRead:
    """One partition's part of a fetch answer."""

    error: Errors
    high_watermark: int = -1
    log_start_offset: int = -1
    records: bytes = b""
    diverging: EpochEnd | None = None
    leader: tuple[int, int] | None = None
    message: str | None = None


class ReplicaManager:
    def __init__(self, host: DataPlaneHost) -> None:
        self.host = host
        self.node_id = host.node_id
        self.settings = ReplicaSettings.from_config(host.config)
        self.listener_name = broker_listener_name(host.config)
        self.peer_ssl = _peer_ssl(host.config, self.listener_name)
        self.partitions: dict[PartitionKey, HostedPartition] = {}
        self.purgatory = ProducePurgatory()
        self.topic_stats = BrokerTopicStats()
        self.isr_stats = IsrStats()
        self.fetch_waiters = FetchWaiters()
        self.checkpoints = HighWatermarkCheckpoints(host)
        self.alter_partition = AlterPartitionManager(host, self._isr_change_done)
        self.fetchers = ReplicaFetcherManager(self)
        self.tails = LeaderTails(self.settings.leader_tail_max_bytes, self.settings.fetch_max_bytes)
        self._unreadable: set[PartitionKey] = set()
        """Hosted replicas whose log a checked read found a damaged batch in (see unreadable_replicas)."""
        self._image = MetadataImage.EMPTY
        self._publish_lock = asyncio.Lock()
        self._tasks: list[asyncio.Task[None]] = []
        self._stopped = False

    # ---- lifecycle ------------------------------------------------------------------------------

    async def start(self) -> None:
        await self.checkpoints.load()
        self._tasks.append(asyncio.create_task(self._isr_check_loop(), name="isr-expiration"))
        self._tasks.append(asyncio.create_task(self._hw_checkpoint_loop(), name="hw-checkpoint"))

    async def stop(self) -> None:
        self._stopped = True
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()
        await self.fetchers.stop()
        await self.alter_partition.stop()
        for hp in self.partitions.values():
            self.purgatory.fail_all(hp.key, Errors.NOT_LEADER_OR_FOLLOWER)
        self.fetch_waiters.notify_all()
        await self.checkpoints.write(self._high_watermarks())

    # ---- metadata ---------------------------------------------------------------------------------

    @property
    def image(self) -> MetadataImage:
        return self._image

    @property
    def broker_epoch(self) -> int:
        return self.host.broker_epoch

    def update_metadata(self, image: MetadataImage) -> None:
        """The metadata cache: topic names and ids, topic configs, brokers and their epochs.

        Every image moves it, also one that touches none of our partitions: it still changes who
        may join an ISR, where a leader listens and what Metadata answers.
        """
        self._image = image
        eligible, epochs = _cluster_view(image)
        for hp in self.partitions.values():
            hp.state.set_cluster_view(eligible, epochs)

    async def apply(
        self,
        states: Iterable[PartitionState],
        deleted: Iterable[TopicIdPartition] = (),
        *,
        full: bool = False,
    ) -> None:
        """Make each partition in `states` what it says (leader or follower, epochs, ISR) and stop
        serving those `deleted`; `full`: `states` is every partition hosted here, stop the others."""
        async with self._publish_lock:
            states = list(states)
            if full:
                wanted = {st.key for st in states}
                for key in [k for k in self.partitions if k not in wanted]:
                    self._remove(self.partitions[key])
            for tp in deleted:
                hp = self.partitions.get((tp.topic_id, tp.partition))
                if hp is not None:
                    self._remove(hp)
            eligible, epochs = _cluster_view(self._image)
            todo = []
            for st in states:
                hp = self.partitions.get(st.key)
                if hp is None:
                    hp = HostedPartition(st.tp, Partition(st.tp, self.node_id))
                    hp.state.set_cluster_view(eligible, epochs)
                    self.partitions[st.key] = hp
                hp.tp = st.tp
                if (
                    st.leader == self.node_id
                    and hp.becoming_leader is None
                    and not (hp.state.is_leader and hp.state.leader_epoch == st.leader_epoch)
                ):
                    # The image handlers answer from names us already: requests wait for the role.
                    hp.becoming_leader = asyncio.Event()
                todo.append(self._transition(hp, st))
            # Concurrently: a stalled dir holds back only the transitions of its own partitions.
            await asyncio.gather(*todo)

    async def _transition(self, hp: HostedPartition, st: PartitionState) -> None:
        try:
            await self._bring_in_line(hp, st)
        finally:
            ev, hp.becoming_leader = hp.becoming_leader, None
            if ev is not None:
                ev.set()

    async def logs_changed(self, tps: Iterable[TopicIdPartition]) -> None:
        """The log manager created, promoted or replaced these partitions' logs: apply their last
        state again, now that the log is there (or is another one)."""
        async with self._publish_lock:
            todo = []
            for tp in tps:
                hp = self.partitions.get((tp.topic_id, tp.partition))
                if hp is not None and hp.applied is not None:
                    todo.append(self._bring_in_line(hp, hp.applied))
            await asyncio.gather(*todo)

    async def _bring_in_line(self, hp: HostedPartition, st: PartitionState) -> None:
        if hp.local is not None and await self._log_replaced(hp):
            pass  # started over: applied below as new
        elif hp.applied == st and hp.local is not None and hp.state.role is not Role.NONE:
            return
        await self._apply_or_offline(hp, st)

    async def _log_replaced(self, hp: HostedPartition) -> bool:
        """The shell closed our log or swapped it (a future log promoted): start the replica over."""
        try:
            current = await self.host.local_log(hp.tp)
        except KafkaError:
            return True  # offline now: _apply says so
        if current is not None and hp.local is not None and current.log is hp.local.log:
            return False
        log.info("partition log replaced by the broker; restarting the replica", partition=str(hp.tp))
        self.fetchers.remove(hp.key)
        hp.state.stop()
        hp.local = None
        return True

    async def _apply_or_offline(self, hp: HostedPartition, reg: PartitionState) -> None:
        try:
            await self._apply(hp, reg)
        except LogDirOfflineError as e:
            self._go_offline(hp, str(e))

    async def _apply(self, hp: HostedPartition, reg: PartitionState) -> None:
        # A leader or follower transition writes to the log (its epoch): not into one being swapped out.
        await hp.usable()
        state = hp.state
        if hp.local is None or not hp.local.log_dir.online:
            try:
                local = await self.host.local_log(hp.tp)
            except KafkaError as e:
                self._go_offline(hp, e.message or e.code.name)
                hp.applied = reg
                if reg.leader != self.node_id:
                    self._moved(hp)
                return
            if local is None:
                hp.applied = reg
                state.leader_id, state.leader_epoch = reg.leader, reg.leader_epoch
                if reg.leader != self.node_id:
                    self._moved(hp)
                return
            if hp.state.role is Role.OFFLINE:
                hp.state.stop()
            hp.local = local
        hp.applied = reg
        local = hp.local
        assert local is not None
        if reg.leader == self.node_id:
            if state.is_leader and state.leader_epoch == reg.leader_epoch:
                if state.update_registration(reg):
                    self._after_isr_change(hp)
                return
            self.fetchers.remove(hp.key)
            leo, lso = await local.log_dir.run(_start_leader_epoch, local.log, reg.leader_epoch)
            new = state.become_leader(
                reg,
                log_end_offset=leo,
                log_start_offset=lso,
                high_watermark=self.checkpoints.initial(hp.tp, state.high_watermark),
                now_ms=now_ms(),
            )
            if new:
                log.info(
                    "became leader",
                    partition=str(hp.tp),
                    leader_epoch=reg.leader_epoch,
                    isr=list(reg.isr),
                    log_end_offset=leo,
                    high_watermark=state.high_watermark,
                )
            self._after_isr_change(hp)
        else:
            was_leader = state.is_leader
            leo, lso = await local.log_dir.run(_log_ends, local.log)
            changed = state.become_follower(
                reg,
                log_end_offset=leo,
                log_start_offset=lso,
                high_watermark=self.checkpoints.initial(hp.tp, state.high_watermark),
            )
            if was_leader:
                self.tails.drop(
                    hp
                )  # only a leader answers from it; a follower would hold its bytes for nothing
                self._complete_produces(hp)
            if changed:
                self.fetchers.remove(hp.key)
                if reg.leader >= 0:
                    self.fetchers.add(hp, reg.leader, reg.leader_epoch)
                log.info(
                    "became follower",
                    partition=str(hp.tp),
                    leader=reg.leader,
                    leader_epoch=reg.leader_epoch,
                    log_end_offset=leo,
                )
            self.fetch_waiters.notify(hp.key)

    def _remove(self, hp: HostedPartition) -> None:
        self.fetchers.remove(hp.key)
        hp.state.stop()
        self.purgatory.fail_all(hp.key, Errors.NOT_LEADER_OR_FOLLOWER)
        self.fetch_waiters.notify(hp.key)
        self._moved(hp)
        self.tails.drop(hp)
        del self.partitions[hp.key]

    def _go_offline(self, hp: HostedPartition, reason: str, *, quiet: bool = False) -> None:
        if hp.state.role is not Role.OFFLINE and not quiet:
            log.warning("partition offline", partition=str(hp.tp), reason=reason)
        self.fetchers.remove(hp.key)
        if hp.state.role is not Role.OFFLINE and hp.state.is_leader and hp.moved is None:
            hp.moved = asyncio.Event()
        hp.state.go_offline()
        hp.local = None
        self.tails.drop(hp)
        self.purgatory.fail_all(hp.key, Errors.KAFKA_STORAGE_ERROR)
        self.fetch_waiters.notify(hp.key)

    def _moved(self, hp: HostedPartition) -> None:
        ev, hp.moved = hp.moved, None
        if ev is not None:
            ev.set()

    def _led_elsewhere(self, hp: HostedPartition) -> bool:
        t = self._image.topics.get_topic(hp.tp.topic_id)
        reg = t.partitions.get(hp.tp.partition) if t is not None else None
        return reg is None or reg.leader != self.node_id

    async def _offline_answer(self, hp: HostedPartition, budget_s: float) -> Errors:
        """A produce to a partition whose dir failed under its leadership: NOT_LEADER_OR_FOLLOWER
        (the handler adds the new leader, KIP-951) once the metadata moves the partition, waiting
        for that up to `budget_s`, else KAFKA_STORAGE_ERROR. The controller hears of the failed dir
        at once, so the move is usually tens of ms away; a producer told KAFKA_STORAGE_ERROR backs
        off retry.backoff.ms and refreshes its metadata before it sends again."""
        ev = hp.moved
        if ev is not None and budget_s > 0 and not self._led_elsewhere(hp):
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(ev.wait(), budget_s)
        if self._led_elsewhere(hp):
            return Errors.NOT_LEADER_OR_FOLLOWER
        return Errors.KAFKA_STORAGE_ERROR

    @contextlib.asynccontextmanager
    async def paused(self, tp: TopicIdPartition) -> AsyncIterator[None]:
        """Appends, reads and follower writes of `tp` wait while the body runs (the broker swaps
        the replica's log); afterwards they go to the log the broker serves then.

        Whatever was already sent to the log's dir thread runs before the body's own work there:
        the thread takes its jobs in order.
        """
        hp = self.partitions.get((tp.topic_id, tp.partition))
        if hp is None or hp.paused is not None:
            yield
            return
        gate = hp.paused = asyncio.Event()
        try:
            yield
        finally:
            hp.paused = None
            if hp.local is not None:
                try:
                    local = await self.host.local_log(hp.tp)
                except KafkaError:
                    local = None
                if local is not None:
                    hp.local = local
            gate.set()

    def on_dir_failure(self, failure: LogDirFailure) -> None:
        """A log dir went offline (the LogDirFailureChannel): its partitions answer
        KAFKA_STORAGE_ERROR from now on and their parked produces are answered so at once."""
        stopped = 0
        for hp in list(self.partitions.values()):
            if hp.local is not None and hp.local.log_dir.dir_id == failure.dir_id:
                # One line for the dir, not one per partition (the log manager said which and how many).
                self._go_offline(hp, f"log dir {failure.path} failed", quiet=True)
                stopped += 1
        log.debug("partitions stopped serving", path=failure.path, partitions=stopped)

    def _storage_failure(self, hp: HostedPartition, e: LogDirOfflineError) -> AppendOutcome:
        # The dir's failure has already reached on_dir_failure: LogDir.fail delivers it before
        # the failing call raises.
        return AppendOutcome(Errors.KAFKA_STORAGE_ERROR, message=str(e))

    # ---- HW and ISR -----------------------------------------------------------------------------

    def min_isr(self, hp: HostedPartition) -> int:
        return min_insync_replicas(self._image, hp.tp.topic_name, self.settings.min_insync_replicas)

    def _complete_produces(self, hp: HostedPartition) -> None:
        min_isr = self.min_isr(hp)
        self.purgatory.check(hp.key, lambda required: hp.state.acks_all_status(required, min_isr))

    def _after_isr_change(self, hp: HostedPartition) -> None:
        if hp.state.maybe_increment_high_watermark(now_ms(), self.settings.replica_lag_time_max_ms):
            self.fetch_waiters.notify(hp.key)
        self._complete_produces(hp)

    def _isr_change_done(
        self, key: PartitionKey, error: Errors, committed: tuple[int, int, int, list[int]] | None
    ) -> None:
        hp = self.partitions.get(key)
        if hp is None:
            return
        if error is Errors.NONE and committed is not None:
            leader, leader_epoch, partition_epoch, isr = committed
            before = len(hp.state.isr)
            if hp.state.isr_change_committed(leader, leader_epoch, partition_epoch, isr):
                log.info("ISR changed", partition=str(hp.tp), isr=isr, partition_epoch=partition_epoch)
                if len(isr) < before:
                    self.isr_stats.shrinks += 1
                elif len(isr) > before:
                    self.isr_stats.expands += 1
                self._after_isr_change(hp)
            return
        self.isr_stats.failed_updates += 1
        log.info("ISR change not accepted", partition=str(hp.tp), error=error.name)
        hp.state.isr_change_failed(ineligible=error is Errors.INELIGIBLE_REPLICA)

    async def _isr_check_loop(self) -> None:
        lag = self.settings.replica_lag_time_max_ms
        interval = max(lag // 2, ISR_CHECK_MIN_MS) / 1000
        while True:
            await asyncio.sleep(interval)
            try:
                self._shrink_lagging_isrs(now_ms(), lag)
            except Exception:
                log.exception("ISR check failed")

    def _shrink_lagging_isrs(self, now: int, lag: int) -> None:
        for hp in list(self.partitions.values()):
            change = hp.state.maybe_shrink_isr(now, lag)
            if change is not None:
                log.info(
                    "shrinking ISR",
                    partition=str(hp.tp),
                    isr=list(hp.state.isr),
                    new_isr=list(change.new_isr),
                )
                self.alter_partition.submit(change)

    def _high_watermarks(self) -> dict[Uuid, dict[TopicIdPartition, int]]:
        out: dict[Uuid, dict[TopicIdPartition, int]] = {}
        for hp in self.partitions.values():
            if hp.local is not None and hp.state.role in (Role.LEADER, Role.FOLLOWER):
                out.setdefault(hp.local.log_dir.dir_id, {})[hp.tp] = hp.state.high_watermark
        return out

    async def _hw_checkpoint_loop(self) -> None:
        while True:
            await asyncio.sleep(self.settings.hw_checkpoint_interval_ms / 1000)
            try:
                await self.checkpoints.write(self._high_watermarks())
            except Exception:
                log.exception("writing high watermark checkpoints failed")

    # ---- produce --------------------------------------------------------------------------------

    def _resolve(self, topic: str | Uuid, partition: int) -> HostedPartition | Errors:
        t = self._image.topics.get_topic(topic)
        if t is None or partition not in t.partitions:
            if isinstance(topic, Uuid):
                return Errors.UNKNOWN_TOPIC_ID
            return Errors.UNKNOWN_TOPIC_OR_PARTITION
        hp = self.partitions.get((t.id, partition))
        if hp is None:
            return Errors.NOT_LEADER_OR_FOLLOWER
        return hp

    async def end_offset_for_epoch(
        self, topic: str, partition: int, current_leader_epoch: int, leader_epoch: int
    ) -> tuple[Errors, int, int]:
        """OffsetForLeaderEpoch as the leader answers it: (error, epoch, end offset)."""
        resolved = self._resolve(topic, partition)
        if isinstance(resolved, Errors):
            return resolved, -1, -1
        hp = resolved
        try:
            hp.state.check_leader_at(current_leader_epoch)
            local = await hp.usable()
            if local is None:
                raise KafkaError(Errors.NOT_LEADER_OR_FOLLOWER, f"no local log for {hp.tp}")
            end = await local.log_dir.run(_end_offset_for_epoch, local.log, leader_epoch)
        except LogDirOfflineError as e:
            return self._storage_failure(hp, e).error, -1, -1
        except KafkaError as e:
            return e.code, -1, -1
        return (Errors.NONE, end.leader_epoch, end.end_offset) if end is not None else (Errors.NONE, -1, -1)

    def current_leader(self, topic: str | Uuid, partition: int) -> tuple[int, int] | None:
        """(leader, leader epoch) as the metadata names them, or None when it names no leader."""
        t = self._image.topics.get_topic(topic)
        reg = t.partitions.get(partition) if t is not None else None
        return (reg.leader, reg.leader_epoch) if reg is not None and reg.leader >= 0 else None

    def leader_offsets(self, topic: str, partition: int) -> tuple[int, int, int] | None:
        """(leader epoch, log end offset, high watermark) while this broker leads the partition."""
        resolved = self._resolve(topic, partition)
        if isinstance(resolved, Errors) or not resolved.state.is_leader:
            return None
        st = resolved.state
        return st.leader_epoch, st.log_end_offset, st.high_watermark

    async def append(
        self, topic: str, partition: int, records: bytes | None, acks: int, timeout_ms: int
    ) -> AppendOutcome:
        """A producer's batch for one partition, answered as Kafka answers it for `acks`."""
        outcome = await self._append(topic, partition, records, acks, timeout_ms)
        if outcome.error in _MOVED:
            # Read now, in the step that decided the answer: by the time the response is built the
            # image may name this broker itself, which would contradict the error.
            outcome = replace(outcome, current_leader=self.current_leader(topic, partition))
        # Per-topic series only for topics that exist, so that made-up names cannot grow them.
        known = topic if outcome.error is not Errors.UNKNOWN_TOPIC_OR_PARTITION else None
        self.topic_stats.mark("totalproducerequests", known)
        if outcome.error is not Errors.NONE:
            self.topic_stats.mark("failedproducerequests", known)
        return outcome

    async def _append(
        self, topic: str, partition: int, records: bytes | None, acks: int, timeout_ms: int
    ) -> AppendOutcome:
        resolved = self._resolve(topic, partition)
        if isinstance(resolved, Errors):
            return AppendOutcome(resolved)
        hp = resolved
        if records is None:
            return AppendOutcome(Errors.CORRUPT_MESSAGE, message="null records")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + min(timeout_ms, OFFLINE_MOVE_WAIT_MS) / 1000
        await hp.leading(timeout_ms / 1000)
        min_isr = self.min_isr(hp)
        try:
            hp.state.check_produce(acks, min_isr)
            local = await hp.usable()
            if local is None:
                raise KafkaError(Errors.NOT_LEADER_OR_FOLLOWER, f"no local log for {hp.tp}")
            epoch = hp.state.leader_epoch
            result, lso = await local.log_dir.run(_append_as_leader, hp, local.log, records, epoch)
        except LogDirOfflineError as e:
            outcome = self._storage_failure(hp, e)
            return AppendOutcome(
                await self._offline_answer(hp, deadline - loop.time()), message=outcome.message
            )
        except KafkaError as e:
            if e.code is Errors.KAFKA_STORAGE_ERROR:
                return AppendOutcome(
                    await self._offline_answer(hp, deadline - loop.time()), message=e.message
                )
            return AppendOutcome(e.code, message=e.message)
        if result.num_batches == 0:
            return AppendOutcome(Errors.NONE, -1, hp.state.log_start_offset)
        self.topic_stats.produced(topic, len(records), result.last_offset - result.first_offset + 1)
        state = hp.state
        if state.is_leader and state.leader_epoch == epoch:
            if result.written is not None:
                self._keep_tail(hp, result, epoch, lso)
            if state.leader_appended(result.last_offset + 1):
                self._complete_produces(hp)
        self.fetch_waiters.notify(hp.key)
        if acks != -1:
            return AppendOutcome(Errors.NONE, result.first_offset, state.log_start_offset)
        fut = self.purgatory.watch(hp.key, result.last_offset + 1)
        self._complete_produces(hp)
        code = await wait_for_status(fut, timeout_ms / 1000)
        if code is Errors.KAFKA_STORAGE_ERROR:
            code = await self._offline_answer(hp, deadline - loop.time())
        if code is Errors.NONE:
            return AppendOutcome(Errors.NONE, result.first_offset, state.log_start_offset)
        return AppendOutcome(
            code, result.first_offset if code is Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND else -1
        )

    def _keep_tail(self, hp: HostedPartition, result: AppendResult, epoch: int, lso: int) -> None:
        assert result.written is not None
        self.tails.keep(hp, epoch, result.first_offset, result.written, result.last_offset + 1, lso)

    def _tail_read(
        self, hp: HostedPartition, fetch_offset: int, max_bytes: int, last_fetched_epoch: int
    ) -> tuple[bytes, int] | None:
        """A follower's read at the end of the leader's log, from memory: (records, log start
        offset), or None when it needs the log. A follower whose last batch has the current leader
        epoch cannot have diverged from the leader; the batches held were checked when appended."""
        state = hp.state
        if last_fetched_epoch != state.leader_epoch or hp.paused is not None:
            return None
        tail = hp.tail
        if tail is None or tail.epoch != state.leader_epoch or tail.end != state.log_end_offset:
            if fetch_offset == state.log_end_offset:
                return b"", state.log_start_offset
            return None
        if fetch_offset < max(tail.log_start_offset, state.log_start_offset):
            return None
        records = tail.read(fetch_offset, max_bytes)
        return None if records is None else (records, tail.log_start_offset)

    # ---- fetch ----------------------------------------------------------------------------------

    async def read(
        self,
        topic: str | Uuid,
        partition: int,
        *,
        replica_id: int,
        replica_epoch: int,
        fetch_offset: int,
        current_leader_epoch: int,
        last_fetched_epoch: int,
        max_bytes: int,
    ) -> FetchRead:
        """One partition of a fetch: a follower (replica_id >= 0) reads to the log end and reports its
        progress; a consumer reads to the high watermark."""
        resolved = self._resolve(topic, partition)
        if isinstance(resolved, Errors):
            return FetchRead(resolved)
        hp = resolved
        state = hp.state
        # A follower may hear of its new leader before the leader is done becoming one.
        await hp.leading(self.settings.fetch_wait_max_ms / 1000)
        try:
            state.check_leader_at(current_leader_epoch)
            local = await hp.usable()
            if local is None:
                raise KafkaError(Errors.NOT_LEADER_OR_FOLLOWER, f"no local log for {hp.tp}")
            follower = replica_id >= 0
            if follower and replica_id not in state.followers:
                raise KafkaError(Errors.NOT_LEADER_OR_FOLLOWER, f"{replica_id} is not a replica of {hp.tp}")
            cached = self._tail_read(hp, fetch_offset, max_bytes, last_fetched_epoch) if follower else None
            if cached is not None:
                result, diverging, lso = ReadResult(cached[0], -1), None, cached[1]
            else:
                result, diverging, lso = await local.log_dir.run(
                    _read_for_fetch,
                    local.log,
                    fetch_offset,
                    max_bytes,
                    None if follower else state.high_watermark,
                    last_fetched_epoch if follower else -1,
                    follower,
                )
            if follower and local.log.unreadable is not None:
                self._unreadable.add(hp.key)
        except LogDirOfflineError as e:
            self._storage_failure(hp, e)
            return FetchRead(Errors.KAFKA_STORAGE_ERROR, message=str(e))
        except OffsetOutOfRangeError as e:
            return FetchRead(
                Errors.OFFSET_OUT_OF_RANGE,
                high_watermark=state.high_watermark,
                log_start_offset=e.log_start_offset,
                message=e.message,
            )
        except KafkaError as e:
            leader = (state.leader_id, state.leader_epoch) if state.leader_epoch >= 0 else None
            return FetchRead(e.code, leader=leader, message=e.message)
        if follower and diverging is None and state.is_leader:
            update = state.follower_fetched(
                replica_id, fetch_offset, replica_epoch, now_ms(), self.settings.replica_lag_time_max_ms
            )
            if update.high_watermark_moved:
                self._complete_produces(hp)
                self.fetch_waiters.notify(hp.key)
            if update.isr_change is not None:
                log.info(
                    "expanding ISR",
                    partition=str(hp.tp),
                    isr=list(state.isr),
                    new_isr=list(update.isr_change.new_isr),
                )
                self.alter_partition.submit(update.isr_change)
        return FetchRead(
            Errors.NONE,
            high_watermark=state.high_watermark,
            log_start_offset=lso,
            records=result.records if result is not None else b"",
            diverging=diverging,
        )

    def key_of(self, topic: str | Uuid, partition: int) -> PartitionKey | None:
        t = self._image.topics.get_topic(topic)
        return None if t is None else (t.id, partition)

    def unreadable_replicas(self) -> dict[PartitionKey, str]:
        """Local replicas whose log holds a batch that fails its CRC, with the offset and why, while
        the log still holds it."""
        out: dict[PartitionKey, str] = {}
        for key in list(self._unreadable):
            hp = self.partitions.get(key)
            bad = hp.local.log.unreadable if hp is not None and hp.local is not None else None
            if hp is None or bad is None:
                self._unreadable.discard(key)
            else:
                out[key] = f"{hp.tp}: {bad.reason}"
        return out

    def failed_partitions(self) -> list[str]:
        """Partitions this broker cannot read or copy: followed ones whose fetched data fails its
        checks, and local logs found to hold a damaged batch, each with why."""
        return sorted([*self.fetchers.failed_partitions(), *self.unreadable_replicas().values()])

    # ---- offsets ----------------------------------------------------------------------------------

    async def list_offset(
        self, topic: str, partition: int, timestamp: int, current_leader_epoch: int, replica_id: int
    ) -> tuple[Errors, int, int, int]:
        """(error, timestamp, offset, leader epoch) for ListOffsets."""
        resolved = self._resolve(topic, partition)
        if isinstance(resolved, Errors):
            return resolved, -1, -1, -1
        hp = resolved
        state = hp.state
        try:
            state.check_leader_at(current_leader_epoch)
            local = await hp.usable()
            if local is None:
                raise KafkaError(Errors.NOT_LEADER_OR_FOLLOWER, f"no local log for {hp.tp}")
            if timestamp == -2:
                _, lso = await local.log_dir.run(_log_ends, local.log)
                return Errors.NONE, -1, lso, state.leader_epoch
            if timestamp == -1:
                if replica_id >= 0:
                    leo, _ = await local.log_dir.run(_log_ends, local.log)
                    return Errors.NONE, -1, leo, state.leader_epoch
                return Errors.NONE, -1, state.high_watermark, state.leader_epoch
            found = await local.log_dir.run(_offset_for_timestamp, local.log, timestamp, state.high_watermark)
        except LogDirOfflineError as e:
            self._storage_failure(hp, e)
            return Errors.KAFKA_STORAGE_ERROR, -1, -1, -1
        except KafkaError as e:
            return e.code, -1, -1, -1
        if found is None:
            return Errors.NONE, -1, -1, state.leader_epoch
        return Errors.NONE, found[0], found[1], state.leader_epoch

    # ---- helpers for the follower side ----------------------------------------------------------

    async def on_local_dir(self, hp: HostedPartition, fn: Callable[..., T], *args: object) -> T:
        local = hp.local
        if local is None:
            raise KafkaError(Errors.KAFKA_STORAGE_ERROR, f"{hp.tp} has no online log")
        return await local.log_dir.run(fn, *args)

    def follower_progress(self, hp: HostedPartition, leo: int, leader_hw: int, leader_lso: int) -> None:
        if hp.state.follower_appended(leo, leader_hw, leader_lso):
            self.fetch_waiters.notify(hp.key)


# ---- work done on a log dir's thread ----------------------------------------------------------------


def broker_listener_name(cfg: object) -> str | None:
    """The listener brokers reach each other (and clients reach brokers) on."""
    name = getattr(cfg, "inter_broker_listener_name", None)
    if name:
        return str(name)
    rpc = getattr(cfg, "rpc_listener", None)
    return str(rpc.name) if rpc is not None else None


def _peer_ssl(cfg: object, listener_name: str | None) -> ssl.SSLContext | None:
    """The client context for other brokers' `listener_name` when it is TLS (None for a host whose
    config is not a KafkaConfig, as in tests)."""
    if not isinstance(cfg, KafkaConfig) or listener_name is None:
        return None
    return peer_context(cfg, listener_name)


def _start_leader_epoch(log: PartitionLog, leader_epoch: int) -> tuple[int, int]:
    latest = log.latest_epoch
    if latest is None or leader_epoch > latest:
        log.assign_epoch_start_offset(leader_epoch, log.log_end_offset)
    return log.log_end_offset, log.log_start_offset


def _log_ends(log: PartitionLog) -> tuple[int, int]:
    return log.log_end_offset, log.log_start_offset


def _append_as_leader(
    hp: HostedPartition, log: PartitionLog, records: bytes, leader_epoch: int
) -> tuple[AppendResult, int]:
    # Checked again here, in line with every other append to this log: a leader deposed while
    # this batch waited must not write it with its old epoch.
    if not hp.state.is_leader or hp.state.leader_epoch != leader_epoch:
        raise KafkaError(Errors.NOT_LEADER_OR_FOLLOWER, f"no longer the leader of {hp.tp}")
    # The same leader may start a new epoch (ZooKeeper mode bumps it on every ISR change the
    # controller makes): once the new epoch has its start offset in the log, on this same thread, a
    # batch of the old epoch must not land after it, or the log would hold old-epoch records past the
    # point the epoch cache says the old epoch ended, and followers would truncate there forever.
    latest = log.latest_epoch
    if latest is not None and latest > leader_epoch:
        raise KafkaError(Errors.NOT_LEADER_OR_FOLLOWER, f"{hp.tp} moved to leader epoch {latest}")
    return log.append_as_leader(records, leader_epoch), log.log_start_offset


def _read_for_fetch(
    log: PartitionLog,
    fetch_offset: int,
    max_bytes: int,
    max_offset: int | None,
    last_fetched_epoch: int,
    follower: bool = False,
) -> tuple[ReadResult | None, EpochEnd | None, int]:
    if last_fetched_epoch >= 0:
        end = log.end_offset_for_epoch(last_fetched_epoch)
        diverging = diverging_epoch(
            last_fetched_epoch, fetch_offset, EpochEnd(end.leader_epoch, end.end_offset) if end else None
        )
        if diverging is not None:
            return None, diverging, log.log_start_offset
    # A follower's read checks the CRCs (a consumer checks its own): this replica then knows, and
    # says, that its log holds a damaged batch, not only the follower that cannot get past it.
    return log.read(fetch_offset, max_bytes, max_offset, verify=follower), None, log.log_start_offset


def _end_offset_for_epoch(log: PartitionLog, leader_epoch: int) -> EpochEndOffset | None:
    return log.end_offset_for_epoch(leader_epoch)


def _offset_for_timestamp(log: PartitionLog, timestamp: int, high_watermark: int) -> tuple[int, int] | None:
    """The first batch below the HW whose max timestamp reaches `timestamp`: (its timestamp, its base offset)."""
    from protocol.record_batch import read_batch_header

    for base, data in log.iter_batches():
        if base >= high_watermark:
            break
        h = read_batch_header(data, 0)
        if h.max_timestamp >= timestamp:
            return h.max_timestamp, base
    return None


def _cluster_view(image: MetadataImage) -> tuple[set[int], dict[int, int]]:
    eligible = {b for b, reg in image.cluster.brokers.items() if reg.is_active()}
    epochs = {b: reg.epoch for b, reg in image.cluster.brokers.items()}
    return eligible, epochs
