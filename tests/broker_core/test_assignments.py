"""AssignmentsManager with a fake clock: batching, dedupe, backoff, retries, drops (field bugs 7, 8)."""

from __future__ import annotations

import random

from broker.core.assignments import AssignmentsManager, ImageReplicaView, build_request
from protocol.errors import Errors
from protocol.rpc.assign_replicas_to_dirs import AssignReplicasToDirsRequest, AssignReplicasToDirsResponse
from protocol.uuid import Uuid
from tests.broker_core.helpers import (
    BROKER,
    D1,
    D2,
    TOPIC_A,
    TOPIC_B,
    FakeClock,
    image_of,
    partition,
    replicas_change,
    topic,
)

EPOCH = 7


class Everyone:
    def is_replica(self, topic_id: Uuid, partition: int) -> bool:
        return True


def manager(**kw: object) -> tuple[AssignmentsManager, FakeClock]:
    return AssignmentsManager(BROKER, rng=random.Random(1), **kw), FakeClock()  # type: ignore[arg-type]


def assigned(req: AssignReplicasToDirsRequest) -> dict[tuple[Uuid, int], Uuid]:
    return {
        (t.TopicId, p.PartitionIndex): d.Id for d in req.Directories for t in d.Topics for p in t.Partitions
    }


def reply(
    req: AssignReplicasToDirsRequest,
    errors: dict[tuple[Uuid, int], Errors] | None = None,
    omit: set[tuple[Uuid, int]] = frozenset(),
) -> AssignReplicasToDirsResponse:  # type: ignore[assignment]
    R = AssignReplicasToDirsResponse
    errors = errors or {}
    return R(
        ErrorCode=0,
        Directories=[
            R.DirectoryData(
                Id=d.Id,
                Topics=[
                    R.TopicData(
                        TopicId=t.TopicId,
                        Partitions=[
                            R.PartitionData(
                                PartitionIndex=p.PartitionIndex,
                                ErrorCode=int(errors.get((t.TopicId, p.PartitionIndex), 0)),
                            )
                            for p in t.Partitions
                            if (t.TopicId, p.PartitionIndex) not in omit
                        ],
                    )
                    for t in d.Topics
                ],
            )
            for d in req.Directories
        ],
    )


def test_first_assignment_waits_the_batching_window_and_then_goes_in_one_request() -> None:
    m, clock = manager()
    m.on_assignment(clock.now_ms, TOPIC_A, 0, D1, "new")
    clock.advance(30)
    m.on_assignment(clock.now_ms, TOPIC_A, 1, D2, "new")
    m.on_assignment(clock.now_ms, TOPIC_B, 0, D1, "new")
    assert m.next_wakeup_ms() == clock.now_ms - 30 + 100  # the earlier deadline is kept
    assert m.poll(clock.now_ms, Everyone(), EPOCH) is None
    clock.now_ms = m.next_wakeup_ms()  # type: ignore[assignment]
    req = m.poll(clock.now_ms, Everyone(), EPOCH)
    assert req is not None and req.BrokerId == BROKER and req.BrokerEpoch == EPOCH
    assert assigned(req) == {(TOPIC_A, 0): D1, (TOPIC_A, 1): D2, (TOPIC_B, 0): D1}
    assert m.queued == 3 and m.poll(clock.now_ms + 1000, Everyone(), EPOCH) is None  # one in flight


def test_duplicates_collapse_and_the_latest_wins() -> None:
    """Field bug 8: dedupe queued duplicates."""
    m, clock = manager()
    for d in (D1, D2, D1, D2):
        m.on_assignment(clock.now_ms, TOPIC_A, 0, d, "moved")
    assert m.queued == 1
    clock.advance(100)
    req = m.poll(clock.now_ms, Everyone(), EPOCH)
    assert req is not None and assigned(req) == {(TOPIC_A, 0): D2}


def test_many_at_once_queue_as_one_by_one_would() -> None:
    m, clock = manager()
    m.on_assignment(clock.now_ms, TOPIC_A, 0, D2, "found")
    clock.advance(30)
    m.on_assignments(clock.now_ms, [(TOPIC_A, 0, D1), (TOPIC_A, 1, D2), (TOPIC_B, 0, D1)], "new")
    assert m.queued == 3
    assert m.next_wakeup_ms() == clock.now_ms - 30 + 100  # the earlier deadline is kept
    clock.now_ms = m.next_wakeup_ms()  # type: ignore[assignment]
    req = m.poll(clock.now_ms, Everyone(), EPOCH)
    assert req is not None and assigned(req) == {(TOPIC_A, 0): D1, (TOPIC_A, 1): D2, (TOPIC_B, 0): D1}
    assert {a.reason for a in m.in_flight.values()} == {"new"}  # type: ignore[union-attr]


