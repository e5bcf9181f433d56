"""LogManager: the partition logs hosted by this broker, the log dir each lives in, and its files.

It is fed the same `PartitionState` values as the replica manager beside it (`publish`), and
learns of a failed dir from the LogDirFailureChannel (`on_dir_failure`). The decisions come from
`broker.core.log_placement` (the KIP-858 table); this shell carries them out on the disks, one plan at a time in the order the metadata produced them, each dir's
work on that dir's own executor:

strays aside, unwanted logs deleted, future logs promoted or dropped, new partition dirs created
(in chunks, so a probe of the dir never waits long behind them), then the dirs to report go to
the AssignmentsManager (a new replica is reported once its dir exists).

A partition's log (`PartitionLog`, its segment files) is opened on first use with
`await partition.log()`, not at startup: the control plane only needs `<topic>-<p>/` and its
partition.metadata, and a broker hosting 100,000 replicas should not hold 300,000 open files to
say so. When a dir fails its partitions go offline at once: `log()` raises KAFKA_STORAGE_ERROR,
and their files are closed (on a thread of their own: the dir's executor is gone) so the
filesystem can be unmounted.

The data plane reaches a log through `get_partition` (broker/dataplane_host.py), and is told of
logs created or promoted through `on_logs_changed`. `get_partition_or_error` answers as Kafka's
getPartitionOrError does: KAFKA_STORAGE_ERROR for an offline partition, NOT_LEADER_OR_FOLLOWER for
one the metadata places elsewhere, UNKNOWN_TOPIC_OR_PARTITION otherwise.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

import structlog

from broker import partition_dirs
from broker.core.assignments import AssignmentsManager
from broker.core.local_logs import FoundLog
from broker.core.log_placement import LogPlacement, Plan
from broker.core.partition_state import PartitionState
from broker.hosted_log import HostedLog
from broker.log_dir_failure import LogDirFailure
from broker.storage import LogConfig, LogDirOfflineError, PartitionLog
from broker.storage.dir_names import TopicPartition, log_dir_name
from broker.storage.errors import LogDirResourceError
from broker.storage.log_dir import LogDir
from kraftpy.heap import after_load, collector_paused
from kraftpy.image import MetadataImage, TopicIdPartition
from protocol.errors import Errors, KafkaError
from protocol.uuid import Uuid, describe_directory

if TYPE_CHECKING:
    from broker.replica_mover import ReplicaMover

log = structlog.get_logger("broker.log_manager")

CREATE_CHUNK = 256
LIVES_IN = "the dir the replica lives in"
"""The reason of every assignment queued here: the replica and the dir are the assignment's own fields."""


