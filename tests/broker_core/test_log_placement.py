"""LogPlacement: plans from partition states, startup inventories and dir failures (field bugs 12, 14, 20)."""

from __future__ import annotations

from broker.core.local_logs import FoundLog, LogKind, classify
from broker.core.log_placement import LogPlacement
from kraftpy.image import MetadataImage, TopicIdPartition
from protocol.uuid import LOST, UNASSIGNED, Uuid
from tests.broker_core.helpers import (
    BROKER,
    D1,
    D2,
    D3,
    GONE,
    PATHS,
    TOPIC_A,
    TOPIC_B,
    apply_image,
    delta_of,
    dir_change,
    image_of,
    partition,
    replicas_change,
    topic,
)

A = "orders"


def six_partitions(dirs: list[Uuid] | None = None, leader: int = BROKER) -> MetadataImage:
    dirs = dirs or [UNASSIGNED] * 6
    return image_of(
        topic(A, TOPIC_A), *[partition(TOPIC_A, p, [BROKER], [dirs[p]], leader=leader) for p in range(6)]
    )


def found(
    dir_id: Uuid, p: int, kind: LogKind = LogKind.LOG, topic_id: Uuid | None = TOPIC_A, name: str = A
) -> FoundLog:
    suffix = {LogKind.LOG: "", LogKind.FUTURE: ".0123456789abcdef0123456789abcdef-future"}.get(kind, "")
    return FoundLog(dir_id, f"{name}-{p}{suffix}", name, p, kind, topic_id)


def tp(p: int, tid: Uuid = TOPIC_A, name: str = A) -> TopicIdPartition:
    return TopicIdPartition(tid, name, p)


def test_new_replicas_spread_over_the_dirs_and_stay_unplaced_until_the_metadata_says_so() -> None:
    h = LogPlacement(BROKER, PATHS)
    image = six_partitions()
    plan = apply_image(h, image)
    created = dict(plan.creates)
    assert set(created) == {tp(p) for p in range(6)}
    assert sorted(list(created.values()).count(d) for d in (D1, D2, D3)) == [2, 2, 2]
    assert dict(plan.reports) == created
    assert not h.ready_to_unfence() and len(h.unplaced) == 6
    for t, d in plan.creates:
        h.on_created(t.topic_id, t.partition, d)
    # The controller records the assignments.
    delta = delta_of(image, *[dir_change(TOPIC_A, t.partition, [d]) for t, d in plan.reports])
    changes = delta.local_changes(BROKER)
    plan2 = apply_image(h, delta.apply(), changed=changes.directory_ids.keys())
    assert plan2.is_empty()
    assert h.ready_to_unfence() and h.offline_count() == 0


def test_restart_with_logs_where_the_metadata_says_needs_nothing() -> None:
    inv = classify([found(D1, 0), found(D2, 1)])
    h = LogPlacement(BROKER, PATHS, inventory=inv)
    image = image_of(
        topic(A, TOPIC_A), partition(TOPIC_A, 0, [BROKER], [D1]), partition(TOPIC_A, 1, [BROKER], [D2])
    )
    plan = apply_image(h, image)
    assert plan.is_empty()
    assert h.ready_to_unfence()
    assert h.counts_by_dir() == {D1: 1, D2: 1, D3: 0}


def test_replica_moved_by_hand_while_down_is_reported_in_its_new_dir() -> None:
    """KIP-858 footnote 4."""
    h = LogPlacement(BROKER, PATHS, inventory=classify([found(D3, 0)]))
    plan = apply_image(h, image_of(topic(A, TOPIC_A), partition(TOPIC_A, 0, [BROKER], [D1])))
    assert plan.creates == [] and plan.reports == [(tp(0), D3)]
    assert not h.ready_to_unfence()


