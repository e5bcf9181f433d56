"""The broker's Raft-observer fetch decisions: requests, divergence, snapshots, leader epochs."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from broker.core.metadata_fetch import (
    Append,
    LoadSnapshot,
    MetadataFetchState,
    Retry,
    SnapshotDownload,
    SnapshotGoneError,
    Truncate,
    truncation_offset,
)
from protocol.errors import Errors
from protocol.rpc.fetch import EpochEndOffset, FetchResponse, LeaderIdAndEpoch, SnapshotIdData
from protocol.rpc.fetch_snapshot import FetchSnapshotResponse


@dataclass
class FakeLog:
    """Epochs as (epoch, start offset), ascending; the log ends at `end`."""

    end: int = 0
    epochs: list[tuple[int, int]] = field(default_factory=list)

    @property
    def log_end_offset(self) -> int:
        return self.end

    @property
    def latest_epoch(self) -> int:
        return self.epochs[-1][0] if self.epochs else -1

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        best = None
        for i, (e, _start) in enumerate(self.epochs):
            if e <= epoch:
                end = self.epochs[i + 1][1] if i + 1 < len(self.epochs) else self.end
                best = (end, e)
        return best if best is not None else (-1, -1)


def test_request_from_an_empty_log() -> None:
    s = MetadataFetchState("c1", 3)
    req = s.next_request(FakeLog())
    assert (req.ClusterId, req.ReplicaId, req.FetchOffset, req.LastFetchedEpoch, req.CurrentLeaderEpoch) == (
        "c1",
        3,
        0,
        0,
        0,
    )
    assert req.MaxWaitMs == 500


def test_request_continues_where_the_local_log_ends() -> None:
    s = MetadataFetchState("c1", 3)
    req = s.next_request(FakeLog(end=120, epochs=[(1, 0), (4, 100)]))
    assert (req.FetchOffset, req.LastFetchedEpoch, req.CurrentLeaderEpoch) == (120, 4, 4)


def test_records_are_appended() -> None:
    s = MetadataFetchState("c1", 3)
    out = s.handle(FetchResponse(ErrorCode=0, HighWatermark=10, Records=b"xyz"), FakeLog())
    assert out == Append(b"xyz", 10)
    assert s.high_watermark == 10


def test_stale_leader_epoch_follows_the_current_leader() -> None:
    s = MetadataFetchState("c1", 3)
    s.next_request(FakeLog(end=5, epochs=[(1, 0)]))
    out = s.handle(
        FetchResponse(
            ErrorCode=Errors.FENCED_LEADER_EPOCH, CurrentLeader=LeaderIdAndEpoch(LeaderId=9, LeaderEpoch=6)
        ),
        FakeLog(),
    )
    assert isinstance(out, Retry) and out.delay_ms == 0
    assert s.leader_epoch == 6 and s.next_request(FakeLog(end=5, epochs=[(1, 0)])).CurrentLeaderEpoch == 6


def test_stale_leader_epoch_without_current_leader_steps_up() -> None:
    s = MetadataFetchState("c1", 3)
    s.next_request(FakeLog(end=5, epochs=[(1, 0)]))
    s.handle(FetchResponse(ErrorCode=Errors.FENCED_LEADER_EPOCH), FakeLog())
    assert s.leader_epoch == 2
    s.handle(FetchResponse(ErrorCode=Errors.UNKNOWN_LEADER_EPOCH), FakeLog())
    assert s.leader_epoch == 1


def test_other_errors_back_off() -> None:
    s = MetadataFetchState("c1", 3)
    out = s.handle(FetchResponse(ErrorCode=Errors.NOT_LEADER_OR_FOLLOWER), FakeLog())
    assert isinstance(out, Retry) and out.delay_ms > 0 and "NOT_LEADER_OR_FOLLOWER" in out.reason


@pytest.mark.parametrize(
    ("diverging", "epochs", "end", "expected"),
    [
        ((3, 50), [(1, 0), (3, 40)], 70, 50),  # same epoch locally: min of the two ends
        ((3, 80), [(1, 0), (3, 40)], 70, 70),
        ((3, 50), [(1, 0), (2, 30)], 70, 70),  # no epoch 3 here: end of the largest below it (2 runs to 70)
        ((4, 50), [(1, 0), (2, 30), (5, 60)], 90, 60),
        ((0, 10), [(0, 0)], 20, 10),
    ],
)
def test_truncation_offset(
    diverging: tuple[int, int], epochs: list[tuple[int, int]], end: int, expected: int
) -> None:
    assert truncation_offset(diverging[0], diverging[1], FakeLog(end=end, epochs=epochs)) == expected


def test_diverging_epoch_truncates() -> None:
    s = MetadataFetchState("c1", 3)
    log = FakeLog(end=70, epochs=[(1, 0), (3, 40)])
    out = s.handle(FetchResponse(ErrorCode=0, DivergingEpoch=EpochEndOffset(Epoch=3, EndOffset=50)), log)
    assert out == Truncate(50, 3, 50)


def test_snapshot_id_loads_the_snapshot_in_chunks() -> None:
    s = MetadataFetchState("c1", 3)
    out = s.handle(FetchResponse(ErrorCode=0, SnapshotId=SnapshotIdData(EndOffset=400, Epoch=2)), FakeLog())
    assert out == LoadSnapshot(400, 2)
    dl = SnapshotDownload(s, 400, 2)
    data = bytes(range(256)) * 3
    while not dl.done:
        req = dl.next_request()
        assert req.SnapshotId.EndOffset == 400 and req.SnapshotId.Epoch == 2
        chunk = data[req.Position : req.Position + 300]
        assert (
            dl.handle(
                FetchSnapshotResponse(
                    ErrorCode=0, Size=len(data), Position=req.Position, UnalignedRecords=chunk
                )
            )
            is None
        )
    assert dl.data() == data


def test_vanished_snapshot_starts_over() -> None:
    dl = SnapshotDownload(MetadataFetchState("c1", 3), 400, 2)
    with pytest.raises(SnapshotGoneError):
        dl.handle(FetchSnapshotResponse(ErrorCode=Errors.SNAPSHOT_NOT_FOUND))
