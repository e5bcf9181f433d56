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
