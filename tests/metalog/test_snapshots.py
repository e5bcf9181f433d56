from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from kraftpy.image import MetadataDelta, MetadataImage
from kraftpy.metalog import CorruptLogError, LogError, MetadataLog, MetadataLogConfig, SnapshotId
from kraftpy.metalog.files import PARTITION_DIR
from kraftpy.metalog.reading import BatchInfo, EntryRun
from kraftpy.metalog.snapshots import (
    build_snapshot,
    parse_snapshot,
    read_snapshot_file,
    read_snapshot_timestamp,
)
from protocol.control_records import LeaderChangeMessage, control_records
from protocol.record_batch import decode_batch, encode_batch, iter_batch_positions, iter_batches
from tests.metalog.helpers import mv, noops, topic_records


def fill(log: MetadataLog, n: int, epoch: int = 1, ts0: int = 1000) -> None:
    for i in range(n):
        log.append(topic_records(log.log_end_offset + i), leader_epoch=epoch, timestamp_ms=ts0 + i)


def leader_snapshot(directory: Path) -> tuple[SnapshotId, bytes, MetadataImage]:
    """A snapshot of 21 offsets in epoch 4, as a leader sends it whole, and the image it holds."""
    with MetadataLog.open(directory) as leader:
        leader.append([mv()], 4, 10)
        fill(leader, 10, epoch=4)
        sid = leader.write_snapshot(leader.load_image().write(), leader.log_end_offset, 4, 1009)
        data = leader.read_snapshot_bytes(sid, 0, 1 << 20)
        assert len(data) == leader.snapshot_size(sid)
        return sid, data, leader.load_image()


def with_first_value(data: bytes, position: int, value: bytes) -> bytes:
    """`data` with the first record of the batch at `position` holding `value`, under a new CRC."""
    batch = decode_batch(data, position)
    bad = replace(batch.records[0], value=value)
    rebuilt = encode_batch(replace(batch, records=[bad, *batch.records[1:]]))
    return data[:position] + rebuilt + data[position + batch.size :]


def test_snapshot_file_is_framed_like_kafkas(tmp_path: Path) -> None:
    with MetadataLog.open(tmp_path) as log:
        log.append([mv()], 3, 10)
        fill(log, 5, epoch=3)
        image = log.load_image()
        sid = log.write_snapshot(
            image.write(), log.log_end_offset, 3, image.provenance.last_contained_log_time_ms, now_ms=77
        )
    assert sid == SnapshotId(11, 3)
    path = tmp_path / PARTITION_DIR / "00000000000000000011-0000000003.checkpoint"
    batches = list(iter_batches(path.read_bytes()))
    assert batches[0].is_control and batches[-1].is_control
    assert {b.partition_leader_epoch for b in batches} == {3}
    assert batches[0].base_offset == 0
    header = control_records(batches[0])[0].message
    assert (header.NAME, header.Version, header.LastContainedLogTimestamp) == (
        "SnapshotHeaderRecord",
        0,
        1004,
    )
    assert control_records(batches[-1])[0].message.NAME == "SnapshotFooterRecord"
    assert read_snapshot_timestamp(path) == 1004
    assert not list((tmp_path / PARTITION_DIR).glob("*.part"))


def test_snapshot_then_log_replays_to_the_same_image(tmp_path: Path) -> None:
    with MetadataLog.open(tmp_path) as log:
        log.append([mv()], 1, 10)
        fill(log, 10)
        at_snapshot = log.load_image()
        log.write_snapshot(at_snapshot.write(), log.log_end_offset, 1, 1009)
        fill(log, 10)
        log.flush()
        full = log.load_image()
        # the snapshot's records replay at the offset just below the snapshot id
        first = next(iter(log.entries()))
        assert first.offset == 20 and first.batch.from_snapshot
    with MetadataLog.open(tmp_path) as log:
        again = log.load_image()
        assert again == full
        no_snapshot = MetadataDelta(MetadataImage.EMPTY)
        log.replay_into(no_snapshot, from_snapshot=False)
        assert replace(no_snapshot.apply(), provenance=full.provenance) == full


def test_snapshot_needs_an_offset_and_epoch_of_this_log(tmp_path: Path) -> None:
    with MetadataLog.open(tmp_path) as log:
        fill(log, 3, epoch=2)
        with pytest.raises(LogError, match="outside the log"):
            log.write_snapshot([mv()], 99, 2, 0)
        with pytest.raises(LogError, match="is in epoch 2, not 1"):
            log.write_snapshot([mv()], 6, 1, 0)


