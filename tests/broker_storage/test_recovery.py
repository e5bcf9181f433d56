"""Opening a log after a crash: torn tails are cut back and reported, other damage stops the open."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest

from broker.storage import CorruptLogError, LogConfig, PartitionLog
from protocol.record_batch import iter_batches
from tests.broker_storage.batches import make_batch, value_batch

CONFIG = LogConfig(segment_bytes=4_000, index_interval_bytes=300, retention_ms=-1)


def build(tmp_path: Path, batches: int = 40) -> tuple[Path, list[int]]:
    """A closed log; returns its dir and the end position of each batch in the last segment."""
    d = tmp_path / "src" / "t-0"
    d.parent.mkdir()
    log = PartitionLog.open(d, config=CONFIG)
    for i in range(batches):
        log.append_as_leader(value_batch(4, tag=i, producer_id=7, producer_epoch=0, base_sequence=4 * i), 2)
    log.close()
    last = max(d.glob("*.log"))
    ends, pos = [], 0
    for b in iter_batches(last.read_bytes()):
        pos += b.size
        ends.append(pos)
    return d, ends


def copy(src: Path, tmp_path: Path, name: str) -> Path:
    dst = tmp_path / name / src.name
    shutil.copytree(src, dst)
    return dst


def last_segment(d: Path) -> Path:
    return max(d.glob("*.log"))


def test_torn_tail_mid_batch_is_cut_back_to_the_last_whole_batch(tmp_path: Path) -> None:
    src, ends = build(tmp_path)
    d = copy(src, tmp_path, "torn")
    seg = last_segment(d)
    cut_at = ends[-2] + 37  # part of the last batch made it to disk
    seg.write_bytes(seg.read_bytes()[:cut_at])
    log = PartitionLog.open(d, config=CONFIG)
    report = log.recovery_report
    assert report is not None
    assert (report.path, report.position, report.bytes_removed) == (str(seg), ends[-2], 37)
    assert log.log_end_offset == 156
    assert seg.stat().st_size == ends[-2]
    # Appends go on from the cut, and the producer state forgot the lost batch.
    r = log.append_as_leader(value_batch(4, producer_id=7, producer_epoch=0, base_sequence=156), 2)
    assert r.first_offset == 156 and not r.duplicate
    log.close()
    assert [b.base_offset for b in iter_batches(seg.read_bytes())][-1] == 156


@pytest.mark.parametrize(
    "damage",
    ["zeros", "crc", "header_only", "garbage"],
)
def test_other_torn_tail_shapes_are_cut(tmp_path: Path, damage: str) -> None:
    src, ends = build(tmp_path)
    d = copy(src, tmp_path, damage)
    seg = last_segment(d)
    raw = bytearray(seg.read_bytes())
    if damage == "zeros":  # the filesystem extended the file but the data never landed
        raw += bytes(700)
        expected_leo = 160
    elif damage == "crc":  # the last batch is whole in length but its bytes are not
        raw[-5] ^= 0x55
        expected_leo = 156
    elif damage == "header_only":  # only part of a header
        raw += raw[ends[-2] : ends[-2] + 20]
        expected_leo = 160
    else:  # a multi-batch write whose last pages never landed: stale bytes, no whole batch
        raw[ends[-3] + 100 :] = random.Random(1).randbytes(len(raw) - ends[-3] - 100)
        expected_leo = 152
    seg.write_bytes(bytes(raw))
    log = PartitionLog.open(d, config=CONFIG)
    assert log.recovery_report is not None
    assert log.log_end_offset == expected_leo
    assert [b.last_offset for b in iter_batches(log.read(expected_leo - 4, 1 << 20).records)] == [
        expected_leo - 1
    ]
    log.close()


def test_bad_batch_before_the_tail_raises_naming_file_and_position(tmp_path: Path) -> None:
    src, ends = build(tmp_path)
    d = copy(src, tmp_path, "rot")
    seg = last_segment(d)
    raw = bytearray(seg.read_bytes())
    raw[ends[0] + 70] ^= 0xFF  # inside the second batch, with whole batches after it
    seg.write_bytes(bytes(raw))
    with pytest.raises(CorruptLogError) as e:
        PartitionLog.open(d, config=CONFIG)
    assert e.value.path == str(seg) and e.value.position == ends[0]
    assert "CRC" in str(e.value)
    assert seg.stat().st_size == len(raw), "nothing is cut when the damage is not a torn tail"


def test_damage_in_an_older_segment_is_never_a_torn_tail(tmp_path: Path) -> None:
    src, _ = build(tmp_path)
    d = copy(src, tmp_path, "old")
    first = min(d.glob("*.log"))
    first.write_bytes(first.read_bytes()[:-10])
    with pytest.raises(CorruptLogError) as e:
        PartitionLog.open(d, config=CONFIG)
    assert e.value.path == str(first)


def test_offsets_going_backwards_are_damage(tmp_path: Path) -> None:
    src, _ = build(tmp_path)
    d = copy(src, tmp_path, "backwards")
    seg = last_segment(d)
    base = int(seg.stem)
    raw = seg.read_bytes()
    seg.write_bytes(raw + make_batch([b"x"], base_offset=base) + make_batch([b"y"], base_offset=10**6))
    with pytest.raises(CorruptLogError, match="do not follow"):
        PartitionLog.open(d, config=CONFIG)


def test_missing_or_garbage_indexes_are_rebuilt(tmp_path: Path) -> None:
    src, _ = build(tmp_path)
    d = copy(src, tmp_path, "idx")
    log = PartitionLog.open(d, config=CONFIG, recovery_point=10**9)
    want = [s.offset_index.entries for s in log.segments]
    expect_read = log.read(50, 1 << 20).records
    log.close()
    first = min(d.glob("*.index"))
    first.write_bytes(bytes(80))  # Kafka's preallocated, never-trimmed zeros
    max(d.glob("*.index")).unlink()
    log = PartitionLog.open(
        d, config=CONFIG, recovery_point=10**9
    )  # trusts the files above... if they check out
    assert [s.offset_index.entries for s in log.segments] == want
    assert log.read(50, 1 << 20).records == expect_read
    log.close()
    assert len(first.read_bytes()) == 8 * len(want[0])


def test_leftover_temp_and_orphan_files_are_removed(tmp_path: Path) -> None:
    src, _ = build(tmp_path)
    d = copy(src, tmp_path, "junk")
    (d / "leader-epoch-checkpoint.tmp").write_text("half")
    (d / "00000000000000999999.index").write_bytes(b"")
    (d / "00000000000000999999.timeindex").write_bytes(b"")
    PartitionLog.open(d, config=CONFIG).close()
    assert not (d / "leader-epoch-checkpoint.tmp").exists()
    assert not (d / "00000000000000999999.index").exists()


def test_empty_dir_with_checkpointed_start_opens_at_that_offset(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path / "t-0", log_start_offset=500)
    assert (log.log_start_offset, log.log_end_offset, log.segment_base_offsets) == (500, 500, [500])
    assert log.append_as_leader(value_batch(1), 0).first_offset == 500
    log.close()
