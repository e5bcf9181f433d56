"""The replicas this broker hosts and where their logs live: the decisions of the LogManager, without I/O.

Fed with what the metadata says of each partition (`PartitionState`: all of them at the first
publish, then those each delta changed) and with directory failures, it keeps one `PlacedReplica` per partition the metadata places here and
answers with a `Plan`: logs to create, dirs to report in AssignReplicasToDirs, future logs to
delete, promote or resume, local logs the metadata does not want (strays) or no longer wants
(deletes). The shell carries the plan out on the right log dirs and reports back
(`on_created`, `on_promoted`...). Every decision comes from `placement.decide`.

It also answers what the rest of the broker asks: which replicas are offline (OfflineReplicaCount),
whether any replica still waits to be placed in the metadata (KIP-858: stay fenced until none
does), and whether the broker leads a partition in a given dir (log.dir.failure.timeout.ms).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import structlog

from broker.core.local_logs import FoundLog, Inventory, LocalFiles, duplicate_message
from broker.core.partition_state import PartitionState
from broker.core.placement import PICK, DirView, FutureAction, LocalReplica, choose_dir, decide
from kraftpy.image import TopicIdPartition
from protocol.uuid import LOST, Uuid, describe_directory

log = structlog.get_logger("broker.replicas")

PartitionKey = tuple[Uuid, int]


@dataclass(slots=True)
class PlacedReplica:
    tp: TopicIdPartition
    assigned: Uuid
    """The dir the metadata assigns to this broker's replica."""
    location: Uuid | None
    """The online dir the replica lives in; None while it is offline."""
    exists: bool = False
    """Its log dir exists on disk (found at startup, or created)."""
    future: Uuid | None = None
    leader: bool = False
    leader_epoch: int = 0
    failed_dir: Uuid | None = None
    """The dir the replica was in when that dir failed."""
    offline_reason: str = ""
    reported: Uuid | None = None
    """The dir last queued for AssignReplicasToDirs (to avoid queueing the same one again)."""

    @property
    def key(self) -> PartitionKey:
        return (self.tp.topic_id, self.tp.partition)

    @property
    def online(self) -> bool:
        return self.location is not None


@dataclass
class Plan:
    creates: list[tuple[TopicIdPartition, Uuid]] = field(default_factory=list)
    reports: list[tuple[TopicIdPartition, Uuid]] = field(default_factory=list)
    delete_futures: list[FoundLog] = field(default_factory=list)
    promote_futures: list[tuple[TopicIdPartition, FoundLog, FoundLog | None]] = field(default_factory=list)
    """(partition, future log, current log to replace or None)."""
    resume_futures: list[tuple[TopicIdPartition, FoundLog, FoundLog]] = field(default_factory=list)
    strays: list[FoundLog] = field(default_factory=list)
    deletes: list[tuple[TopicIdPartition, Uuid]] = field(default_factory=list)
    """Replicas no longer hosted here whose log lives in an online dir: delete it."""
    went_offline: list[TopicIdPartition] = field(default_factory=list)
    removed: list[PartitionKey] = field(default_factory=list)
    """Replicas no longer hosted here, wherever their log was (the shell drops what it held for them)."""

    def is_empty(self) -> bool:
        return not any(
            (
                self.creates,
                self.reports,
                self.delete_futures,
                self.promote_futures,
                self.resume_futures,
                self.strays,
                self.deletes,
                self.went_offline,
            )
        )