def test_big_snapshots_are_split_into_batches_under_the_limit() -> None:
    records = [r for i in range(300) for r in topic_records(i)]
    data = build_snapshot(records, 1, 0, 0, max_batch_bytes=4096)
    batches = list(iter_batches(data))
    assert len(batches) > 5
    assert all(b.size <= 4096 for b in batches)
    assert parse_snapshot(data, Path("x")).records() == records


def test_snapshot_without_footer_is_rejected(tmp_path: Path) -> None:
    data = build_snapshot(noops(3), 1, 0, 0)
    last = list(iter_batches(data))[-1]
    with pytest.raises(CorruptLogError, match="SnapshotFooterRecord"):
        parse_snapshot(data[: len(data) - last.size], tmp_path / "s.checkpoint")


def test_a_snapshot_is_checked_whole_when_parsed_and_decoded_as_it_is_read(tmp_path: Path) -> None:
    records = [r for i in range(300) for r in topic_records(i)]
    data = build_snapshot(records, 1, 0, 0, max_batch_bytes=4096)
    positions = [p for p, _ in iter_batch_positions(data)]
    middle = positions[len(positions) // 2]
    # A flipped bit in a batch in the middle: refused before any record is handed out.
    torn = bytearray(data)
    torn[middle + 70] ^= 1
    with pytest.raises(CorruptLogError, match=f"position {middle}: CRC-32C mismatch"):
        parse_snapshot(bytes(torn), tmp_path / "s.checkpoint")
    # A record that does not decode, under a CRC that matches: found where it is read.
    damaged = with_first_value(data, middle, b"\x01\x02\x00\xff\xff")
    contents = parse_snapshot(damaged, tmp_path / "s.checkpoint")
    read = []
    with pytest.raises(CorruptLogError, match=f"position {middle}: undecodable record"):
        for entry in contents.entries():
            read.append(entry.record)
    assert read == records[: len(read)] and 0 < len(read) < len(records)
    with pytest.raises(CorruptLogError, match=f"position {middle}: undecodable record"):
        contents.check_records()


def test_install_refuses_a_snapshot_with_a_record_that_does_not_decode(tmp_path: Path) -> None:
    sid, data, _ = leader_snapshot(tmp_path / "leader")
    header_end, data_start = [p for p, _ in iter_batch_positions(data)][:2]
    assert header_end == 0
    damaged = with_first_value(data, data_start, b"\x07\x02\x00")  # an unknown frame version
    with MetadataLog.open(tmp_path / "follower") as follower:
        with pytest.raises(CorruptLogError, match="undecodable record"):
            follower.install_snapshot(sid, damaged)
        assert follower.latest_snapshot() is None
    assert not list((tmp_path / "follower").rglob("*.checkpoint*"))


def test_delete_before_snapshot_removes_whole_segments_below_it(tmp_path: Path) -> None:
    config = MetadataLogConfig(segment_bytes=400)
    with MetadataLog.open(tmp_path, config) as log:
        log.append([mv()], 1, 10)
        fill(log, 30)
        n_segments = len(log.segments)
        end = log.log_end_offset
        first_snap = log.write_snapshot(log.load_image().write(), 21, 1, 0)
        fill(log, 5)
        snap = log.write_snapshot(log.load_image().write(), log.log_end_offset, 1, 0)
        assert log.delete_before_snapshot() is True
        assert log.log_start_offset == snap.offset
        assert log.snapshot_ids() == [snap]
        assert not (log.dir / first_snap.file_name()).exists()
        kept = log.segments
        assert len(kept) < n_segments
        assert kept[0].base_offset <= snap.offset
        assert all(s.next_offset > end - 10 for s in kept)  # nothing wholly below was kept but the active one
        assert log.delete_before_snapshot() is False
        with pytest.raises(Exception, match="outside the log"):
            log.read(0, 100)
        fill(log, 2)
        image = log.load_image()
    with MetadataLog.open(tmp_path, config) as log:
        assert log.log_start_offset == kept[0].base_offset
        assert log.load_image() == image


def test_retention_bytes_and_ms(tmp_path: Path) -> None:
    config = MetadataLogConfig(segment_bytes=300, retention_bytes=1, retention_ms=-1)
    with MetadataLog.open(tmp_path, config) as log:
        log.append([mv()], 1, 10)
        fill(log, 20)
        log.write_snapshot(log.load_image().write(), log.log_end_offset, 1, 100)
        fill(log, 20)
        s2 = log.write_snapshot(log.load_image().write(), log.log_end_offset, 1, 200)
        fill(log, 3)
        assert log.maybe_clean() is True
        assert log.snapshot_ids() == [s2]
        assert log.log_start_offset == s2.offset
    config = MetadataLogConfig(segment_bytes=300, retention_bytes=-1, retention_ms=1000)
    with MetadataLog.open(tmp_path / "b", config) as log:
        log.append([mv()], 1, 10)
        fill(log, 10)
        log.write_snapshot(log.load_image().write(), log.log_end_offset, 1, 5000)
        fill(log, 10)
        b = log.write_snapshot(log.load_image().write(), log.log_end_offset, 1, 9000)
        assert log.maybe_clean(now_ms=5500) is False  # a is 500 ms old: kept
        assert log.maybe_clean(now_ms=6500) is True  # a is too old: drop everything before b
        assert log.snapshot_ids() == [b]
        assert log.maybe_clean(now_ms=10**9) is False  # the latest snapshot always stays


def test_install_snapshot_beyond_the_log_end_restarts_the_log(tmp_path: Path) -> None:
    sid, data, image = leader_snapshot(tmp_path / "leader")
    with MetadataLog.open(tmp_path / "follower") as follower:
        follower.install_snapshot(sid, data)
        assert (follower.log_start_offset, follower.log_end_offset) == (sid.offset, sid.offset)
        assert follower.latest_epoch == 4
        fill(follower, 1, epoch=4)
    with MetadataLog.open(tmp_path / "follower") as follower:
        assert follower.log_start_offset == sid.offset
        after = follower.load_image()
        assert replace(after, provenance=image.provenance, topics=image.topics) == image
        assert after.topics.get_topic("t21") is not None
        with pytest.raises(CorruptLogError):
            follower.install_snapshot(SnapshotId(50, 4), data[:-3])


def test_open_removes_partial_snapshots_and_restarts_at_a_snapshot_past_the_end(tmp_path: Path) -> None:
    with MetadataLog.open(tmp_path / "src") as src:
        src.append([mv()], 2, 10)
        fill(src, 4, epoch=2)
        sid = src.write_snapshot(src.load_image().write(), src.log_end_offset, 2, 0)
        snap_bytes = src.read_snapshot_bytes(sid, 0, 1 << 20)
    part = tmp_path / "dst" / PARTITION_DIR
    with MetadataLog.open(tmp_path / "dst") as dst:
        dst.append([mv()], 1, 10)
    (part / sid.file_name()).write_bytes(snap_bytes)
    (part / f"{sid.file_name()[:-11]}-abc.checkpoint.part").write_bytes(b"half")
    with MetadataLog.open(tmp_path / "dst") as dst:
        assert not list(part.glob("*.part"))
        assert dst.log_start_offset == dst.log_end_offset == sid.offset
        assert read_snapshot_file(part / sid.file_name()).records() == dst.read_snapshot(sid).records()


def test_a_snapshot_built_elsewhere_is_checked_and_the_newest_is_replayed(tmp_path: Path) -> None:
    with MetadataLog.open(tmp_path) as log:
        log.append([mv()], 1, 10)
        fill(log, 5)
        first = log.load_image()
        data = build_snapshot(first.write(), 1, 1004, 0)
        with pytest.raises(LogError, match="is in epoch 1, not 2"):
            log.write_built_snapshot(SnapshotId(log.log_end_offset, 2), data)
        older = log.write_built_snapshot(SnapshotId(log.log_end_offset, 1), data)
        fill(log, 5)
        second = log.load_image()
        newer = log.write_built_snapshot(
            SnapshotId(log.log_end_offset, 1), build_snapshot(second.write(), 1, 1009, 0)
        )
        fill(log, 2)
        full = log.load_image()
    assert older < newer
    with MetadataLog.open(tmp_path) as log:
        assert log.snapshot_ids() == [older, newer]
        first_entry = next(iter(log.entries()))
        assert first_entry.offset == newer.offset - 1 and first_entry.batch.from_snapshot
        assert log.load_image() == full
        # what the two batches after the newer snapshot take
        assert log.size_from(0) == log.size_in_bytes
        after = sum(batch.size for _, _, batch in log.iter_batches(newer.offset))
        assert 0 < log.size_from(newer.offset) == after < log.size_in_bytes


def test_a_snapshot_that_cannot_be_deleted_is_logged_and_counted_and_cleaning_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = MetadataLogConfig(segment_bytes=300, retention_bytes=1, retention_ms=-1)
    with MetadataLog.open(tmp_path, config) as log:
        log.append([mv()], 1, 10)
        fill(log, 20)
        s1 = log.write_snapshot(log.load_image().write(), log.log_end_offset, 1, 100)
        fill(log, 20)
        s2 = log.write_snapshot(log.load_image().write(), log.log_end_offset, 1, 200)
        fill(log, 3)
        ids_before = log._snapshots
        stuck = log.dir / s1.file_name()
        real_unlink = Path.unlink

        def unlink(self: Path, missing_ok: bool = False) -> None:
            if self == stuck:
                raise PermissionError(13, "Permission denied", str(self))
            real_unlink(self, missing_ok=missing_ok)

        monkeypatch.setattr(Path, "unlink", unlink)
        with capture_logs() as logs:
            assert log.maybe_clean() is True
        monkeypatch.undo()
        assert log.snapshot_delete_failures == 1
        assert any(e["event"] == "deleting an old metadata snapshot failed" for e in logs)
        # The segments before s2 went all the same, and s1 is forgotten though its file stayed.
        assert log.snapshot_ids() == [s2] and log.log_start_offset == s2.offset
        assert stuck.exists()
        # The ids are replaced, not edited in place: a reader holding the old ones is not disturbed.
        assert s1 in ids_before
        log.flush()
        image = log.load_image()
    with MetadataLog.open(tmp_path, config) as log:
        assert log.load_image() == image
        log.maybe_clean()  # the file left behind goes at the open, or at the cleaning after it
        assert log.snapshot_ids() == [s2] and not stuck.exists()


def test_a_snapshot_that_restarts_the_log_takes_the_older_snapshots_with_it(tmp_path: Path) -> None:
    with MetadataLog.open(tmp_path / "leader") as leader:
        leader.append([mv()], 1, 10)
        fill(leader, 30)
        sid = leader.write_snapshot(leader.load_image().write(), leader.log_end_offset, 1, 1029)
        data = leader.read_snapshot_bytes(sid, 0, 1 << 20)
        image = leader.load_image()
    with MetadataLog.open(tmp_path / "follower") as follower:
        follower.append([mv()], 1, 10)
        fill(follower, 5)
        own = follower.write_snapshot(follower.load_image().write(), follower.log_end_offset, 1, 1004)
        follower.install_snapshot(sid, data)
        # Nothing follows the follower's own snapshot any more, and retention would never reach it.
        assert follower.snapshot_ids() == [sid]
        assert not (follower.dir / own.file_name()).exists()
        assert follower.maybe_clean() is False
        assert replace(follower.load_image(), provenance=image.provenance) == image


def test_entry_runs_are_the_entries_a_batch_at_a_time(tmp_path: Path) -> None:
    def flat(runs: Iterator[EntryRun]) -> list[tuple[int, Any, BatchInfo]]:
        return [(r.offset + i * r.step, record, r.batch) for r in runs for i, record in enumerate(r.records)]

    def offsets(runs: Iterator[EntryRun]) -> list[int]:
        return [o for o, _, _ in flat(runs)]

    with MetadataLog.open(tmp_path) as log:
        log.append([mv()], 1, 10)
        fill(log, 6)  # offsets 1-12
        log.write_snapshot(log.load_image().write(), log.log_end_offset, 1, 1005)
        log.append(topic_records(40) + noops(3), leader_epoch=2, timestamp_ms=2000)  # 13-17
        leader_change = LeaderChangeMessage(Version=0, LeaderId=1, Voters=[], GrantingVoters=[])
        log.append_control([leader_change], leader_epoch=2, timestamp_ms=2001)  # 18
        fill(log, 3, epoch=2)  # 19-24
        log.flush()
        data_offsets = [*range(18), *range(19, 25)]
        written = [r for _, r, _ in flat(log.entry_runs(from_snapshot=False))]
        assert offsets(log.entry_runs(from_snapshot=False)) == data_offsets
        assert written[13:18] == topic_records(40) + noops(3)

        # A control batch only when asked for.
        with_control = flat(log.entry_runs(from_snapshot=False, include_control=True))
        assert [o for o, _, _ in with_control] == list(range(25))
        assert with_control[18][1].message == leader_change and with_control[18][2].is_control

        # A run that starts inside a batch starts at the offset asked for.
        cut = flat(log.entry_runs(from_snapshot=False, from_offset=15))
        assert [(o, r) for o, r, _ in cut] == list(zip(data_offsets[15:], written[15:], strict=True))

        # The snapshot's records all carry its last contained offset, then the log's follow.
        runs = list(log.entry_runs())
        assert {(r.offset, r.step) for r in runs if r.batch.from_snapshot} == {(12, 0)}
        replayed = offsets(iter(runs))
        assert replayed == [12] * (len(replayed) - 11) + data_offsets[13:]

        # entries() is the same, record by record.
        cases: list[dict[str, Any]] = [
            {},
            {"include_control": True},
            {"from_snapshot": False},
            {"from_snapshot": False, "from_offset": 15},
        ]
        for kwargs in cases:
            assert [tuple(e) for e in log.entries(**kwargs)] == flat(log.entry_runs(**kwargs)), kwargs
