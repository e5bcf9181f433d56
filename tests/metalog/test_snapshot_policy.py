"""When a metadata snapshot is due, for the controller and the broker alike."""

from __future__ import annotations

from kraftpy.metalog.snapshot_policy import SnapshotPolicy


def test_snapshot_policy_by_bytes_and_by_time() -> None:
    p = SnapshotPolicy(max_bytes_between=1000, max_interval_ms=0, last_snapshot_ms=0)
    p.on_appended(600)
    assert p.due(10, 50) is None
    p.on_appended(600)
    assert p.due(10, 60) is not None
    p.started()
    assert p.due(10, 60) is None  # one at a time
    p.finished(20, 60, bytes_covered=1200)
    assert p.bytes_since == 0 and p.due(10_000_000, 60) is None  # time trigger off; same offset never twice

    t = SnapshotPolicy(max_bytes_between=10**9, max_interval_ms=100, last_snapshot_ms=0)
    assert t.due(99, 5) is None
    assert t.due(100, 5) is not None
    assert t.due(100, 0) is None  # nothing committed beyond the last snapshot


def test_an_installed_snapshot_counts_as_the_last_one() -> None:
    p = SnapshotPolicy(max_bytes_between=10, max_interval_ms=0, last_snapshot_ms=0)
    p.on_appended(100)
    p.installed(50)
    assert p.due(0, 50) is None
    assert p.due(0, 51) is not None


def test_the_time_trigger_counts_from_the_oldest_record_not_in_a_snapshot() -> None:
    # KIP-876: a snapshot is due once a record newer than the latest snapshot is the interval old,
    # not once the interval has passed since the last snapshot.
    p = SnapshotPolicy(max_bytes_between=10**9, max_interval_ms=100, last_snapshot_ms=0)
    assert p.due(0, 0) is None
    p.on_appended(10)
    assert p.due(50, 1) is None
    p.started()
    p.finished(60, 1, bytes_covered=10)
    assert p.pending_since_ms is None
    assert p.due(10_000, 1) is None  # a quiet while: nothing to snapshot
    p.on_appended(10)
    assert p.due(10_000, 2) is None  # the record is new, however long ago the last snapshot was
    assert p.due(10_099, 2) is None
    reason = p.due(10_100, 2)
    assert reason is not None and "100 ms old" in reason


def test_records_arriving_while_a_snapshot_is_written_keep_their_own_clock() -> None:
    p = SnapshotPolicy(max_bytes_between=10**9, max_interval_ms=100, last_snapshot_ms=0)
    p.on_appended(10)
    assert p.due(0, 5) is None
    assert p.due(100, 5) is not None
    p.started()
    p.on_appended(10)
    assert p.due(130, 8) is None  # offsets 5..7 arrive while the snapshot of 0..4 is written
    p.finished(150, 5, bytes_covered=10)
    assert p.pending_since_ms == 130
    assert p.due(229, 8) is None
    assert p.due(230, 8) is not None
    # A failed snapshot leaves the oldest record where it was.
    p.started()
    p.failed()
    assert p.pending_since_ms == 130 and p.due(231, 8) is not None


def test_an_installed_snapshot_covering_everything_stops_the_clock() -> None:
    p = SnapshotPolicy(max_bytes_between=10**9, max_interval_ms=100, last_snapshot_ms=0)
    assert p.due(10, 20) is None
    p.installed(20)
    assert p.pending_since_ms is None
    assert p.due(1000, 20) is None
    assert p.due(1000, 21) is None  # a new record starts its own interval
    assert p.due(1100, 21) is not None