class LogManager:
    def __init__(
        self,
        broker_id: int,
        log_dirs: dict[Uuid, LogDir],
        placement: LogPlacement,
        assignments: AssignmentsManager,
        log_config: LogConfig,
        *,
        now_ms: Callable[[], int],
        on_change: Callable[[], None] = lambda: None,
        on_logs_changed: Callable[[list[TopicIdPartition]], None] = lambda tps: None,
    ) -> None:
        """`on_change`: placement moved on (readiness to unfence may have changed);
        `on_logs_changed`: these partitions' logs were created or promoted (the replica manager
        applies their state again)."""
        self.broker_id = broker_id
        self.log_dirs = log_dirs
        self.placement = placement
        self.assignments = assignments
        self.log_config = log_config
        self.now_ms = now_ms
        self.on_change = on_change
        self.on_logs_changed = on_logs_changed
        self.partitions: dict[tuple[Uuid, int], HostedLog] = {}
        self.image: MetadataImage | None = None
        self._plans: asyncio.Queue[Plan] = asyncio.Queue()
        self._busy = False
        self._settled = asyncio.Event()
        self._settled.set()
        self._worker: asyncio.Task[None] | None = None
        self.configured_paths: set[str] = {str(ld.path) for ld in log_dirs.values()}
        """Every entry of log.dirs, including those unusable at startup (AlterReplicaLogDirs tells
        LOG_DIR_NOT_FOUND from KAFKA_STORAGE_ERROR by it)."""
        self.mover: ReplicaMover | None = None
        """Intra-broker moves (set by the broker once built: it needs this manager)."""

    # ---- lifecycle -----------------------------------------------------------------------------

    def start(self) -> None:
        self._worker = asyncio.get_running_loop().create_task(self._run_plans(), name="replica-plans")

    async def stop(self) -> None:
        if self._worker is not None:
            self._worker.cancel()
            await asyncio.gather(self._worker, return_exceptions=True)
        if self.mover is not None:
            await self.mover.stop()
        await self.close_logs()

    @property
    def settled(self) -> bool:
        """No plan is waiting or being carried out."""
        return not self._busy and self._plans.empty()

    # ---- lookups for request handlers ----------------------------------------------------------

    def get_partition(self, topic_id: Uuid, partition: int) -> HostedLog | None:
        return self.partitions.get((topic_id, partition))

    def get_partition_or_error(self, topic: Uuid | str, partition: int) -> HostedLog:
        image = self.image
        topic_image = image.topics.get_topic(topic) if image is not None else None
        if topic_image is None:
            raise KafkaError(Errors.UNKNOWN_TOPIC_OR_PARTITION, f"unknown topic {topic}")
        hp = self.partitions.get((topic_image.id, partition))
        if hp is None:
            if partition in topic_image.partitions:
                raise KafkaError(
                    Errors.NOT_LEADER_OR_FOLLOWER, f"{topic_image.name}-{partition} is not hosted here"
                )
            raise KafkaError(
                Errors.UNKNOWN_TOPIC_OR_PARTITION, f"unknown partition {topic_image.name}-{partition}"
            )
        if not hp.online:
            raise hp.offline_error()
        return hp

    def dir_by_path(self, path: str) -> LogDir | None:
        """The log dir configured at `path` (as written in log.dirs, or the same path normalized)."""
        want = os.path.normpath(path) if path else path
        for ld in self.log_dirs.values():
            if os.path.normpath(str(ld.path)) == want:
                return ld
        return None

    def is_configured(self, path: str) -> bool:
        want = os.path.normpath(path) if path else path
        return any(os.path.normpath(p) == want for p in self.configured_paths)

    # ---- intra-broker moves (the ReplicaMover reports here) ------------------------------------

    def prefer(self, topic: str, partition: int, dir_id: Uuid) -> None:
        """Create this replica in `dir_id` when it comes (AlterReplicaLogDirs before the replica exists)."""
        self.placement.preferred[(topic, partition)] = dir_id

    def future_started(self, tp: TopicIdPartition, dir_id: Uuid) -> None:
        self.placement.on_future(tp.topic_id, tp.partition, dir_id)

    def future_dropped(self, tp: TopicIdPartition) -> None:
        self.placement.on_future(tp.topic_id, tp.partition, None)
        self.on_change()

    def swap_in(self, tp: TopicIdPartition, log: PartitionLog, log_dir: LogDir) -> None:
        """The future log `log` in `log_dir` is the partition's log from now on."""
        hp = self.partitions.get((tp.topic_id, tp.partition))
        if hp is not None:
            hp.replace_log(log, log_dir)
        self.placement.on_promoted(tp.topic_id, tp.partition, log_dir.dir_id)
        self.on_change()

    # ---- metadata ------------------------------------------------------------------------------

    def update_metadata(self, image: MetadataImage) -> None:
        """The metadata cache `get_partition_or_error` answers from."""
        self.image = image

    def publish(
        self,
        states: Iterable[PartitionState],
        deleted: Iterable[TopicIdPartition] = (),
        *,
        full: bool = False,
    ) -> None:
        """Place what the metadata says of these partitions (all hosted here when `full`, the first
        publish; else those that changed) and let go of those `deleted`."""
        states = list(states)
        plan = self.placement.apply(states, deleted, full=full)
        self._sync_partitions(plan, None if full else [(st.topic_id, st.partition) for st in states])
        if not plan.is_empty():
            self._plans.put_nowait(plan)
            self._settled.clear()
        self.on_change()

    def _sync_partitions(self, plan: Plan, changed: Iterable[tuple[Uuid, int]] | None) -> None:
        """Keep one HostedLog per replica the core tracks (`changed`: the keys of those to look at,
        None for all), where and in the state the core says."""
        replicas = self.placement.replicas
        not_ready = {(t.topic_id, t.partition) for t, _ in plan.creates}
        not_ready |= {(t.topic_id, t.partition) for t, _, _ in plan.promote_futures}
        if self.mover is not None and self.mover.moves:
            gone = {(t.topic_id, t.partition) for t, _ in plan.deletes}
            gone |= {k for k in self.mover.moves if k not in self.placement.replicas}
            self.mover.on_removed(gone)
        for tp, _dir in plan.deletes:
            hp = self.partitions.pop((tp.topic_id, tp.partition), None)
            if hp is not None:
                self._close_later([hp.go_offline("no longer hosted here")])
        # Only a full publish or a removal can leave a HostedLog the core no longer tracks.
        gone_keys = self.partitions.keys() if changed is None else plan.removed
        for key in [k for k in gone_keys if k in self.partitions and k not in self.placement.replicas]:
            self._close_later([self.partitions.pop(key).go_offline("no longer hosted here")])
        log_dirs, partitions = self.log_dirs, self.partitions
        todo = replicas.items() if changed is None else ((k, replicas.get(k)) for k in set(changed))
        for key, r in todo:
            if r is None:
                continue
            where = log_dirs.get(r.location) if r.location is not None else None
            hp = partitions.get(key)
            if hp is None:
                hp = HostedLog(r.tp, where, self.log_config)
                partitions[key] = hp
                if where is not None and key not in not_ready:
                    hp.created.set()
            else:
                hp.tp = r.tp
                if where is None and hp.online:
                    self._close_later([hp.go_offline(r.offline_reason)])
                elif where is not None and (hp.log_dir is None or hp.log_dir.dir_id != where.dir_id):
                    self._close_later([hp.take_log()])
                    hp.log_dir = where
                    hp.online = True
                    hp.created.clear()
                    if key not in not_ready:
                        hp.created.set()
            if where is None:
                hp.offline_reason = r.offline_reason

    # ---- carrying plans out --------------------------------------------------------------------

    async def _run_plans(self) -> None:
        while True:
            plan = await self._plans.get()
            self._busy = True
            try:
                await self._execute(plan)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("replica plan failed")
            finally:
                self._busy = False
                if self._plans.empty():
                    self._settled.set()
                self.on_change()

    async def wait_settled(self) -> None:
        await self._settled.wait()

    async def _on_dir(self, dir_id: Uuid, fn: Callable[..., object], *args: object) -> object | None:
        ld = self.log_dirs.get(dir_id)
        if ld is None or not ld.online:
            return None
        try:
            return await ld.run(fn, *args)
        except LogDirOfflineError:
            return None  # the failure path has taken the dir and its replicas offline
        except LogDirResourceError:
            return None  # logged by the dir; the next metadata change tries again

    async def _execute(self, plan: Plan) -> None:
        for found in plan.strays:
            ld = self.log_dirs.get(found.dir_id)
            if ld is None:
                continue
            new = await self._on_dir(found.dir_id, partition_dirs.rename_stray, ld.path, found.name)
            if new is not None:
                log.warning("stray partition dir moved aside", path=str(ld.path / found.name), renamed_to=new)
        for found in plan.delete_futures:
            await self._delete(found.dir_id, found.name)
        for tp, dir_id in plan.deletes:
            await self._delete(dir_id, log_dir_name(TopicPartition(tp.topic_name, tp.partition)))
        for tp, future, current in plan.promote_futures:
            await self._promote(tp, future, current)
        for tp, current, future in plan.resume_futures:
            if self.mover is not None:
                self.mover.resume(tp, current.dir_id, future.dir_id, future.name)
            else:
                log.warning(
                    "a future log waits for its copy to resume", partition=str(tp), future=future.name
                )
        report_after_create = {(t.topic_id, t.partition) for t, _ in plan.creates}
        self._report_all(
            [(tp, d) for tp, d in plan.reports if (tp.topic_id, tp.partition) not in report_after_create]
        )
        if plan.creates:
            reports = {(t.topic_id, t.partition): d for t, d in plan.reports}
            by_dir: dict[Uuid, list[TopicIdPartition]] = {}
            for tp, dir_id in plan.creates:
                by_dir.setdefault(dir_id, []).append(tp)
            await asyncio.gather(*(self._create_in(d, tps, reports) for d, tps in by_dir.items()))

    async def _create_in(
        self, dir_id: Uuid, tps: list[TopicIdPartition], reports: dict[tuple[Uuid, int], Uuid]
    ) -> None:
        ld = self.log_dirs.get(dir_id)
        if ld is None:
            return
        for i in range(0, len(tps), CREATE_CHUNK):
            chunk = tps[i : i + CREATE_CHUNK]
            done = await self._on_dir(
                dir_id,
                partition_dirs.create_partitions,
                ld.path,
                [(t.topic_name, t.partition, t.topic_id) for t in chunk],
            )
            if done is None:
                # Not created this time (the dir failed, or the process is out of descriptors):
                # whoever waits for these logs (a LeaderAndIsr answer, a first read) hears it now.
                for tp in tps[i:]:
                    hp = self.partitions.get((tp.topic_id, tp.partition))
                    if hp is not None:
                        hp.created.wake()
                return
            with collector_paused():
                due: list[tuple[TopicIdPartition, Uuid]] = []
                for tp in chunk:
                    key = (tp.topic_id, tp.partition)
                    self.placement.on_created(tp.topic_id, tp.partition, dir_id)
                    hp = self.partitions.get(key)
                    if hp is not None:
                        hp.created.set()
                    report = reports.get(key)
                    if report is not None:
                        due.append((tp, report))
                self._report_all(due)
                after_load(len(chunk))
            self.on_logs_changed(chunk)
            self.on_change()

    async def _delete(self, dir_id: Uuid, name: str) -> None:
        ld = self.log_dirs.get(dir_id)
        if ld is not None:
            await self._on_dir(dir_id, partition_dirs.delete_partition_dir, ld.path, name)

    async def _promote(self, tp: TopicIdPartition, future: FoundLog, current: FoundLog | None) -> None:
        ld = self.log_dirs.get(future.dir_id)
        if ld is None:
            return
        source = self.log_dirs.get(current.dir_id) if current is not None else None
        if current is not None and source is not None and self.mover is not None:
            # The metadata names the future's dir, but appends may have reached the current log
            # after the controller accepted the move: copy them before the current log goes.
            await self.mover.catch_up_offline(tp, source, current.name, ld, future.name)
        if current is not None:
            await self._delete(current.dir_id, current.name)
        done = await self._on_dir(
            future.dir_id, partition_dirs.promote_future, ld.path, future.name, tp.topic_name, tp.partition
        )
        if done is None and not ld.online:
            return
        self.placement.on_promoted(tp.topic_id, tp.partition, future.dir_id)
        hp = self.partitions.get((tp.topic_id, tp.partition))
        if hp is not None:
            hp.log_dir = ld
            hp.created.set()
        log.info("future log promoted", partition=str(tp), dir=str(ld.path))
        self.on_logs_changed([tp])

    def _report_all(self, reports: list[tuple[TopicIdPartition, Uuid]]) -> None:
        """Queue these replicas' dirs for AssignReplicasToDirs (one clock read and one wake-up for all)."""
        if not reports:
            return
        self.assignments.on_assignments(
            self.now_ms(), [(tp.topic_id, tp.partition, dir_id) for tp, dir_id in reports], LIVES_IN
        )
        self.on_change()

    # ---- dir failure ---------------------------------------------------------------------------

    def on_dir_failure(self, failure: LogDirFailure) -> None:
        """Subscribed to the LogDirFailureChannel."""
        if failure.dir_id is None or failure.dir_id not in self.log_dirs:
            return  # a separate metadata.log.dir: no partition logs there
        # The dir's failure itself was logged once, as an error, where it happened (LogDir.fail).
        leaders = sum(
            1 for r in self.placement.replicas.values() if r.leader and r.location == failure.dir_id
        )
        n = self.fail_dir(failure.dir_id)
        log.warning(
            "replicas taken offline with their log dir", path=failure.path, replicas=n, leaders=leaders
        )
        if self.mover is not None:
            self.mover.on_dir_failure(failure.dir_id)

    def fail_dir(self, dir_id: Uuid) -> int:
        """Take the dir's partitions offline and close their files; returns how many went offline."""
        lost = self.placement.fail_dir(dir_id)
        to_close: list[PartitionLog | None] = []
        for r in lost:
            hp = self.partitions.get(r.key)
            if hp is not None:
                to_close.append(hp.go_offline(r.offline_reason))
        for hp in self.partitions.values():
            if hp.online and hp.log_dir is not None and hp.log_dir.dir_id == dir_id:
                to_close.append(hp.go_offline(f"log dir {describe_directory(dir_id)} is offline"))
        self._close_later(to_close)
        self.on_change()
        return len(lost)

    def _close_later(self, logs: Iterable[PartitionLog | None]) -> None:
        """Release file handles of logs on a failed (or left) dir, off the event loop.

        The dir's own executor is shut down by then, and close(2) on a dead disk can block, so a
        short-lived thread of its own does it rather than the loop or the default executor.
        """
        pending = [lg for lg in logs if lg is not None]
        if not pending:
            return

        def close_all() -> None:
            for lg in pending:
                try:
                    lg.close_handles()
                except OSError:
                    pass

        threading.Thread(target=close_all, name="close-failed-logs", daemon=True).start()

    async def close_logs(self) -> None:
        """Flush and close every open log (clean shutdown), each on its dir's executor."""
        jobs = []
        for hp in self.partitions.values():
            lg = hp.take_log()
            if lg is None:
                continue
            if hp.online and hp.log_dir is not None and hp.log_dir.online:
                jobs.append(self._close_one(hp.log_dir, lg))
            else:
                self._close_later([lg])
        await asyncio.gather(*jobs, return_exceptions=True)

    async def _close_one(self, ld: LogDir, lg: PartitionLog) -> None:
        try:
            await ld.run(lg.close)
        except LogDirOfflineError:
            self._close_later([lg])
