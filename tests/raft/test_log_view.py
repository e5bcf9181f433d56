"""The core's view of its log (endOffsetForEpoch, validation, truncation, snapshots) and its timers."""

from __future__ import annotations

import random

import pytest

from kraftpy.raft.backoff import (
    binary_exponential_backoff,
    random_election_timeout,
    strict_exponential_backoff,
)
from kraftpy.raft.log_view import LogView
from kraftpy.raft.messages import DivergingEpoch, Entry, SnapshotId


def view_of(*epochs: int) -> LogView:
    view = LogView()
    view.append(tuple(Entry(i, e, b"") for i, e in enumerate(epochs)))
    return view


@pytest.mark.parametrize(
    ("epoch", "expected"),
    [(0, (0, 0)), (1, (1, 2)), (2, (1, 2)), (3, (3, 5)), (4, (3, 5)), (5, (5, 6)), (9, (5, 6))],
)
def test_end_offset_for_epoch_is_the_largest_epoch_at_or_below(epoch: int, expected: tuple[int, int]) -> None:
    """An epoch older than the whole log ends where the log's first epoch starts (Kafka's
    LeaderEpochFileCache.endOffsetFor), never with an epoch of -1."""
    assert view_of(1, 1, 3, 3, 3, 5).end_offset_for_epoch(epoch) == expected


def test_truncate_drops_the_epochs_that_start_at_or_after_the_offset() -> None:
    view = view_of(1, 1, 3, 3, 3, 5)
    view.truncate_to(3)
    assert (view.end_offset, view.last_epoch, view.epochs) == (3, 3, [(1, 0), (3, 2)])
    view.truncate_to(2)
    assert (view.end_offset, view.last_epoch, view.epochs) == (2, 1, [(1, 0)])


def test_a_local_snapshot_keeps_the_epoch_that_covers_the_new_log_start() -> None:
    view = view_of(1, 1, 3, 3, 3, 5)
    view.delete_before(SnapshotId(4, 3))
    assert (view.log_start, view.end_offset, view.epochs) == (4, 6, [(3, 4), (5, 5)])
    assert view.end_offset_for_epoch(3) == (3, 5)
    # Older than the log, ending at the snapshot's end: the snapshot answers (KafkaMetadataLog).
    assert view.end_offset_for_epoch(2) == (3, 4)
    assert view.epoch_at(3) == 3


def test_a_snapshot_of_the_whole_log_leaves_its_epoch_as_the_last() -> None:
    view = view_of(1, 2)
    view.delete_before(SnapshotId(2, 2))
    assert (view.log_start, view.end_offset, view.epochs, view.last_epoch) == (2, 2, [], 2)
    assert view.end_offset_for_epoch(2) == (2, 2)
    # No epoch known at all: the log's end and its last epoch answer (KafkaMetadataLog).
    assert view.end_offset_for_epoch(1) == (2, 2)
    assert LogView().end_offset_for_epoch(3) == (0, 0)
    installed = LogView()
    installed.install_snapshot(SnapshotId(7, 4))
    assert (installed.log_start, installed.end_offset, installed.last_epoch) == (7, 7, 4)


def test_leader_validation_answers_valid_diverging_or_snapshot() -> None:
    view = view_of(1, 1, 3, 3, 3, 5)
    assert view.validate_offset_and_epoch(0, 0) is None
    assert view.validate_offset_and_epoch(5, 3) is None
    assert view.validate_offset_and_epoch(6, 3) == DivergingEpoch(Epoch=3, EndOffset=5)
    assert view.validate_offset_and_epoch(4, 2) == DivergingEpoch(Epoch=1, EndOffset=2)
    view.delete_before(SnapshotId(4, 3))
    assert view.validate_offset_and_epoch(0, 0) == SnapshotId(4, 3)
    assert view.validate_offset_and_epoch(3, 3) == SnapshotId(4, 3)
    assert view.validate_offset_and_epoch(4, 2) == SnapshotId(4, 3)
    assert view.validate_offset_and_epoch(4, 3) is None


def test_follower_truncation_on_divergence() -> None:
    follower = view_of(1, 1, 2, 2, 2)
    # The leader has no epoch 2: it answers with epoch 1 ending at 2, which we also have.
    assert follower.truncation_offset(DivergingEpoch(Epoch=1, EndOffset=2)) == 2
    # The leader's epoch 2 ends earlier than ours.
    assert follower.truncation_offset(DivergingEpoch(Epoch=2, EndOffset=3)) == 3
    # We lack the leader's epoch 4: cut to our end of the largest epoch below it, then ask again.
    assert follower.truncation_offset(DivergingEpoch(Epoch=4, EndOffset=9)) == 5


@pytest.mark.parametrize("retries", range(1, 12))
def test_binary_exponential_backoff_stays_within_its_cap(retries: int) -> None:
    rng = random.Random(retries)
    draws = {binary_exponential_backoff(100, 1000, retries, rng) for _ in range(200)}
    assert min(draws) >= 0 and max(draws) <= min(1000, 100 * (2**retries - 1))
    assert all(d % 100 == 0 for d in draws)


def test_strict_exponential_backoff_runs_the_first_successor_at_once() -> None:
    assert [strict_exponential_backoff(1000, p, 3) for p in range(3)] == [0, 250, 500]
    assert [strict_exponential_backoff(1000, p, 2) for p in range(2)] == [0, 500]


def test_election_timeout_is_timeout_plus_random_below_timeout() -> None:
    rng = random.Random(7)
    draws = [random_election_timeout(1000, rng) for _ in range(500)]
    assert min(draws) >= 1000 and max(draws) < 2000 and len(set(draws)) > 100
