"""Which partitions have a replica in each directory of each broker: the controller's one
per-broker index (see ReplicationControlManager).

Each (broker, directory) holds a list of partitions in the order their replicas were placed there,
and the index only ever appends to it. A partition that leaves (or is placed there again) leaves its
earlier entry behind, counted as stale; only its last entry counts, and only while the partition
still has that replica there. A list is rewritten without its stale entries once they are more than
half of it, and dropped once nothing in it is live, so it stays within twice its live size.

Why not a dict per directory, used as an ordered set: a controller restarting from a
2,000,000-partition snapshot adds 6,000,000 replicas here, one at a time, to 40,000 directories.
Appending a reference to a list costs about half an insert into a dict (no hashing, no table to
grow) and a third of its memory, and a query of a directory with no stale entry is a plain copy.
Removal, the rare case, pays instead: a stale entry is found by looking at the partition.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from protocol.uuid import Uuid

TopicIdPartition = tuple[Uuid, int]
Placement = Callable[[TopicIdPartition], tuple[Sequence[int], Sequence[Uuid]] | None]
"""A partition's replicas and their directories as they are now (None once it is gone)."""

COMPACT_MIN_STALE = 16
"""A list is rewritten once it has more stale entries than this and than live ones."""


def first_placements(replicas: Sequence[int], directories: Sequence[Uuid]) -> list[tuple[int, Uuid]]:
    """(broker, directory) of each replica; a broker named twice (a malformed record, which replay
    takes as it is) counts once, at its first place."""
    seen: set[int] = set()
    return [
        (b, d)
        for b, d in zip(replicas, directories, strict=True)
        if not (b in seen or seen.add(b))  # type: ignore[func-returns-value]
    ]


@dataclass(slots=True, eq=False)
class ReplicaIndex:
    """Partitions by (broker, directory), in placement order. `placement` answers for the
    partitions' current state, so an update must come after the partition itself changed."""

    _placement: Placement
    _lists: dict[int, dict[Uuid, list[TopicIdPartition]]] = field(default_factory=dict)
    _stale: dict[tuple[int, Uuid], int] = field(default_factory=dict)

    # ---- updates -----------------------------------------------------------------------------

    def add(self, tp: TopicIdPartition, replicas: Sequence[int], directories: Sequence[Uuid]) -> None:
        """The partition has these replicas in these directories (a replica already indexed there
        moves to the end, as if it were placed again)."""
        # Looked up before created: a setdefault would build an empty dict or list per call, and a
        # restart comes here for every replica of every partition.
        index = self._lists
        pairs: Iterable[tuple[int, Uuid]] = zip(replicas, directories, strict=True)
        if len(set(replicas)) != len(replicas):
            pairs = first_placements(replicas, directories)
        for b, d in pairs:
            by_dir = index.get(b)
            if by_dir is None:
                by_dir = index[b] = {}
            members = by_dir.get(d)
            if members is None:
                members = by_dir[d] = []
            members.append(tp)

    def remove(self, tp: TopicIdPartition, replicas: Sequence[int], directories: Sequence[Uuid]) -> None:
        """The partition's entries for these replicas are stale: it left them, or it was indexed
        again (`add`, called first) where it stays."""
        self.remove_all([(tp, replicas, directories)])

    def remove_all(self, removed: Sequence[tuple[TopicIdPartition, Sequence[int], Sequence[Uuid]]]) -> None:
        """`remove` for each, the lists tidied once all are counted: a list rewritten halfway would
        already lack the entries of partitions (a deleted topic's) not yet counted."""
        stale_counts = self._stale
        touched: dict[tuple[int, Uuid], None] = {}
        for _tp, replicas, directories in removed:
            for b, d in first_placements(replicas, directories):
                key = (b, d)
                stale_counts[key] = stale_counts.get(key, 0) + 1
                touched[key] = None
        index = self._lists
        for key in touched:
            b, d = key
            by_dir = index[b]
            members = by_dir[d]
            stale = stale_counts[key]
            if stale >= len(members):
                del by_dir[d]
                del stale_counts[key]
                if not by_dir:
                    del index[b]
            elif stale > COMPACT_MIN_STALE and 2 * stale > len(members):
                by_dir[d] = self._live(b, d, members)
                del stale_counts[key]

    # ---- queries -----------------------------------------------------------------------------

    def partitions_on(self, broker_id: int, directory: Uuid) -> list[TopicIdPartition]:
        """The partitions with a replica of the broker in the directory, in placement order."""
        members = self._lists.get(broker_id, {}).get(directory)
        if members is None:
            return []
        if not self._stale.get((broker_id, directory)):
            return list(members)
        return self._live(broker_id, directory, members)

    def directories(self, broker_id: int) -> list[Uuid]:
        """The broker's directories holding at least one of its replicas, in the order first used."""
        return list(self._lists.get(broker_id, ()))

    def counts(self, broker_id: int) -> dict[Uuid, int]:
        """How many of the broker's replicas are in each directory."""
        stale = self._stale
        return {
            d: len(members) - stale.get((broker_id, d), 0)
            for d, members in self._lists.get(broker_id, {}).items()
        }

    def of_broker(self, broker_id: int) -> Iterator[TopicIdPartition]:
        """Every partition with a replica on the broker, directory by directory; nothing may change
        the index while it is read (a caller that stops at the first match copies nothing)."""
        stale = self._stale
        for d, members in list(self._lists.get(broker_id, {}).items()):
            if stale.get((broker_id, d)):
                yield from self._live(broker_id, d, members)
            else:
                yield from members

    def brokers(self) -> list[int]:
        return list(self._lists)

    def copy(self) -> ReplicaIndex:
        """An index that later updates of this one leave alone (and the other way round)."""
        lists = {b: {d: list(m) for d, m in by_dir.items()} for b, by_dir in self._lists.items()}
        return ReplicaIndex(self._placement, lists, dict(self._stale))

    def _live(
        self, broker_id: int, directory: Uuid, members: list[TopicIdPartition]
    ) -> list[TopicIdPartition]:
        """`members` without stale entries: for each partition its last entry, if it is still there."""
        is_on = self._is_on
        seen: set[TopicIdPartition] = set()
        live: list[TopicIdPartition] = []
        for tp in reversed(members):
            if tp not in seen:
                seen.add(tp)
                if is_on(tp, broker_id, directory):
                    live.append(tp)
        live.reverse()
        return live

    def _is_on(self, tp: TopicIdPartition, broker_id: int, directory: Uuid) -> bool:
        """Whether the partition has, now, its replica of the broker in the directory (its first,
        as `first_placements` counts it)."""
        placement = self._placement(tp)
        if placement is None:
            return False
        for b, d in zip(*placement, strict=True):
            if b == broker_id:
                return d == directory
        return False
