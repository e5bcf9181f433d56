"""The Fetch / FetchSnapshot rules of the controller, without sockets or files (reference 9)."""

from __future__ import annotations

import pytest

from controller.raft_fetch import (
    EpochEntry,
    FetchKind,
    FetchRequestView,
    LogState,
    OffsetAndEpoch,
    decide_fetch,
    decide_fetch_snapshot,
)
from protocol.errors import Errors

CLUSTER = "MkU3OEVBNTcwNTJENDM2Qk"


def state(**overrides: object) -> LogState:
    base: dict[str, object] = dict(
        cluster_id=CLUSTER,
        leader_id=1,
        leader_epoch=4,
        log_start_offset=0,
        log_end_offset=40,
        high_watermark=40,
        epochs=(EpochEntry(1, 0), EpochEntry(2, 10), EpochEntry(4, 25)),
    )
    base.update(overrides)
    return LogState(**base)  # type: ignore[arg-type]


def fetch(
    offset: int, last_epoch: int, *, leader_epoch: int = 4, cluster: str | None = CLUSTER, wait: int = 0
):
    return FetchRequestView(
        cluster_id=cluster,
        replica_id=7,
        current_leader_epoch=leader_epoch,
        fetch_offset=offset,
        last_fetched_epoch=last_epoch,
        max_wait_ms=wait,
    )


def test_empty_follower_on_unsnapshotted_log_reads_from_zero() -> None:
    d = decide_fetch(state(), fetch(0, 0))
    assert d.kind is FetchKind.RECORDS and d.read_offset == 0


@pytest.mark.parametrize(
    ("offset", "last_epoch", "expected"),
    [
        (15, 2, None),  # inside epoch 2, which ended at 25
        (25, 2, None),  # exactly at the end of epoch 2
        (40, 4, None),  # caught up
        (30, 2, OffsetAndEpoch(25, 2)),  # has records of epoch 2 the leader never wrote
        (12, 3, OffsetAndEpoch(25, 2)),  # epoch 3 never existed on the leader: truncate back into epoch 2
        (41, 4, OffsetAndEpoch(40, 4)),  # ahead of the leader in its own epoch
        (5, 1, None),
        (11, 1, OffsetAndEpoch(10, 1)),
    ],
)
def test_log_matching(offset: int, last_epoch: int, expected: OffsetAndEpoch | None) -> None:
    d = decide_fetch(state(), fetch(offset, last_epoch))
    if expected is None:
        assert d.kind is FetchKind.RECORDS and d.read_offset == offset
    else:
        assert d.kind is FetchKind.DIVERGING and d.diverging == expected


def test_epoch_older_than_all_history_ends_where_the_first_epoch_starts() -> None:
    s = state(epochs=(EpochEntry(2, 10), EpochEntry(4, 25)), log_start_offset=0)
    d = decide_fetch(s, fetch(12, 1))
    assert d.kind is FetchKind.DIVERGING and d.diverging == OffsetAndEpoch(10, 1)


@pytest.mark.parametrize(
    ("req", "code"),
    [
        (fetch(0, 0, cluster="someone-else"), Errors.INCONSISTENT_CLUSTER_ID),
        (fetch(0, 0, leader_epoch=3), Errors.FENCED_LEADER_EPOCH),
        (fetch(0, 0, leader_epoch=5), Errors.UNKNOWN_LEADER_EPOCH),
        (fetch(-1, 0), Errors.INVALID_REQUEST),
        (fetch(3, -1), Errors.INVALID_REQUEST),
        (
            fetch(3, 4, leader_epoch=3),
            Errors.INVALID_REQUEST,
        ),  # last fetched epoch beyond the one it believes in
    ],
)
def test_request_validation(req: FetchRequestView, code: Errors) -> None:
    d = decide_fetch(state(), req)
    assert d.kind is FetchKind.ERROR and d.error is code


def test_missing_cluster_id_is_accepted() -> None:
    assert decide_fetch(state(), fetch(40, 4, cluster=None)).kind is FetchKind.RECORDS


def test_leader_shutting_down_or_not_leader() -> None:
    assert decide_fetch(state(shutting_down=True), fetch(0, 0)).error is Errors.BROKER_NOT_AVAILABLE
    assert decide_fetch(state(is_leader=False), fetch(0, 0)).error is Errors.NOT_LEADER_OR_FOLLOWER


SNAP = OffsetAndEpoch(100, 3)