def test_nothing_is_sent_before_the_broker_has_an_epoch_and_nothing_is_lost() -> None:
    """Field bug 8: assignments made before the manager can send are kept, not refused."""
    m, clock = manager()
    m.on_assignment(clock.now_ms, TOPIC_A, 0, D1, "found")
    clock.advance(100)
    assert m.poll(clock.now_ms, Everyone(), -1) is None
    assert m.queued == 1
    clock.now_ms = m.next_wakeup_ms()  # type: ignore[assignment]
    req = m.poll(clock.now_ms, Everyone(), EPOCH)
    assert req is not None and assigned(req) == {(TOPIC_A, 0): D1}


def test_at_most_2250_per_request_and_a_full_batch_goes_at_once() -> None:
    m, clock = manager()
    tids = [Uuid.from_longs(1000 + i, 1) for i in range(3)]
    for i in range(5000):
        m.on_assignment(clock.now_ms, tids[i % 3], i, D1 if i % 2 else D2, "new")
    assert m.next_wakeup_ms() == clock.now_ms  # more than a request's worth waiting
    sizes = []
    while m.queued:
        clock.now_ms = max(clock.now_ms, m.next_wakeup_ms() or clock.now_ms)
        req = m.poll(clock.now_ms, Everyone(), EPOCH)
        assert req is not None
        sizes.append(len(assigned(req)))
        m.on_response(clock.now_ms, reply(req))
    assert sizes == [2250, 2250, 500]
    assert m.requests_sent == 3 and m.assignments_sent == 5000


def test_global_failure_requeues_with_exponential_backoff_unless_a_newer_assignment_came() -> None:
    m, clock = manager()
    m.on_assignment(clock.now_ms, TOPIC_A, 0, D1, "new")
    m.on_assignment(clock.now_ms, TOPIC_A, 1, D1, "new")
    clock.advance(100)
    req = m.poll(clock.now_ms, Everyone(), EPOCH)
    assert req is not None
    m.on_assignment(clock.now_ms, TOPIC_A, 1, D2, "moved again")  # newer than the one in flight
    outcome = m.on_response(clock.now_ms, None, "timed out")
    assert outcome.global_failure and m.previous_global_failures == 1
    assert m.queued == 2
    delays = []
    for failures in range(1, 9):
        delay = m.next_wakeup_ms() - clock.now_ms  # type: ignore[operator]
        delays.append(delay)
        clock.now_ms += delay
        req = m.poll(clock.now_ms, Everyone(), EPOCH)
        assert req is not None
        assert assigned(req) == {(TOPIC_A, 0): D1, (TOPIC_A, 1): D2}
        m.on_response(clock.now_ms, AssignReplicasToDirsResponse(ErrorCode=Errors.STALE_BROKER_EPOCH))
        assert m.previous_global_failures == failures + 1
    assert 196 <= delays[0] <= 204 and 392 <= delays[1] <= 408
    assert delays[-1] <= 10_000 and delays[-1] >= 9_800
    req_delay = m.next_wakeup_ms() - clock.now_ms  # type: ignore[operator]
    clock.now_ms += req_delay
    req = m.poll(clock.now_ms, Everyone(), EPOCH)
    assert req is not None
    m.on_response(clock.now_ms, reply(req))
    assert m.previous_global_failures == 0 and m.queued == 0


def test_partition_errors_and_missing_partitions_are_retried_successes_run_callbacks() -> None:
    m, clock = manager()
    done: list[int] = []
    for p in range(3):
        m.on_assignment(clock.now_ms, TOPIC_A, p, D1, "new", on_success=lambda p=p: done.append(p))
    clock.advance(100)
    req = m.poll(clock.now_ms, Everyone(), EPOCH)
    assert req is not None
    outcome = m.on_response(
        clock.now_ms,
        reply(req, errors={(TOPIC_A, 1): Errors.UNKNOWN_TOPIC_OR_PARTITION}, omit={(TOPIC_A, 2)}),
    )
    assert done == [0]
    assert sorted(a.partition for a in outcome.retried) == [1, 2]
    assert m.queued == 2
    assert m.next_wakeup_ms() == clock.now_ms + 100
    clock.advance(100)
    req = m.poll(clock.now_ms, Everyone(), EPOCH)
    assert req is not None and set(assigned(req)) == {(TOPIC_A, 1), (TOPIC_A, 2)}
    m.on_response(clock.now_ms, reply(req))
    assert sorted(done) == [0, 1, 2] and m.queued == 0


