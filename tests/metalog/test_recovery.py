"""Opening a damaged log: a torn tail is cut and reported, anything else is an error naming the spot."""

from __future__ import annotations

from pathlib import Path

import pytest
from structlog.testing import capture_logs

from kraftpy.metalog import CorruptLogError, MetadataLog, MetadataLogConfig, QuorumStateData
from kraftpy.metalog.files import PARTITION_DIR
from protocol.record_batch import iter_batch_positions
from tests.metalog.helpers import copy_sample, noops

SEGMENT = "00000000000000000000.log"


def sample_copy(samples_dir: Path, tmp_path: Path, name: str = "LDI-POC_16c4da1") -> Path:
    return copy_sample(samples_dir / name, tmp_path / name)


def batch_positions(data: bytes) -> list[tuple[int, int, int]]:
    """(position, size, base offset) of every batch."""
    return [(pos, h.size, h.base_offset) for pos, h in iter_batch_positions(data)]


def test_sample_cut_in_its_last_batch_recovers_to_the_last_whole_batch(
    samples_dir: Path, tmp_path: Path
) -> None:
    root = sample_copy(samples_dir, tmp_path)
    seg = root / PARTITION_DIR / SEGMENT
    data = seg.read_bytes()
    last_pos, last_size, last_base = batch_positions(data)[-1]
    cut_at = last_pos + last_size // 2
    seg.write_bytes(data[:cut_at])

    with capture_logs() as logs, MetadataLog.open(root) as log:
        assert log.recovery.truncated_bytes == cut_at - last_pos
        assert log.recovery.torn_tail is not None
        assert log.recovery.torn_tail.position == last_pos
        assert log.log_end_offset == last_base
        log.append(noops(1), leader_epoch=log.latest_epoch)  # appends continue after the cut
        log.flush()
    cut_events = [e for e in logs if e["event"].startswith("metadata log recovery cut")]
    assert cut_events and cut_events[0]["truncated_bytes"] == cut_at - last_pos
    assert cut_events[0]["position"] == last_pos
    assert seg.read_bytes()[:last_pos] == data[:last_pos]

    with MetadataLog.open(root) as log:
        assert log.recovery.clean
        assert log.log_end_offset == last_base + 1


def test_cut_inside_the_header_and_zero_filled_tail_are_torn_too(tmp_path: Path) -> None:
    with MetadataLog.open(tmp_path) as log:
        for _ in range(3):
            log.append(noops(2), 1)
    seg = tmp_path / PARTITION_DIR / SEGMENT
    good = seg.read_bytes()
    seg.write_bytes(good + good[:7])  # 7 bytes of a next batch's header
    with MetadataLog.open(tmp_path) as log:
        assert (log.recovery.truncated_bytes, log.log_end_offset) == (7, 6)
    seg.write_bytes(good + bytes(4096))  # preallocated zeros after the last batch
    with MetadataLog.open(tmp_path) as log:
        assert (log.recovery.truncated_bytes, log.log_end_offset) == (4096, 6)
    assert seg.read_bytes() == good