def truncated() -> LogState:
    # A snapshot at 100 let the log drop everything before it; the epoch history was cut to match.
    return state(
        log_start_offset=100,
        log_end_offset=150,
        high_watermark=150,
        leader_epoch=4,
        epochs=(EpochEntry(3, 100), EpochEntry(4, 120)),
        snapshots=(SNAP,),
    )


@pytest.mark.parametrize(
    ("offset", "last_epoch"),
    [(0, 0), (50, 2), (99, 3), (100, 2), (110, 2)],
)
def test_fetch_below_or_before_the_snapshot_gets_the_snapshot_id(offset: int, last_epoch: int) -> None:
    d = decide_fetch(truncated(), fetch(offset, last_epoch))
    assert d.kind is FetchKind.SNAPSHOT and d.snapshot_id == SNAP


def test_fetch_at_log_start_in_the_snapshot_epoch_reads() -> None:
    d = decide_fetch(truncated(), fetch(100, 3))
    assert d.kind is FetchKind.RECORDS and d.read_offset == 100


def test_diverging_below_the_start_points_at_the_oldest_snapshot() -> None:
    # Epoch 3's history was cut at the snapshot; a follower claiming a later-lost epoch 3 tail diverges.
    d = decide_fetch(truncated(), fetch(130, 3))
    assert d.kind is FetchKind.DIVERGING and d.diverging == OffsetAndEpoch(120, 3)


def test_offset_zero_prefers_the_latest_snapshot_even_with_the_whole_log() -> None:
    s = state(snapshots=(OffsetAndEpoch(30, 4),))
    d = decide_fetch(s, fetch(0, 0))
    assert d.kind is FetchKind.SNAPSHOT and d.snapshot_id == OffsetAndEpoch(30, 4)
    # Past offset 0 the log is still there to read, from the snapshot's epoch on...
    assert decide_fetch(s, fetch(32, 4)).kind is FetchKind.RECORDS
    # ...but a follower still in an epoch older than the oldest snapshot is sent to the snapshot.
    assert decide_fetch(s, fetch(5, 1)).kind is FetchKind.SNAPSHOT


def test_bootstrap_snapshot_does_not_count() -> None:
    s = state(snapshots=(OffsetAndEpoch(0, 0),))
    assert decide_fetch(s, fetch(0, 0)).kind is FetchKind.RECORDS


def test_long_poll_only_when_caught_up_and_asked_to_wait() -> None:
    s = state(high_watermark=40)
    caught_up = decide_fetch(s, fetch(40, 4, wait=500))
    assert caught_up.should_wait(s, 500)
    assert not caught_up.should_wait(s, 0)
    behind = decide_fetch(s, fetch(30, 4, wait=500))
    assert behind.records_available(s) and not behind.should_wait(s, 500)
    diverged = decide_fetch(s, fetch(41, 4, wait=500))
    assert not diverged.should_wait(s, 500)


def test_uncommitted_tail_is_not_available() -> None:
    s = state(log_end_offset=40, high_watermark=35)
    d = decide_fetch(s, fetch(35, 4, wait=100))
    assert d.kind is FetchKind.RECORDS and not d.records_available(s) and d.should_wait(s, 100)


class TestFetchSnapshot:
    sizes = {SNAP: 1000}

    def chunk(self, **kw: object):
        args: dict[str, object] = dict(
            cluster_id=CLUSTER, current_leader_epoch=4, snapshot_id=SNAP, position=0, max_bytes=300
        )
        args.update(kw)
        return decide_fetch_snapshot(truncated(), self.sizes, **args)  # type: ignore[arg-type]

    def test_chunks(self) -> None:
        c = self.chunk(position=900)
        assert c.error is Errors.NONE and (c.position, c.length, c.size) == (900, 100, 1000)
        assert self.chunk().length == 300

    @pytest.mark.parametrize(
        ("kw", "code"),
        [
            ({"snapshot_id": OffsetAndEpoch(90, 3)}, Errors.SNAPSHOT_NOT_FOUND),
            ({"position": 1000}, Errors.POSITION_OUT_OF_RANGE),
            ({"position": -1}, Errors.POSITION_OUT_OF_RANGE),
            ({"current_leader_epoch": 2}, Errors.FENCED_LEADER_EPOCH),
            ({"cluster_id": "x"}, Errors.INCONSISTENT_CLUSTER_ID),
        ],
    )
    def test_errors(self, kw: dict[str, object], code: Errors) -> None:
        assert self.chunk(**kw).error is code