def test_restart_with_an_unreadable_dir_recreates_nothing_and_reports_lost() -> None:
    """Field bug 12 and KIP-112 "broker bootstraps with bad log directories"."""
    # D3 could not be read at startup: its id is unknown to the broker now.
    paths = {D1: PATHS[D1], D2: PATHS[D2]}
    h = LogPlacement(BROKER, paths, offline_at_start=1, inventory=classify([found(D1, 0), found(D2, 1)]))
    image = six_partitions([D1, D2, D3, D3, D1, D2])
    plan = apply_image(h, image)
    assert plan.creates == [(tp(4), D1), (tp(5), D2)]
    assert sorted(plan.reports) == sorted([(tp(2), LOST), (tp(3), LOST)])
    assert h.offline_count() == 2 and not h.ready_to_unfence()
    delta = delta_of(image, dir_change(TOPIC_A, 2, [LOST]), dir_change(TOPIC_A, 3, [LOST]))
    plan = apply_image(h, delta.apply(), changed=delta.local_changes(BROKER).directory_ids.keys())
    assert plan.is_empty()
    assert h.offline_count() == 2 and h.ready_to_unfence()
    assert h.get(TOPIC_A, 2).location is None  # type: ignore[union-attr]


def test_dir_failure_takes_its_replicas_offline_and_never_recreates_them() -> None:
    h = LogPlacement(BROKER, PATHS)
    image = six_partitions([D1, D2, D3, D1, D2, D3])
    plan = apply_image(h, image)
    for t, d in plan.creates:
        h.on_created(t.topic_id, t.partition, d)
    lost = h.fail_dir(D3)
    assert sorted(r.tp.partition for r in lost) == [2, 5]
    assert h.offline_count() == 2 and h.leads_partitions_in_dir(D3)
    assert not h.leads_partitions_in_dir(GONE)
    # The controller moves leadership away and bumps the partitions.
    delta = delta_of(image, *[replicas_change(TOPIC_A, p, [BROKER], [D3]) for p in (2, 5)])
    plan = apply_image(h, delta.apply(), changed=[tp(2), tp(5)])
    assert plan.creates == [] and plan.reports == []
    assert h.offline_count() == 2
    # A brand-new replica still goes to a good dir.
    delta = delta_of(delta.apply(), partition(TOPIC_A, 6, [BROKER], [UNASSIGNED]))
    plan = apply_image(h, delta.apply(), changed=[tp(6)])
    assert len(plan.creates) == 1 and plan.creates[0][1] in (D1, D2)


def test_leadership_leaving_the_failed_dir_is_seen() -> None:
    h = LogPlacement(BROKER, PATHS)
    image = six_partitions([D3] * 6)
    for t, d in apply_image(h, image).creates:
        h.on_created(t.topic_id, t.partition, d)
    h.fail_dir(D3)
    assert h.leads_partitions_in_dir(D3)
    from protocol import metadata_records as mr

    delta = delta_of(
        image, *[mr.PartitionChangeRecord(TopicId=TOPIC_A, PartitionId=p, Leader=-1) for p in range(6)]
    )
    apply_image(h, delta.apply(), changed=[tp(p) for p in range(6)])
    assert not h.leads_partitions_in_dir(D3)


def test_a_log_that_lost_its_partition_metadata_is_adopted_where_the_metadata_places_it() -> None:
    """Field bug 20 (KAFKA-16814): no crash. Unlike Kafka, no stray either when the metadata places
    the partition here: the log may hold the only copy of acknowledged records."""
    inv = classify([found(D1, 0, topic_id=None), found(D2, 1), found(D1, 5, topic_id=None, name="orphan")])
    assert inv.strays == []
    h = LogPlacement(BROKER, PATHS, inventory=inv)
    image = image_of(
        topic(A, TOPIC_A), partition(TOPIC_A, 0, [BROKER], [D1]), partition(TOPIC_A, 1, [BROKER], [D2])
    )
    plan = apply_image(h, image)
    assert [f.name for f in plan.strays] == ["orphan-5"]  # nothing places it here
    assert plan.creates == [(tp(0), D1)]  # in place: partition.metadata again, the segments kept
    assert plan.reports == [] and h.get(TOPIC_A, 0).location == D1  # type: ignore[union-attr]


def test_a_log_without_partition_metadata_beside_one_with_it_is_the_stray() -> None:
    for logs in (
        [found(D1, 0, topic_id=None), found(D2, 0)],
        [found(D1, 0), found(D2, 0, topic_id=None)],
    ):
        inv = classify(logs)
        without = next(f for f in logs if f.topic_id is None)
        assert inv.strays == [without]
        assert inv.partitions[(A, 0)].current == next(f for f in logs if f.topic_id is not None)
    assert (
        classify([found(D1, 0), found(D2, 0, LogKind.FUTURE, topic_id=None)]).strays[0].kind is LogKind.FUTURE
    )


