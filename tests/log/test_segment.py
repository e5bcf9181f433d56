"""The one LogSegment both logs use: recovery rules, read-only opening, failed writes, error paths."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kraftpy.log import CorruptLogError, LogSegment, TornTail
from kraftpy.log.errors import CorruptCheckpointError, FilePath
from protocol import metadata_records as mr
from protocol.framing import ApiMessageAndVersion
from protocol.record_batch import build_metadata_batch, iter_batches, read_batch_header

ARGS = {"index_interval_bytes": 100, "max_index_entries": 1000}


def batch(base_offset: int, n: int = 3, timestamp: int = 1_000) -> bytes:
    return build_metadata_batch(base_offset, 1, timestamp, [ApiMessageAndVersion(mr.NoOpRecord(), 0)] * n)


def write_segment(d: Path, batches: int = 10) -> tuple[Path, list[int]]:
    """A closed segment at base 0 of `batches` batches of 3 records; returns its path and batch starts."""
    seg = LogSegment.create(d, 0, now_ms=0, **ARGS)
    starts = []
    for i in range(batches):
        data = batch(3 * i, timestamp=1_000 + i)
        starts.append(seg.size)
        seg.append(data, [(0, read_batch_header(data))])
    seg.on_become_inactive()
    seg.close()
    return seg.path, starts


def reopen(d: Path, *, read_only: bool = False) -> LogSegment:
    return LogSegment.open_existing(d, 0, now_ms=0, read_only=read_only, **ARGS)


def no_batch(_pos: int, _h: object) -> None:
    pass


def test_append_read_and_reopen_agree(tmp_path: Path) -> None:
    path, starts = write_segment(tmp_path)
    assert path.name == "00000000000000000000.log"
    assert (tmp_path / "00000000000000000000.index").stat().st_size > 0
    seg = reopen(tmp_path)
    assert seg.load(recover=True, is_last=True, on_batch=no_batch) is None
    assert (seg.next_offset, seg.size) == (30, path.stat().st_size)
    assert seg.translate_offset(13) is not None and seg.translate_offset(13)[0] == starts[4]
    data, next_offset = seg.read(starts[4], 1, None, True)
    assert [b.base_offset for b in iter_batches(data)] == [12] and next_offset == 15
    assert seg.rolling_timestamp() == 1_000
    seg.close()


def test_torn_tail_of_the_last_segment_is_cut_and_reported(tmp_path: Path) -> None:
    path, starts = write_segment(tmp_path)
    whole = path.read_bytes()
    path.write_bytes(whole[: starts[-1] + 20])
    seg = reopen(tmp_path)
    torn = seg.load(recover=True, is_last=True, on_batch=no_batch)
    assert isinstance(torn, TornTail)
    assert (torn.path, torn.position, torn.bytes_removed) == (path, starts[-1], 20)
    assert torn.path == str(path)
    assert seg.next_offset == 27 and path.stat().st_size == starts[-1]
    seg.close()


def test_read_only_open_reports_a_torn_tail_and_writes_nothing(tmp_path: Path) -> None:
    path, starts = write_segment(tmp_path)
    (tmp_path / "00000000000000000000.index").unlink()
    path.write_bytes(path.read_bytes()[: starts[-1] + 5])
    before = sorted((p.name, p.read_bytes()) for p in tmp_path.iterdir())
    seg = reopen(tmp_path, read_only=True)
    torn = seg.load(recover=True, is_last=True, on_batch=no_batch)
    assert torn is not None and torn.bytes_removed == 5
    assert seg.next_offset == 27 and seg.size == starts[-1]
    assert seg.translate_offset(20) is not None  # the index is rebuilt in memory
    seg.close()
    assert sorted((p.name, p.read_bytes()) for p in tmp_path.iterdir()) == before


def test_a_bad_batch_with_a_whole_batch_after_it_is_corruption_even_at_the_end(tmp_path: Path) -> None:
    path, starts = write_segment(tmp_path)
    raw = bytearray(path.read_bytes())
    raw[starts[-2] + 70] ^= 0xFF
    path.write_bytes(bytes(raw))
    seg = reopen(tmp_path)
    with pytest.raises(CorruptLogError, match="a whole batch follows") as e:
        seg.load(recover=True, is_last=True, on_batch=no_batch)
    seg.close()
    assert (e.value.path, e.value.position) == (path, starts[-2])
    assert "CRC-32C mismatch in the batch at offset 24" in str(e.value)
    assert path.read_bytes() == bytes(raw)


def test_a_bad_tail_of_an_older_segment_is_corruption(tmp_path: Path) -> None:
    path, starts = write_segment(tmp_path)
    path.write_bytes(path.read_bytes()[:-3])
    seg = reopen(tmp_path)
    with pytest.raises(CorruptLogError) as e:
        seg.load(recover=True, is_last=False, on_batch=no_batch)
    seg.close()
    assert e.value.position == starts[-1]


def test_a_failed_write_leaves_no_half_batch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seg = LogSegment.create(tmp_path, 0, now_ms=0, **ARGS)
    first = batch(0)
    seg.append(first, [(0, read_batch_header(first))])
    real_pwrite = os.pwrite

    def half_then_fail(fd: int, data: bytes, position: int) -> int:
        monkeypatch.setattr(os, "pwrite", lambda *_: (_ for _ in ()).throw(OSError(28, "No space left")))
        return real_pwrite(fd, bytes(data)[: len(data) // 2], position)

    monkeypatch.setattr(os, "pwrite", half_then_fail)
    second = batch(3)
    with pytest.raises(OSError):
        seg.append(second, [(0, read_batch_header(second))])
    monkeypatch.setattr(os, "pwrite", real_pwrite)
    assert seg.path.stat().st_size == len(first) and (seg.size, seg.next_offset) == (len(first), 3)
    seg.close()


def test_error_paths_equal_the_path_as_path_or_as_text(tmp_path: Path) -> None:
    where = tmp_path / "t-0" / "00000000000000000000.log"
    for e in (CorruptLogError(where, 7, "bad"), CorruptLogError(str(where), 7, "bad")):
        assert e.path == where and e.path == str(where) and where == e.path
        assert isinstance(e.path, Path) and e.path.name == where.name
    assert FilePath(where) != str(tmp_path)
    assert len({FilePath(where), where}) == 1
    assert isinstance(CorruptCheckpointError(where, "x"), ValueError)