def test_flipped_byte_in_the_middle_is_an_error_naming_file_and_position(
    samples_dir: Path, tmp_path: Path
) -> None:
    root = sample_copy(samples_dir, tmp_path)
    seg = root / PARTITION_DIR / SEGMENT
    data = bytearray(seg.read_bytes())
    positions = batch_positions(bytes(data))
    pos, size, base = positions[len(positions) // 2]
    data[pos + size - 3] ^= 0x40
    seg.write_bytes(bytes(data))
    with pytest.raises(CorruptLogError) as err:
        MetadataLog.open(root)
    assert err.value.path == seg
    assert err.value.position == pos
    assert f"file position {pos}" in str(err.value) and SEGMENT in str(err.value)
    assert f"offset {base}" in str(err.value)
    assert seg.read_bytes() == bytes(data)  # nothing was cut


def test_bad_last_batch_of_an_earlier_segment_is_an_error(tmp_path: Path) -> None:
    with MetadataLog.open(tmp_path, MetadataLogConfig(segment_bytes=300)) as log:
        for _ in range(10):
            log.append(noops(3), 1)
        first = log.segments[0].path
    first.write_bytes(first.read_bytes()[:-10])
    with pytest.raises(CorruptLogError) as err:
        MetadataLog.open(tmp_path, MetadataLogConfig(segment_bytes=300))
    assert err.value.path == first


def test_read_only_open_reports_a_torn_tail_and_leaves_the_file(samples_dir: Path, tmp_path: Path) -> None:
    root = sample_copy(samples_dir, tmp_path, "otus_kafka_main_b4c7710")
    seg = root / PARTITION_DIR / SEGMENT
    seg.write_bytes(seg.read_bytes()[:-20])
    before = seg.read_bytes()
    with MetadataLog.open(root, read_only=True) as log:
        assert log.recovery.truncated_bytes > 0
        assert log.log_end_offset == 1
        # what is left is the BeginTransactionRecord of the bootstrap transaction: nothing to show
        assert log.load_image().metadata_version is None
    assert seg.read_bytes() == before


def test_opening_the_real_samples_read_only_changes_nothing(samples_dir: Path) -> None:
    for sample in sorted(p for p in samples_dir.iterdir() if p.is_dir()):
        with MetadataLog.open(sample, read_only=True) as log:
            assert log.recovery.clean
            assert log.log_end_offset > 0


def test_damaged_length_in_the_middle_of_the_last_segment_is_not_taken_for_a_torn_tail(
    samples_dir: Path, tmp_path: Path
) -> None:
    root = sample_copy(samples_dir, tmp_path)
    seg = root / PARTITION_DIR / SEGMENT
    data = bytearray(seg.read_bytes())
    pos, _size, _base = batch_positions(bytes(data))[100]
    data[pos + 8 : pos + 12] = (10**8).to_bytes(4, "big")  # a Length running past the end of the file
    seg.write_bytes(bytes(data))
    with pytest.raises(CorruptLogError, match="a whole batch follows") as err:
        MetadataLog.open(root)
    assert err.value.position == pos
    assert seg.read_bytes() == bytes(data)


def _set_leader_epoch(seg: Path, position: int, epoch: int) -> None:
    """Overwrite PartitionLeaderEpoch (bytes 12-15 of the header, outside the CRC) of one batch."""
    data = bytearray(seg.read_bytes())
    data[position + 12 : position + 16] = epoch.to_bytes(4, "big", signed=True)
    seg.write_bytes(bytes(data))


def _three_epochs(tmp_path: Path) -> Path:
    with MetadataLog.open(tmp_path) as log:
        for epoch in (1, 1, 2, 2, 3):
            log.append(noops(2), epoch)
        log.flush()
    return tmp_path / PARTITION_DIR / SEGMENT


def test_a_damaged_leader_epoch_in_the_middle_is_refused_naming_the_spot(tmp_path: Path) -> None:
    seg = _three_epochs(tmp_path)
    before = seg.read_bytes()
    positions = batch_positions(before)
    _set_leader_epoch(seg, positions[1][0], 999)
    with pytest.raises(CorruptLogError) as e:
        MetadataLog.open(tmp_path)
    assert e.value.path == seg and "epochs never go back" in str(e.value)
    assert "not covered by the CRC" in str(e.value)
    # Refused, not repaired: the file is as it was.
    assert len(seg.read_bytes()) == len(before)


def test_a_last_batch_with_an_epoch_newer_than_quorum_state_is_refused(tmp_path: Path) -> None:
    seg = _three_epochs(tmp_path)
    with MetadataLog.open(tmp_path) as log:
        log.write_quorum_state(QuorumStateData(leader_id=1, leader_epoch=3, voted_id=-1, current_voters=(1,)))
    last = batch_positions(seg.read_bytes())[-1][0]
    _set_leader_epoch(seg, last, 999)
    with pytest.raises(CorruptLogError) as e:
        MetadataLog.open(tmp_path)
    assert "newer than the epoch 3 in quorum-state" in str(e.value)
    # The same log without the damage opens.
    _set_leader_epoch(seg, last, 3)
    with MetadataLog.open(tmp_path) as log:
        assert log.latest_epoch == 3


def test_a_whole_last_batch_failing_its_crc_is_cut_loudly(tmp_path: Path) -> None:
    seg = _three_epochs(tmp_path)
    data = bytearray(seg.read_bytes())
    last_pos, last_size, last_base = batch_positions(bytes(data))[-1]
    data[last_pos + last_size - 1] ^= 0x01  # one bit in the last record: the batch is whole
    seg.write_bytes(bytes(data))
    with capture_logs() as logs, MetadataLog.open(tmp_path) as log:
        assert log.recovery.damaged_tail and log.log_end_offset == last_base
    errors = [e for e in logs if e["log_level"] == "error"]
    assert errors and "may have been acknowledged" in errors[0]["event"]


def test_the_cut_of_a_damaged_batch_is_remembered_until_settled(tmp_path: Path) -> None:
    """The cut is durable at the first open; what was lost must not be forgotten with it."""
    from kraftpy.metalog.log import DAMAGE_MARKER

    seg = _three_epochs(tmp_path)
    data = bytearray(seg.read_bytes())
    last_pos, last_size, last_base = batch_positions(bytes(data))[-1]
    data[last_pos + last_size - 1] ^= 0x01
    seg.write_bytes(bytes(data))
    with MetadataLog.open(tmp_path) as log:
        first = log.recovery.damage
        assert first is not None and first["position"] == last_pos and first["log_end_offset"] == last_base
    with MetadataLog.open(tmp_path) as log:
        assert log.recovery.clean and log.recovery.damage == first  # nothing cut this time, still known
        log.settle_damage()
        assert log.recovery.damage is None
    assert not (tmp_path / PARTITION_DIR / DAMAGE_MARKER).exists()
    with MetadataLog.open(tmp_path) as log:
        assert log.recovery.damage is None and log.log_end_offset == last_base


def test_a_batch_cut_short_is_a_torn_write_not_damage(tmp_path: Path) -> None:
    seg = _three_epochs(tmp_path)
    data = seg.read_bytes()
    last_pos, last_size, _ = batch_positions(data)[-1]
    seg.write_bytes(data[: last_pos + last_size - 3])
    with capture_logs() as logs, MetadataLog.open(tmp_path) as log:
        assert not log.recovery.clean and not log.recovery.damaged_tail and log.recovery.damage is None
    assert not [e for e in logs if e["log_level"] == "error"]