class LogPlacement:
    def __init__(
        self,
        broker_id: int,
        dir_paths: Mapping[Uuid, str],
        *,
        offline_at_start: int = 0,
        multi_dir: bool = True,
        inventory: Inventory | None = None,
    ) -> None:
        """`dir_paths`: the online log dirs (id -> path); `offline_at_start`: how many configured log
        dirs could not be used at startup (their ids are unknown)."""
        self.broker_id = broker_id
        self.paths = dict(dir_paths)
        self.online_dirs: set[Uuid] = set(dir_paths)
        self.failed_dirs: set[Uuid] = set()
        self.offline_at_start = offline_at_start
        self.multi_dir = multi_dir
        self.inventory = inventory or Inventory()
        self.replicas: dict[PartitionKey, PlacedReplica] = {}
        self.unplaced: set[PartitionKey] = set()
        self.published = False
        self._counts: Counter[Uuid] = Counter()
        self._dir_view: DirView | None = None
        self._dir_order: list[Uuid] | None = None
        self.preferred: dict[tuple[str, int], Uuid] = {}
        """Kafka's preferredLogDirs: AlterReplicaLogDirs named a dir for a replica not hosted yet;
        a new replica this broker places itself goes there."""

    # ---- views ---------------------------------------------------------------------------------

    @property
    def dir_view(self) -> DirView:
        if self._dir_view is None:
            self._dir_view = DirView(
                online=frozenset(self.online_dirs),
                offline=frozenset(self.failed_dirs),
                any_offline=bool(self.failed_dirs) or self.offline_at_start > 0,
                multi_dir=self.multi_dir,
            )
        return self._dir_view

    def get(self, topic_id: Uuid, partition: int) -> PlacedReplica | None:
        return self.replicas.get((topic_id, partition))

    def offline_count(self) -> int:
        # Every replica with a location, and only those, is counted under it.
        return len(self.replicas) - sum(self._counts.values())

    def counts_by_dir(self) -> dict[Uuid, int]:
        return {d: self._counts.get(d, 0) for d in self.online_dirs}

    def leads_partitions_in_dir(self, dir_id: Uuid) -> bool:
        for r in self.replicas.values():
            if r.leader and (r.location == dir_id or r.failed_dir == dir_id):
                return True
        return False

    def ready_to_unfence(self) -> bool:
        """KIP-858: every replica hosted here is placed in the metadata where it really lives."""
        return self.published and not self.unplaced

    # ---- metadata ------------------------------------------------------------------------------

    def apply(
        self,
        states: Iterable[PartitionState],
        deleted: Iterable[TopicIdPartition] = (),
        *,
        full: bool = False,
    ) -> Plan:
        """Bring the replicas in line with what the metadata says of them: `states` are partitions
        this broker hosts (every one of them when `full`, the first publish; else those that
        changed), `deleted` those it no longer hosts."""
        plan = Plan()
        first = not self.published
        states = list(states)
        if full:
            wanted = {st.key for st in states}
            for key in [k for k in self.replicas if k not in wanted]:
                self._remove(self.replicas[key], plan)
        for tp in deleted:
            r = self.replicas.get((tp.topic_id, tp.partition))
            if r is not None:
                self._remove(r, plan)
        for st in states:
            self._update(st, plan)
        if first:
            self.published = True
            # Logs on disk that the metadata does not place here, or belong to an older topic of the
            # same name: keep them out of the way (Kafka's stray replicas).
            for files in list(self.inventory.partitions.values()):
                current = files.current
                if current is not None and files.future is None and not files.duplicates:
                    # the usual case, one log: no tuple of candidates to build
                    if not self._claimed(current):
                        plan.strays.append(current)
                        self._forget(current)
                    continue
                for found in (*files.currents(), files.future):
                    if found is not None and not self._claimed(found):
                        plan.strays.append(found)
                        self._forget(found)
            plan.strays.extend(self.inventory.strays)
            self.inventory.strays = []
        return plan

    def _claimed(self, found: FoundLog) -> bool:
        r = self.replicas.get((found.topic_id, found.partition)) if found.topic_id is not None else None
        return r is not None and r.tp.topic_name == found.topic

    def _local(self, tp: TopicIdPartition, plan: Plan) -> tuple[LocalFiles, bool]:
        """The partition's logs on disk, and whether the current one is adopted: it had lost its
        partition.metadata, and the metadata places a partition of that name here."""
        key = (tp.topic_name, tp.partition)
        files = self.inventory.partitions.get(key)
        if files is None:
            return LocalFiles(), False
        adopted = False
        current, future, tid = files.current, files.future, tp.topic_id
        if (
            not files.duplicates
            and (current is None or current.topic_id == tid)
            and (future is None or future.topic_id == tid)
        ):
            return files, False  # the usual case: nothing to adopt, nothing stray
        if any(f.topic_id is None for f in files.currents()):
            for f in files.currents():
                if f.topic_id is None:
                    log.warning(
                        "partition log without partition.metadata adopted: the metadata places it here",
                        partition=f"{tp.topic_name}-{tp.partition}",
                        topic_id=str(tp.topic_id),
                        path=self._path(f),
                    )
            files.current, *files.duplicates = [
                replace(f, topic_id=tp.topic_id) if f.topic_id is None else f for f in files.currents()
            ]
            adopted = True
        for found in (*files.currents(), files.future):
            if found is not None and found.topic_id != tp.topic_id:
                # The topic was deleted and created again under the same name while we were away.
                plan.strays.append(found)
                self._forget(found)
        return self.inventory.partitions.get(key) or LocalFiles(), adopted

    def _path(self, found: FoundLog) -> str:
        return f"{self.paths.get(found.dir_id, found.dir_id)}/{found.name}"

    def _settle_duplicates(self, tp: TopicIdPartition, assigned: Uuid, files: LocalFiles, plan: Plan) -> bool:
        """The partition's current log is in several dirs: keep the copy in the dir the metadata
        assigns and move the others aside as strays (kept for the operator). False when the
        metadata assigns none of those dirs: which copy is right is not the broker's to guess."""
        keep = next((f for f in files.currents() if f.dir_id == assigned), None)
        if keep is None:
            log.error(
                "replica offline: " + duplicate_message(files.currents(), self.paths),
                partition=f"{tp.topic_name}-{tp.partition}",
            )
            return False
        others = [f for f in files.currents() if f is not keep]
        log.warning(
            "partition log found in more than one dir; keeping the copy in the dir the metadata assigns",
            partition=f"{tp.topic_name}-{tp.partition}",
            kept=self._path(keep),
            strays=[self._path(f) for f in others],
        )
        plan.strays.extend(others)
        files.current, files.duplicates = keep, []
        return True

    def _update(self, st: PartitionState, plan: Plan) -> None:
        key = (st.topic_id, st.partition)
        assigned = st.directory
        r = self.replicas.get(key)
        if r is None:
            tp = st.tp
            r = PlacedReplica(tp, assigned, None)
            self.replicas[key] = r
        else:
            tp = r.tp
            if tp.topic_name != st.topic_name:
                tp = r.tp = st.tp
            r.assigned = assigned
        r.leader = st.leader == self.broker_id
        r.leader_epoch = st.leader_epoch
        if r.reported is not None and r.reported == assigned:
            r.reported = None
        if r.location is not None:
            # Already here (or being created): only a report may be due, as the metadata may
            # lag behind a move.
            self._decide_existing(r, key, plan)
            return
        if r.failed_dir is not None:
            self.unplaced.discard(key)
            return
        files, adopted = self._local(tp, plan)
        if files.duplicates and not self._settle_duplicates(tp, assigned, files, plan):
            if r.location is None and not r.offline_reason:
                plan.went_offline.append(tp)
            r.offline_reason = duplicate_message(files.currents(), self.paths)
            self._set_location(r, None)
            # LOST: the controller treats the replica as offline until the operator removes a copy.
            self._maybe_report(r, key, LOST if self.multi_dir and assigned != LOST else None, plan)
            return
        d = decide(
            assigned,
            LocalReplica(
                files.current.dir_id if files.current else None,
                files.future.dir_id if files.future else None,
            ),
            self.dir_view,
        )
        if d.future is FutureAction.DELETE and files.future is not None:
            plan.delete_futures.append(files.future)
            self._forget(files.future)
            files = self.inventory.partitions.get((tp.topic_name, tp.partition)) or LocalFiles()
        location = d.location
        if location == PICK:
            preferred = self.preferred.pop((tp.topic_name, tp.partition), None)
            online = preferred is not None and preferred in self.online_dirs
            location = preferred if online else self._choose_dir()
        report = location if d.report == PICK else d.report
        if location is None:
            if r.location is None and not r.offline_reason:
                plan.went_offline.append(tp)
            r.offline_reason = d.reason
            self._set_location(r, None)
        else:
            r.offline_reason = ""
            self._set_location(r, location)
            if d.future is FutureAction.PROMOTE and files.future is not None:
                plan.promote_futures.append((tp, files.future, files.current))
                r.exists = True
                r.future = None
            elif d.future is FutureAction.RESUME and files.future is not None and files.current is not None:
                plan.resume_futures.append((tp, files.current, files.future))
                r.exists = True
                r.future = files.future.dir_id
            elif d.create or (adopted and files.current is not None and location == files.current.dir_id):
                # Adopted: creating it in place writes its partition.metadata and keeps its segments.
                plan.creates.append((tp, location))
            else:
                r.exists = True
        self._maybe_report(r, key, report, plan)

    def _decide_existing(self, r: PlacedReplica, key: PartitionKey, plan: Plan) -> None:
        assert r.location is not None
        if r.assigned == r.location or (r.future is not None and r.assigned == r.future):
            self.unplaced.discard(key)
            return
        d = decide(r.assigned, LocalReplica(r.location, r.future), self.dir_view)
        self._maybe_report(r, key, d.report, plan)

    def _maybe_report(self, r: PlacedReplica, key: PartitionKey, report: Uuid | None, plan: Plan) -> None:
        if report is None:
            self.unplaced.discard(key)
            return
        self.unplaced.add(key)
        if r.reported == report:
            return
        r.reported = report
        plan.reports.append((r.tp, report))

    def _choose_dir(self) -> Uuid:
        """`choose_dir` over the online dirs' counts, read from the running counts rather than copied
        for every new replica."""
        if len(self.online_dirs) <= 1:
            return choose_dir(self.counts_by_dir(), self.paths)
        if self._dir_order is None:
            # choose_dir's tie-break order; the first dir with the fewest replicas wins
            paths = self.paths
            self._dir_order = sorted(self.online_dirs, key=lambda d: (paths.get(d, ""), d))
        counts = self._counts
        best, fewest = None, -1
        for d in self._dir_order:
            n = counts[d]
            if best is None or n < fewest:
                best, fewest = d, n
        assert best is not None
        return best

    def _set_unplaced(self, key: PartitionKey, unplaced: bool) -> None:
        if unplaced:
            self.unplaced.add(key)
        else:
            self.unplaced.discard(key)

    def _set_location(self, r: PlacedReplica, location: Uuid | None) -> None:
        if r.location == location:
            return
        if r.location is not None:
            self._counts[r.location] -= 1
        if location is not None:
            self._counts[location] += 1
        r.location = location

    def _remove(self, r: PlacedReplica, plan: Plan) -> None:
        del self.replicas[r.key]
        plan.removed.append(r.key)
        self._set_unplaced(r.key, False)
        self._set_location_counts_only(r)
        files = self.inventory.partitions.pop((r.tp.topic_name, r.tp.partition), None)
        if r.location is not None and (r.exists or files is not None):
            plan.deletes.append((r.tp, r.location))
        if files is not None and files.future is not None and files.future.dir_id in self.online_dirs:
            plan.delete_futures.append(files.future)

    def _set_location_counts_only(self, r: PlacedReplica) -> None:
        if r.location is not None:
            self._counts[r.location] -= 1

    def _forget(self, found: FoundLog) -> None:
        files = self.inventory.partitions.get(found.key)
        if files is None:
            return
        if found in files.duplicates:
            files.duplicates.remove(found)
        if files.current is found:
            files.current = files.duplicates.pop(0) if files.duplicates else None
        if files.future is found:
            files.future = None
        if files.current is None and files.future is None:
            del self.inventory.partitions[found.key]

    # ---- results from the shell ----------------------------------------------------------------

    def on_created(self, topic_id: Uuid, partition: int, dir_id: Uuid) -> None:
        r = self.replicas.get((topic_id, partition))
        if r is None:
            return
        if r.location == dir_id:
            r.exists = True
        # What startup found of this partition is superseded: the replica itself says where its
        # one log is from now on (no object per replica made to say it again).
        if self.inventory.partitions:
            self.inventory.partitions.pop((r.tp.topic_name, partition), None)

    def on_future(self, topic_id: Uuid, partition: int, dir_id: Uuid | None) -> None:
        """A move into `dir_id` started (None: it ended without a swap)."""
        r = self.replicas.get((topic_id, partition))
        if r is not None:
            r.future = dir_id if dir_id is None or dir_id in self.online_dirs else None

    def on_promoted(self, topic_id: Uuid, partition: int, dir_id: Uuid) -> None:
        r = self.replicas.get((topic_id, partition))
        if r is None:
            return
        self.on_created(topic_id, partition, dir_id)
        if r.location != dir_id:
            self._set_location(r, dir_id)
        r.future = None

    # ---- directory failure ---------------------------------------------------------------------

    def fail_dir(self, dir_id: Uuid) -> list[PlacedReplica]:
        """`dir_id` went offline: every replica living there is offline from now on. Returns them."""
        if dir_id not in self.online_dirs:
            return []
        self.online_dirs.discard(dir_id)
        self.failed_dirs.add(dir_id)
        self._dir_view = None
        self._dir_order = None
        lost: list[PlacedReplica] = []
        for r in self.replicas.values():
            if r.future == dir_id:
                r.future = None
            if r.location == dir_id:
                self._set_location(r, None)
                r.failed_dir = dir_id
                r.offline_reason = f"log dir {describe_directory(dir_id)} is offline"
                self._set_unplaced(r.key, False)
                lost.append(r)
        for _key, files in list(self.inventory.partitions.items()):
            for found in (files.current, files.future):
                if found is not None and found.dir_id == dir_id:
                    self._forget(found)
        self._counts.pop(dir_id, None)
        log.debug(
            "replicas offline with their log dir",
            dir_id=str(dir_id),
            path=self.paths.get(dir_id),
            replicas=len(lost),
            leaders=sum(1 for r in lost if r.leader),
        )
        return lost

    def summary(self) -> dict[str, Any]:
        return {
            "replicas": len(self.replicas),
            "offline_replicas": self.offline_count(),
            "unplaced_replicas": len(self.unplaced),
            "replicas_by_dir": {str(d): n for d, n in sorted(self.counts_by_dir().items())},
        }
