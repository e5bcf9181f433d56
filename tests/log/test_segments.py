"""The segment list of one log: rolling, cutting back, starting over."""

from __future__ import annotations

from pathlib import Path

from kraftpy.log.segments import LogSegments
from protocol import metadata_records as mr
from protocol.framing import ApiMessageAndVersion
from protocol.record_batch import build_metadata_batch, read_batch_header


def append(segments: LogSegments, offset: int) -> None:
    data = build_metadata_batch(offset, 1, 1_000, [ApiMessageAndVersion(mr.NoOpRecord(), 0)])
    segments.active.append(data, [(0, read_batch_header(data))])


def test_roll_cut_back_and_start_over(tmp_path: Path) -> None:
    segments = LogSegments(tmp_path, index_interval_bytes=100, max_index_entries=100)
    first = segments.create(0, now_ms=0)
    assert segments.roll(0, now_ms=0) is first  # an empty active segment at that offset stays
    append(segments, 0)
    append(segments, 1)
    second = segments.roll(2, now_ms=0)
    assert not first.dirty and segments.bases == [0, 2]
    append(segments, 2)
    segments.roll(3, now_ms=0)
    assert [s.base_offset for s in segments.from_offset(2)] == [2, 3]
    assert [s.base_offset for s in segments.from_offset(1)] == [0, 2, 3]
    removed = segments.remove_after(1)
    assert [s.base_offset for s in removed] == [3, 2] and segments.bases == [0]  # newest first
    assert not second.path.exists() and first.path.exists()
    assert segments.remove_after(0) == [] and len(segments) == 1  # the oldest always stays
    restarted = segments.start_over_at(10, now_ms=0)
    assert segments.bases == [10] and segments.active is restarted and not first.path.exists()
    segments.close()
