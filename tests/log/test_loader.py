"""Opening a log's segments: which files are segments, what is checked, where a torn tail may be."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftpy.log import CorruptLogError, LogSegment
from kraftpy.log.loader import load_segments, segment_files
from protocol import metadata_records as mr
from protocol.framing import ApiMessageAndVersion
from protocol.record_batch import BatchHeader, build_metadata_batch, read_batch_header

ARGS = {"index_interval_bytes": 100, "max_index_entries": 1000}


def write(d: Path, base: int, offsets: list[int]) -> None:
    seg = LogSegment.create(d, base, now_ms=0, **ARGS)
    for offset in offsets:
        data = build_metadata_batch(offset, 1, 1_000, [ApiMessageAndVersion(mr.NoOpRecord(), 0)])
        seg.append(data, [(0, read_batch_header(data))])
    seg.on_become_inactive()
    seg.close()


def test_segment_files_finds_segments_and_orphan_indexes() -> None:
    names = [
        "00000000000000000010.log",
        "00000000000000000000.log",
        "00000000000000000000.index",
        "00000000000000000007.timeindex",
        "00000000000000000007.index",
        "00000000000000000010-0000000001.checkpoint",
        "leader-epoch-checkpoint",
    ]
    assert segment_files(names) == ([0, 10], ["00000000000000000007.timeindex", "00000000000000000007.index"])


def test_every_batch_is_shown_once_in_order(tmp_path: Path) -> None:
    write(tmp_path, 0, [0, 1, 2])
    write(tmp_path, 3, [3, 4])
    seen: list[int] = []
    starts: list[int] = []

    def on_batch(_pos: int, h: BatchHeader) -> None:
        seen.append(h.base_offset)

    segments, torn = load_segments(
        tmp_path, [0, 3], recovery_point=None, on_batch=on_batch, on_segment=starts.append, now_ms=0, **ARGS
    )
    assert torn is None and seen == [0, 1, 2, 3, 4] and starts == [0, 3]
    assert [s.next_offset for s in segments] == [3, 5]
    for s in segments:
        s.close()


def test_gaps_are_refused_only_where_offsets_must_be_contiguous(tmp_path: Path) -> None:
    write(tmp_path, 0, [0, 1, 5])
    write(tmp_path, 8, [8])
    kwargs = {"recovery_point": None, "on_batch": lambda _p, _h: None, "now_ms": 0, **ARGS}
    segments, _ = load_segments(tmp_path, [0, 8], **kwargs)  # type: ignore[arg-type]
    assert [s.next_offset for s in segments] == [6, 9]
    for s in segments:
        s.close()
    with pytest.raises(CorruptLogError, match="batch starts at offset 5, expected 2"):
        load_segments(tmp_path, [0, 8], contiguous=True, **kwargs)  # type: ignore[arg-type]
