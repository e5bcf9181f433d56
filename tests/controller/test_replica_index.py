"""ReplicaIndex against the index it replaced, one insertion-ordered set per (broker, directory); but
a directory keeps its place among a broker's while it holds any replica."""

from __future__ import annotations

import random

from controller.core.replica_index import COMPACT_MIN_STALE, ReplicaIndex, TopicIdPartition, first_placements
from protocol.uuid import Uuid

T1, T2 = Uuid(b"\x01" * 16), Uuid(b"\x02" * 16)
DIRS = [Uuid(bytes([0x10 + i]) * 16) for i in range(3)]
BROKERS = (1, 2, 3, 4)

Placement = tuple[tuple[int, ...], tuple[Uuid, ...]]


class Model:
    """Partitions' current placements, the index under test, and the reference index beside it."""

    def __init__(self) -> None:
        self.placements: dict[TopicIdPartition, Placement] = {}
        self.index = ReplicaIndex(self.placements.get)
        self.reference: dict[int, dict[Uuid, dict[TopicIdPartition, None]]] = {}

    def place(self, tp: TopicIdPartition, replicas: tuple[int, ...], dirs: tuple[Uuid, ...]) -> None:
        """A new partition, or a change of its replicas or directories (as replay does it)."""
        old = self.placements.get(tp)
        self.placements[tp] = (replicas, dirs)
        self.index.add(tp, replicas, dirs)
        if old is not None:
            self.index.remove(tp, *old)
        # A replica placed again moves to the end of its directory; a directory keeps its place
        # among the broker's while it holds any replica.
        for b, d in first_placements(replicas, dirs):
            members = self.reference.setdefault(b, {}).setdefault(d, {})
            members.pop(tp, None)
            members[tp] = None
        if old is not None:
            staying = set(first_placements(replicas, dirs))
            left = [(b, d) for b, d in first_placements(*old) if (b, d) not in staying]
            self._unreference(tp, tuple(b for b, _ in left), tuple(d for _, d in left))

    def delete_topic(self, topic: Uuid) -> None:
        gone = [(tp, p) for tp, p in self.placements.items() if tp[0] == topic]
        for tp, _ in gone:
            del self.placements[tp]
        self.index.remove_all([(tp, *p) for tp, p in gone])
        for tp, p in gone:
            self._unreference(tp, *p)

    def _unreference(self, tp: TopicIdPartition, replicas: tuple[int, ...], dirs: tuple[Uuid, ...]) -> None:
        for b, d in zip(replicas, dirs, strict=True):
            del self.reference[b][d][tp]
            if not self.reference[b][d]:
                del self.reference[b][d]
                if not self.reference[b]:
                    del self.reference[b]

    def check(self) -> None:
        index = self.index
        assert sorted(index.brokers()) == sorted(self.reference)
        for b in BROKERS:
            by_dir = self.reference.get(b, {})
            assert index.directories(b) == list(by_dir)
            assert index.counts(b) == {d: len(tps) for d, tps in by_dir.items()}
            for d in DIRS:
                assert index.partitions_on(b, d) == list(by_dir.get(d, ()))
            assert list(index.of_broker(b)) == [tp for tps in by_dir.values() for tp in tps]


def random_placement(rng: random.Random) -> Placement:
    replicas = tuple(rng.sample(BROKERS, 2))
    return replicas, tuple(rng.choice(DIRS) for _ in replicas)


def test_a_replica_placed_again_moves_to_the_end_and_one_that_left_is_gone() -> None:
    m = Model()
    for p in range(3):
        m.place((T1, p), (1, 2), (DIRS[0], DIRS[0]))
    m.place((T1, 0), (1, 2), (DIRS[0], DIRS[1]))  # broker 2's replica moves; broker 1's stays
    m.place((T1, 1), (1, 3), (DIRS[0], DIRS[0]))  # broker 2 leaves
    assert m.index.partitions_on(1, DIRS[0]) == [(T1, 2), (T1, 0), (T1, 1)]
    assert m.index.partitions_on(2, DIRS[0]) == [(T1, 2)]
    assert m.index.counts(1) == {DIRS[0]: 3}
    m.check()


def test_random_changes_answer_as_ordered_sets_would() -> None:
    for seed in range(20):
        rng = random.Random(seed)
        m = Model()
        for step in range(400):
            if rng.random() < 0.03:
                m.delete_topic(rng.choice((T1, T2)))
            else:
                m.place((rng.choice((T1, T2)), rng.randrange(40)), *random_placement(rng))
            if step % 25 == 0:
                m.check()
        m.check()


def test_lists_stay_within_twice_their_live_size() -> None:
    m = Model()
    for p in range(10 * COMPACT_MIN_STALE):
        m.place((T1, p), (1,), (DIRS[0],))
    for _ in range(5):
        for p in range(10 * COMPACT_MIN_STALE):
            m.place((T1, p), (1,), (DIRS[0],))  # placed again where it is: its old entry goes stale
    lists = m.index._lists[1][DIRS[0]]
    assert len(lists) <= 2 * 10 * COMPACT_MIN_STALE
    m.check()


def test_a_deleted_topic_leaves_its_directories_exactly_when_it_held_all_of_them() -> None:
    # Enough of the topic's partitions in one list that tidying it is due before all are counted.
    m = Model()
    m.place((T2, 0), (1,), (DIRS[0],))
    for p in range(4 * COMPACT_MIN_STALE):
        m.place((T1, p), (1, 2), (DIRS[0], DIRS[1]))
    m.delete_topic(T1)
    assert m.index.partitions_on(1, DIRS[0]) == [(T2, 0)]
    assert m.index.directories(2) == []
    m.check()


def test_a_copy_is_independent_of_the_original() -> None:
    m = Model()
    m.place((T1, 0), (1,), (DIRS[0],))
    copy = m.index.copy()
    m.place((T1, 1), (1,), (DIRS[0],))
    assert copy.partitions_on(1, DIRS[0]) == [(T1, 0)]
    assert m.index.partitions_on(1, DIRS[0]) == [(T1, 0), (T1, 1)]


def test_a_broker_named_twice_counts_once_at_its_first_place() -> None:
    # Replay takes a malformed record as it is (a ZooKeeper assignment migrated as written).
    m = Model()
    m.place((T1, 0), (1, 1), (DIRS[0], DIRS[0]))
    m.place((T2, 0), (1, 1), (DIRS[1], DIRS[2]))
    others = [(T1, p) for p in range(1, 2 * COMPACT_MIN_STALE)]
    for tp in others:
        m.place(tp, (1,), (DIRS[0],))
    m.check()
    for tp in others[:-1]:
        m.place(tp, (2,), (DIRS[0],))  # enough leave for the list to be rewritten
    m.place((T1, 0), (1,), (DIRS[0],))
    m.place(others[-1], (2,), (DIRS[0],))
    assert m.index.partitions_on(1, DIRS[0]) == [(T1, 0)]
    assert m.index.counts(1) == {DIRS[0]: 1, DIRS[1]: 1}
    m.check()