def test_logs_the_metadata_does_not_want_are_strays_and_recreated_topics_start_fresh() -> None:
    inv = classify([found(D1, 0), found(D2, 0, topic_id=TOPIC_B, name="gone")])
    h = LogPlacement(BROKER, PATHS, inventory=inv)
    new_id = Uuid.from_longs(123, 456)
    image = image_of(topic(A, new_id), partition(new_id, 0, [BROKER], [D1]))
    plan = apply_image(h, image)
    assert sorted(f.name for f in plan.strays) == sorted([f"{A}-0", "gone-0"])
    assert plan.creates == [(TopicIdPartition(new_id, A, 0), D1)]


def test_replica_moved_off_this_broker_is_deleted() -> None:
    h = LogPlacement(BROKER, PATHS, inventory=classify([found(D1, 0)]))
    image = image_of(topic(A, TOPIC_A), partition(TOPIC_A, 0, [BROKER, 2], [D1, D2]))
    apply_image(h, image)
    delta = delta_of(image, replicas_change(TOPIC_A, 0, [2, 3], [D2, D3]))
    changes = delta.local_changes(BROKER)
    plan = apply_image(h, delta.apply(), changed=[], removed=changes.deletes)
    assert plan.deletes == [(tp(0), D1)]
    assert h.get(TOPIC_A, 0) is None and h.counts_by_dir()[D1] == 0


def test_abandoned_future_in_the_same_dir_is_deleted_and_accepted_future_promoted() -> None:
    """Field bug 14 (KAFKA-16082)."""
    inv = classify([found(D1, 0), found(D1, 0, LogKind.FUTURE), found(D1, 1), found(D2, 1, LogKind.FUTURE)])
    h = LogPlacement(BROKER, PATHS, inventory=inv)
    image = image_of(
        topic(A, TOPIC_A), partition(TOPIC_A, 0, [BROKER], [D1]), partition(TOPIC_A, 1, [BROKER], [D2])
    )
    plan = apply_image(h, image)
    assert [(f.dir_id, f.partition) for f in plan.delete_futures] == [(D1, 0)]
    assert [
        (t.partition, fut.dir_id, cur.dir_id if cur else None) for t, fut, cur in plan.promote_futures
    ] == [(1, D2, D1)]
    assert plan.reports == [] and h.ready_to_unfence()
    assert h.get(TOPIC_A, 1).location == D2  # type: ignore[union-attr]


def test_a_log_in_two_dirs_is_kept_where_the_metadata_assigns_it() -> None:
    """A dir dropped from log.dirs, its replicas made again in another, then the dir restored: the
    copy in the assigned dir is kept, the other moved aside. Kafka refuses to start."""
    inv = classify([found(D1, 0), found(D2, 0)])
    h = LogPlacement(BROKER, PATHS, inventory=inv)
    plan = apply_image(h, image_of(topic(A, TOPIC_A), partition(TOPIC_A, 0, [BROKER], [D2])))
    assert [(f.dir_id, f.name) for f in plan.strays] == [(D1, f"{A}-0")]
    assert plan.creates == [] and plan.reports == []
    assert h.get(TOPIC_A, 0).location == D2 and h.ready_to_unfence()  # type: ignore[union-attr]


def test_a_log_in_two_dirs_neither_assigned_is_offline_and_both_kept() -> None:
    inv = classify([found(D1, 0), found(D2, 0)])
    h = LogPlacement(BROKER, PATHS, inventory=inv)
    plan = apply_image(h, image_of(topic(A, TOPIC_A), partition(TOPIC_A, 0, [BROKER], [D3])))
    assert plan.strays == [] and plan.creates == [] and plan.deletes == []
    assert plan.went_offline == [tp(0)] and plan.reports == [(tp(0), LOST)]
    r = h.get(TOPIC_A, 0)
    assert r is not None and not r.online
    assert "Duplicate log directories for orders-0" in r.offline_reason
    assert "/data/d1" in r.offline_reason and "/data/d2" in r.offline_reason
