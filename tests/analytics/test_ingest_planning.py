"""Driver-side parts of the Spark job, without Spark: listing, splitting, decoding ranges, planning."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from protocol.metadata_records import NoOpRecord
from protocol.record_batch import iter_batch_positions
from tools.analytics.checkpoint import Checkpoint, FileState
from tools.analytics.decoding import SNAPSHOT_SEQ_BASE, iter_range
from tools.analytics.errors import CorruptSpot, LogDirError
from tools.analytics.logdir import choose_base_snapshot, list_log_files
from tools.analytics.planning import plan_ingest
from tools.analytics.splitting import SEGMENT, SNAPSHOT, scan_file
from tools.analytics.synthetic import (
    LogWriter,
    amv,
    dir_failure_batches,
    write_dir_failure_log,
    write_dir_failure_log_from_snapshot,
)
from tools.analytics.tables import ABORT_TRANSACTION, BEGIN_TRANSACTION, END_TRANSACTION, excluded_ranges
from tools.cli.main import main as kraftpy_main

FLINK = "flink-on-prem_cp7.6.0"


def _rows(rng):
    return [x for x in iter_range(rng) if not isinstance(x, CorruptSpot)]


def test_ranges_are_batch_aligned_and_cover_the_segment(samples_dir: Path) -> None:
    seg = list_log_files(samples_dir / FLINK).segments[0]
    scan = scan_file(seg.path, SEGMENT, range_bytes=100_000)
    data = seg.path.read_bytes()
    starts = {pos for pos, _ in iter_batch_positions(data)}
    assert len(scan.ranges) >= 10
    assert scan.ranges[0].start == 0 and scan.ranges[-1].end == len(data)
    for a, b in zip(scan.ranges, scan.ranges[1:], strict=False):
        assert a.end == b.start and b.start in starts
        assert b.first_offset == a.last_offset + 1
    assert (scan.first_offset, scan.last_offset, scan.records) == (0, 17026, 17027)
    rows = [r for rng in scan.ranges for r in _rows(rng)]
    assert [r[1] for r in rows] == list(range(17027))
    assert sum(r[7] == "PartitionRecord" for r in rows) == 151


def test_record_json_is_the_codecs_json_at_the_record_version(samples_dir: Path) -> None:
    from protocol.record_batch import iter_batches, metadata_records
    from tools.analytics.decoding import _to_json

    seen: set[tuple[str, int]] = set()
    for name in ("otus_kafka_HW02_d9e6ebb", "LDI-POC_16c4da1"):
        for seg in list_log_files(samples_dir / name).segments:
            for batch in iter_batches(seg.path.read_bytes()):
                if batch.is_control:
                    continue
                for rec in metadata_records(batch):
                    expected = rec.message.to_json_dict(rec.version)
                    assert json.loads(_to_json(rec.message, rec.version)) == expected
                    seen.add((rec.message.NAME, rec.version))
    # Nested structs (endpoints, features), Uuid lists and versioned fields are all covered.
    assert {("RegisterBrokerRecord", 3), ("RegisterControllerRecord", 0), ("PartitionRecord", 1)} <= seen


def test_base_snapshot_only_when_segments_do_not_start_at_zero(tmp_path: Path, samples_dir: Path) -> None:
    files = list_log_files(samples_dir / FLINK)
    assert choose_base_snapshot(files, 0) is None
    later = choose_base_snapshot(files, 9000)
    assert later is not None and later.end_offset == 14926

    story = write_dir_failure_log_from_snapshot(tmp_path)
    plan = plan_ingest(list_log_files(tmp_path), None, full=False)
    assert plan.base_snapshot is not None and plan.base_snapshot.end_offset == 17
    assert plan.base_snapshot.timestamp == story.t0 + 7000
    assert [t.source for t in plan.tasks] == [SNAPSHOT, SEGMENT]
    snap = scan_file(plan.tasks[0].path, SNAPSHOT, range_bytes=1 << 20, snapshot_end_offset=17,
                     snapshot_timestamp=plan.base_snapshot.timestamp)
    rows = [r for rng in snap.ranges for r in _rows(rng)]
    data = [r for r in rows if not r[5]]
    assert len(data) == 17
    assert all(r[0] < 0 and r[1] == 16 and r[3] == story.t0 + 7000 for r in rows)
    assert [r[0] for r in rows] == sorted(r[0] for r in rows)
    assert rows[0][0] == SNAPSHOT_SEQ_BASE
    assert {r[7] for r in rows if r[5]} == {"SnapshotHeaderRecord", "SnapshotFooterRecord"}


def test_segment_records_inside_the_base_snapshot_are_skipped(tmp_path: Path) -> None:
    write_dir_failure_log(tmp_path)
    seg = list_log_files(tmp_path).segments[0]
    scan = scan_file(seg.path, SEGMENT, range_bytes=1 << 20, min_offset=17)
    rows = [r for rng in scan.ranges for r in _rows(rng)]
    assert rows and min(r[1] for r in rows) == 17


def _corrupt_byte(path: Path, pos: int) -> None:
    data = bytearray(path.read_bytes())
    data[pos] ^= 0xFF
    path.write_bytes(bytes(data))


def test_crc_damage_is_reported_per_batch_and_the_rest_decodes(tmp_path: Path) -> None:
    write_dir_failure_log(tmp_path)
    seg = list_log_files(tmp_path).segments[0]
    positions = [pos for pos, _ in iter_batch_positions(seg.path.read_bytes())]
    _corrupt_byte(seg.path, positions[3] + 70)  # inside the records: the header still reads
    scan = scan_file(seg.path, SEGMENT, range_bytes=1 << 20)
    assert scan.corrupt is None
    items = [x for rng in scan.ranges for x in iter_range(rng)]
    spots = [x for x in items if isinstance(x, CorruptSpot)]
    assert len(spots) == 1
    assert spots[0].file == seg.name and spots[0].position == positions[3]
    assert "CRC" in spots[0].reason and spots[0].base_offset == 3
    assert len(items) - 1 == scan.records - 1


def test_broken_header_stops_the_scan_of_its_file(tmp_path: Path) -> None:
    write_dir_failure_log(tmp_path)
    seg = list_log_files(tmp_path).segments[0]
    positions = [pos for pos, _ in iter_batch_positions(seg.path.read_bytes())]
    _corrupt_byte(seg.path, positions[5] + 16)  # magic
    scan = scan_file(seg.path, SEGMENT, range_bytes=1 << 20)
    assert scan.corrupt is not None and scan.corrupt.position == positions[5]
    assert "magic" in scan.corrupt.reason
    assert scan.good_end == positions[5] and scan.last_offset == 4


def test_torn_tail_is_left_for_later_only_in_the_newest_segment(tmp_path: Path) -> None:
    write_dir_failure_log(tmp_path)
    seg = list_log_files(tmp_path).segments[-1]
    size = seg.path.stat().st_size
    with seg.path.open("r+b") as f:
        f.truncate(size - 5)
    newest = scan_file(seg.path, SEGMENT, range_bytes=1 << 20, tail_may_be_partial=True)
    assert newest.corrupt is None and newest.partial_tail_bytes > 0
    older = scan_file(seg.path, SEGMENT, range_bytes=1 << 20)
    assert older.corrupt is not None and "left" in older.corrupt.reason


def test_offsets_going_backwards_are_corruption(tmp_path: Path) -> None:
    part = tmp_path / "__cluster_metadata-0"
    w = LogWriter(part)
    w.append(1, [amv(NoOpRecord())])
    w.append(2, [amv(NoOpRecord())])
    w.next_offset = 1
    w.append(3, [amv(NoOpRecord())])
    scan = scan_file(list_log_files(tmp_path).segments[0].path, SEGMENT, range_bytes=1 << 20)
    assert scan.corrupt is not None and "not after" in scan.corrupt.reason


def _checkpoint_after_first_run(log_dir: Path) -> Checkpoint:
    files = list_log_files(log_dir)
    cp = Checkpoint(log_dir=str(files.directory.resolve()))
    for seg in files.segments:
        scan = scan_file(seg.path, SEGMENT, range_bytes=1 << 20)
        cp.files[seg.name] = FileState(SEGMENT, scan.good_end, scan.last_offset, scan.last_batch_pos,
                                       scan.last_batch_crc)
        cp.last_offset = max(cp.last_offset, scan.last_offset or -1)
    return cp


def test_rerun_reads_only_growth_and_new_segments(tmp_path: Path) -> None:
    phases, _ = dir_failure_batches()
    part = tmp_path / "__cluster_metadata-0"
    w = LogWriter(part)
    w.append_all(phases[0])
    cp = _checkpoint_after_first_run(tmp_path)
    first_size = cp.files["00000000000000000000.log"].size

    w.append_all(phases[1])
    w.roll()
    w.append_all(phases[2])
    plan = plan_ingest(list_log_files(tmp_path), cp, full=False)
    assert not plan.rebuild
    assert [(t.path.name, t.start) for t in plan.tasks] == [
        ("00000000000000000000.log", first_size),
        ("00000000000000000026.log", 0),
    ]
    scans = [scan_file(t.path, t.source, start=t.start, range_bytes=1 << 20, after_offset=cp.last_offset)
             for t in plan.tasks]
    assert scans[0].first_offset == cp.last_offset + 1

    assert plan_ingest(list_log_files(tmp_path), cp, full=True).rebuild


def test_rewritten_or_lost_history_forces_a_rebuild(tmp_path: Path) -> None:
    write_dir_failure_log(tmp_path)
    cp = _checkpoint_after_first_run(tmp_path)
    files = list_log_files(tmp_path)
    seg = files.segments[-1]
    data = seg.path.read_bytes()
    last_pos = cp.files[seg.name].last_batch_pos
    assert last_pos is not None
    _corrupt_byte(seg.path, last_pos + 20)  # the CRC of the last batch read: a different batch now
    plan = plan_ingest(list_log_files(tmp_path), cp, full=False)
    assert plan.rebuild and "rewritten" in (plan.reason or "")

    seg.path.write_bytes(data[: last_pos])
    plan = plan_ingest(list_log_files(tmp_path), cp, full=False)
    assert plan.rebuild and "shrank" in (plan.reason or "")

    other = tmp_path / "other"
    shutil.copytree(tmp_path / "__cluster_metadata-0", other / "__cluster_metadata-0")
    with pytest.raises(Exception, match="another log"):
        plan_ingest(list_log_files(other), cp, full=False)


def test_aborted_and_open_transactions_are_left_out_of_replay() -> None:
    markers = [(5, BEGIN_TRANSACTION), (9, END_TRANSACTION), (12, BEGIN_TRANSACTION), (15, ABORT_TRANSACTION),
               (20, BEGIN_TRANSACTION)]
    assert excluded_ranges(markers) == ([(12, 15), (20, None)], 20)
    assert excluded_ranges([(1, BEGIN_TRANSACTION), (2, END_TRANSACTION)]) == ([], None)


def test_bad_log_dirs_are_one_line_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(LogDirError, match="does not exist"):
        list_log_files(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(LogDirError, match="holds no metadata log"):
        list_log_files(tmp_path / "empty")
    (tmp_path / "file").write_text("x")
    with pytest.raises(LogDirError, match="not a directory"):
        list_log_files(tmp_path / "file")

    for target in ("missing", "empty"):
        code = kraftpy_main(["analyze", str(tmp_path / target), "--out", str(tmp_path / "out")])
        err = capsys.readouterr().err
        assert code == 2
        assert err.startswith("kraftpy analyze: ") and err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "out").exists()
