"""The controller's story in its log: what each committed batch did to the cluster, in plain events.

Fed every committed batch (`on_committed`), whoever wrote it, it logs at INFO a broker registering,
being unfenced, shutting down and unregistering, topics created and deleted, leaders and ISRs
changing, and at WARNING a broker fenced and a log dir going offline (the broker that lost the
disk logs the one ERROR). Bulk changes are summarised: a batch moving more than `DETAIL_LIMIT`
leaders logs one line with the count, the moves between brokers and a few examples, instead of one
line per partition.

It keeps only what it needs to tell before from after (each broker's online dirs, each partition's
leader and ISR, topic names), seeded from the committed image when the controller starts or loads a
snapshot, so the story never re-derives state from the controller core.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

import structlog

from kraftpy.image import MetadataImage
from kraftpy.metadata.partition import NO_LEADER_CHANGE
from protocol import metadata_records as mr
from protocol.framing import ApiMessageAndVersion
from protocol.uuid import Uuid, describe_directory

log = structlog.get_logger("controller.story")

DETAIL_LIMIT = 5
EXAMPLES = 3


class ControllerStory:
    def __init__(self, image: MetadataImage | None = None) -> None:
        self.dirs: dict[int, frozenset[Uuid]] = {}
        self.partitions: dict[tuple[Uuid, int], tuple[int, tuple[int, ...]]] = {}
        self.topics: dict[Uuid, str] = {}
        self.shutting_down: set[int] = set()
        self._replica_changes: list[tuple[str, list[int], list[int], list[int]]] = []
        if image is not None:
            self.seed(image)

    def seed(self, image: MetadataImage) -> None:
        """Start from `image` (the committed state at startup or after loading a snapshot)."""
        self.dirs = {b: frozenset(r.directories) for b, r in image.cluster.brokers.items()}
        self.topics = {}
        self.partitions = {}
        for t in image.topics.topics_by_id.values():
            self.topics[t.id] = t.name
            for p, reg in t.partitions.items():
                self.partitions[(t.id, p)] = (reg.leader, tuple(reg.isr))

    # ---- one committed batch ---------------------------------------------------------------------

    def on_committed(self, records: Sequence[Any]) -> None:
        """`records`: the batch's records, bare or as ApiMessageAndVersion (the active controller's own)."""
        moves: list[tuple[tuple[Uuid, int], int, int, tuple[int, ...]]] = []
        isr_changes: list[tuple[tuple[Uuid, int], tuple[int, ...], tuple[int, ...]]] = []
        created: dict[str, int] = {}
        change = mr.PartitionChangeRecord
        for item in records:
            r = item.message if type(item) is ApiMessageAndVersion else item
            kind = type(r)
            if kind is change:  # by far the most frequent in a busy batch: checked first
                self._partition_change(r, moves, isr_changes)
            elif kind is mr.PartitionRecord:
                self.partitions[(r.TopicId, r.PartitionId)] = (r.Leader, tuple(r.Isr))
                name = self.topics.get(r.TopicId, str(r.TopicId))
                created[name] = created.get(name, 0) + 1
            elif kind is mr.TopicRecord:
                self.topics[r.TopicId] = r.Name
            elif kind is mr.RemoveTopicRecord:
                self._topic_removed(r.TopicId)
            elif kind is mr.RegisterBrokerRecord:
                self._registered(r)
            elif kind is mr.BrokerRegistrationChangeRecord:
                self._registration_change(r)
            elif kind is mr.FenceBrokerRecord:
                log.warning("broker fenced", broker_id=r.Id, broker_epoch=r.Epoch)
            elif kind is mr.UnfenceBrokerRecord:
                log.info("broker unfenced", broker_id=r.Id, broker_epoch=r.Epoch)
            elif kind is mr.UnregisterBrokerRecord:
                self.dirs.pop(r.BrokerId, None)
                log.info("broker unregistered", broker_id=r.BrokerId, broker_epoch=r.BrokerEpoch)
        for name, n in created.items():
            log.info("topic created", topic=name, partitions=n)
        self._tell_replicas()
        self._tell_moves(moves)
        self._tell_isr(isr_changes)

    # ---- brokers ---------------------------------------------------------------------------------

    def _registered(self, r: Any) -> None:
        self.shutting_down.discard(r.BrokerId)
        dirs = frozenset(r.LogDirs or ())
        self.dirs[r.BrokerId] = dirs
        log.info(
            "broker registered",
            broker_id=r.BrokerId,
            broker_epoch=r.BrokerEpoch,
            incarnation_id=str(r.IncarnationId),
            log_dirs=sorted(str(d) for d in dirs),
            fenced=bool(r.Fenced),
            migrating_zk_broker=bool(getattr(r, "IsMigratingZkBroker", False)),
        )

    def _registration_change(self, r: Any) -> None:
        b = r.BrokerId
        if getattr(r, "InControlledShutdown", 0) == 1:
            self.shutting_down.add(b)
            log.info("broker in controlled shutdown", broker_id=b, broker_epoch=r.BrokerEpoch)
        if r.Fenced == 1:
            if b in self.shutting_down:
                log.info(
                    "broker fenced at the end of its controlled shutdown",
                    broker_id=b,
                    broker_epoch=r.BrokerEpoch,
                )
            else:
                log.warning("broker fenced", broker_id=b, broker_epoch=r.BrokerEpoch)
        elif r.Fenced == -1:
            self.shutting_down.discard(b)
            log.info("broker unfenced", broker_id=b, broker_epoch=r.BrokerEpoch)
        new = getattr(r, "LogDirs", None)
        if new:
            before = self.dirs.get(b, frozenset())
            after = frozenset(new)
            for d in sorted(before - after, key=str):
                log.warning("log dir offline", broker_id=b, dir=describe_directory(d), online_dirs=len(after))
            for d in sorted(after - before, key=str):
                log.info("log dir online", broker_id=b, dir=describe_directory(d), online_dirs=len(after))
            self.dirs[b] = after

    # ---- partitions ------------------------------------------------------------------------------

    def _partition_change(
        self,
        r: Any,
        moves: list[tuple[tuple[Uuid, int], int, int, tuple[int, ...]]],
        isr_changes: list[tuple[tuple[Uuid, int], tuple[int, ...], tuple[int, ...]]],
    ) -> None:
        key = (r.TopicId, r.PartitionId)
        partitions = self.partitions
        leader, isr = partitions.get(key, (-1, ()))
        new_leader = leader if r.Leader == NO_LEADER_CHANGE else r.Leader
        new_isr = isr if r.Isr is None else tuple(r.Isr)
        partitions[key] = (new_leader, new_isr)
        if r.Replicas is not None:
            name = self._name(key)
            adding, removing = list(r.AddingReplicas or ()), list(r.RemovingReplicas or ())
            if adding or removing:
                log.info(
                    "reassignment started",
                    partition=name,
                    replicas=list(r.Replicas),
                    adding=adding,
                    removing=removing,
                )
            else:
                log.info("replicas changed", partition=name, replicas=list(r.Replicas))
        # Names are spelled only for the lines that show them: a bulk change logs a few examples.
        if new_leader != leader:
            moves.append((key, leader, new_leader, new_isr))
        elif new_isr != isr:
            isr_changes.append((key, isr, new_isr))

    def _name(self, key: tuple[Uuid, int]) -> str:
        return f"{self.topics.get(key[0], key[0])}-{key[1]}"

    def _topic_removed(self, topic_id: Uuid) -> None:
        name = self.topics.pop(topic_id, str(topic_id))
        gone = [k for k in self.partitions if k[0] == topic_id]
        for k in gone:
            del self.partitions[k]
        log.info("topic deleted", topic=name, partitions=len(gone))

    def _tell_replicas(self) -> None:
        """Reassignments started (adding or removing replicas) and replica sets changed (completed or cancelled)."""
        changes, self._replica_changes = self._replica_changes, []
        if len(changes) > DETAIL_LIMIT:
            started = sum(1 for _, _, a, r in changes if a or r)
            log.info(
                "replica sets changed",
                partitions=len(changes),
                reassignments_started=started,
                examples=[f"{n}: {rs}" for n, rs, _, _ in changes[:EXAMPLES]],
            )
            return
        for name, replicas, adding, removing in changes:
            if adding or removing:
                log.info(
                    "reassignment started",
                    partition=name,
                    replicas=replicas,
                    adding=adding,
                    removing=removing,
                )
            else:
                log.info("replicas changed", partition=name, replicas=replicas)

    def _tell_moves(self, moves: Sequence[tuple[tuple[Uuid, int], int, int, tuple[int, ...]]]) -> None:
        if not moves:
            return
        if len(moves) <= DETAIL_LIMIT:
            for key, old, new, isr in moves:
                event = "partition has no leader" if new < 0 else "leader changed"
                (log.warning if new < 0 else log.info)(
                    event, partition=self._name(key), leader=new, previous_leader=old, isr=list(isr)
                )
            return
        leaderless = sum(1 for _, _, new, _ in moves if new < 0)
        log.info(
            "leaders changed",
            partitions=len(moves),
            leaderless=leaderless,
            moves=_counts((old, new) for _, old, new, _ in moves),
            examples=[f"{self._name(k)}: {o}->{w}" for k, o, w, _ in moves[:EXAMPLES]],
        )
        if leaderless:
            log.warning("partitions without a leader", partitions=leaderless)

    def _tell_isr(self, changes: Sequence[tuple[tuple[Uuid, int], tuple[int, ...], tuple[int, ...]]]) -> None:
        if not changes:
            return
        if len(changes) <= DETAIL_LIMIT:
            for key, old, new in changes:
                event = (
                    "ISR shrunk"
                    if len(new) < len(old)
                    else "ISR expanded"
                    if len(new) > len(old)
                    else "ISR changed"
                )
                log.info(event, partition=self._name(key), isr=list(new), previous_isr=list(old))
            return
        shrunk = sum(1 for _, old, new in changes if len(new) < len(old))
        log.info(
            "ISRs changed",
            partitions=len(changes),
            shrunk=shrunk,
            expanded=sum(1 for _, old, new in changes if len(new) > len(old)),
            examples=[f"{self._name(k)}: {list(o)}->{list(w)}" for k, o, w in changes[:EXAMPLES]],
        )


def _counts(pairs: Iterable[tuple[int, int]]) -> dict[str, int]:
    """{"1->2": n, ...}: how many leaders went from which broker to which (-1: none)."""
    # Counted as pairs, spelled once per distinct pair: a dir failure moves 100,000 leaders.
    c = {f"{old}->{new}": n for (old, new), n in Counter(pairs).items()}
    return dict(sorted(c.items(), key=lambda kv: (-kv[1], kv[0])))
