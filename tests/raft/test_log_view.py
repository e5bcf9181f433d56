"""The core's view of its log: Kafka's endOffsetForEpoch, truncation, and snapshots at the start."""

from __future__ import annotations

import pytest

from kraftpy.raft.log_view import LogView
from kraftpy.raft.messages import Entry, SnapshotId


def view_of(*epochs: int) -> LogView:
    view = LogView()
    view.append(tuple(Entry(i, e, b"") for i, e in enumerate(epochs)))
    return view


@pytest.mark.parametrize(
    ("epoch", "expected"),
    [(0, (-1, 0)), (1, (1, 2)), (2, (1, 2)), (3, (3, 5)), (4, (3, 5)), (5, (5, 6)), (9, (5, 6))],
)
def test_end_offset_for_epoch_is_the_largest_epoch_at_or_below(epoch: int, expected: tuple[int, int]) -> None:
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
    assert view.end_offset_for_epoch(2) == (-1, 4)
    assert view.epoch_at(3) == 3


def test_a_snapshot_of_the_whole_log_leaves_its_epoch_as_the_last() -> None:
    view = view_of(1, 2)
    view.delete_before(SnapshotId(2, 2))
    assert (view.log_start, view.end_offset, view.epochs, view.last_epoch) == (2, 2, [], 2)
    assert view.end_offset_for_epoch(2) == (2, 2)
    installed = LogView()
    installed.install_snapshot(SnapshotId(7, 4))
    assert (installed.log_start, installed.end_offset, installed.last_epoch) == (7, 7, 4)