def test_assignment_for_a_replica_moved_away_is_dropped_not_retried_forever() -> None:
    """Field bug 7 (KAFKA-16886): NOT_LEADER_OR_FOLLOWER after a reassignment away."""
    image = image_of(topic("a", TOPIC_A), partition(TOPIC_A, 0, [BROKER, 2], [D1, D2]))
    m, clock = manager()
    m.on_assignment(clock.now_ms, TOPIC_A, 0, D1, "new")
    clock.advance(100)
    req = m.poll(clock.now_ms, ImageReplicaView(image, BROKER), EPOCH)
    assert req is not None
    # Meanwhile the controller moved the replica to brokers 2 and 3.
    m.on_response(clock.now_ms, reply(req, errors={(TOPIC_A, 0): Errors.NOT_LEADER_OR_FOLLOWER}))
    assert m.queued == 1
    image = image_of(replicas_change(TOPIC_A, 0, [2, 3], [D2, D1]), base=image)
    clock.advance(100)
    assert m.poll(clock.now_ms, ImageReplicaView(image, BROKER), EPOCH) is None
    assert m.queued == 0 and m.dropped == 1
    assert m.next_wakeup_ms() is None


def test_assignments_for_deleted_topics_and_partitions_are_dropped() -> None:
    image = image_of(topic("a", TOPIC_A), partition(TOPIC_A, 0, [BROKER], [D1]))
    m, clock = manager()
    m.on_assignment(clock.now_ms, TOPIC_A, 0, D1, "ok")
    m.on_assignment(clock.now_ms, TOPIC_A, 9, D1, "partition gone")
    m.on_assignment(clock.now_ms, TOPIC_B, 0, D1, "topic gone")
    clock.advance(100)
    req = m.poll(clock.now_ms, ImageReplicaView(image, BROKER), EPOCH)
    assert req is not None and assigned(req) == {(TOPIC_A, 0): D1}
    assert m.dropped == 2


def test_request_groups_by_directory_then_topic() -> None:
    from broker.core.assignments import Assignment

    req = build_request(
        1,
        2,
        [
            Assignment(TOPIC_B, 1, D1, "", 0),
            Assignment(TOPIC_A, 3, D1, "", 0),
            Assignment(TOPIC_A, 0, D1, "", 0),
            Assignment(TOPIC_A, 2, D2, "", 0),
        ],
    )
    assert [d.Id for d in req.Directories] == sorted([D1, D2])
    d1 = next(d for d in req.Directories if d.Id == D1)
    assert [(t.TopicId, [p.PartitionIndex for p in t.Partitions]) for t in d1.Topics] == sorted(
        [(TOPIC_A, [0, 3]), (TOPIC_B, [1])]
    )


def test_with_two_in_flight_a_partition_is_never_in_both_and_answers_may_come_in_any_order() -> None:
    m, clock = manager(max_per_request=2, max_in_flight=2)
    for p in range(5):
        m.on_assignment(clock.now_ms, TOPIC_A, p, D1, "new")
    assert m.next_wakeup_ms() == clock.now_ms  # more than a request's worth waiting
    first = m.poll(clock.now_ms, Everyone(), EPOCH)
    assert first is not None and set(assigned(first)) == {(TOPIC_A, 0), (TOPIC_A, 1)}
    m.on_assignment(clock.now_ms, TOPIC_A, 0, D2, "moved")  # newer than the one in flight
    second = m.poll(clock.now_ms, Everyone(), EPOCH)
    assert second is not None and set(assigned(second)) == {(TOPIC_A, 2), (TOPIC_A, 3)}
    assert m.poll(clock.now_ms + 1000, Everyone(), EPOCH) is None  # two in flight
    assert m.next_wakeup_ms() is None and m.queued == 6
    m.on_response(clock.now_ms, reply(second), request=second)
    assert m.queued == 4
    clock.advance(100)
    third = m.poll(clock.now_ms, Everyone(), EPOCH)
    # partition 0's newer assignment waits for the answer about its older one
    assert third is not None and assigned(third) == {(TOPIC_A, 4): D1}
    m.on_response(clock.now_ms, None, "timed out", request=first)
    assert m.queued == 3 and m.previous_global_failures == 1
    clock.now_ms = m.next_wakeup_ms()  # type: ignore[assignment]
    fourth = m.poll(clock.now_ms, Everyone(), EPOCH)
    assert fourth is not None and assigned(fourth) == {(TOPIC_A, 0): D2, (TOPIC_A, 1): D1}
    m.on_response(clock.now_ms, reply(third), request=third)
    m.on_response(clock.now_ms, reply(fourth), request=fourth)
    assert m.queued == 0 and m.requests_sent == 4 and m.assignments_sent == 7
