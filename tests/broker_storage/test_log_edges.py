"""Less common paths: offset gaps, relative-offset overflow, time index, configs, OSError propagation."""

from __future__ import annotations

import errno
import itertools
import shutil
import struct
from pathlib import Path

import pytest

from broker.storage import LogConfig, LogDir, LogDirOfflineError, PartitionLog
from kraftpy.config import KafkaConfig
from protocol.record_batch import iter_batches
from protocol.uuid import Uuid
from tests.broker_storage.batches import value_batch


def test_reads_skip_gaps_between_segments(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path / "t-0")
    log.append_as_follower(value_batch(2, base_offset=0, leader_epoch=1))
    log.roll()
    log.append_as_follower(value_batch(2, base_offset=10, leader_epoch=1))  # offsets 2..9 were compacted away
    assert log.segment_base_offsets == [0, 2]
    r = log.read(5, 1 << 20)
    assert [b.base_offset for b in iter_batches(r.records)] == [10] and r.next_offset == 12
    log.close()


def test_offsets_too_far_for_a_relative_index_roll_a_segment(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path / "t-0")
    log.append_as_follower(value_batch(1, base_offset=0))
    far = 2**31 + 5
    log.append_as_follower(value_batch(1, base_offset=far))
    assert log.segment_base_offsets == [0, far]
    log.close()
    reopened = PartitionLog.open(tmp_path / "t-0")
    assert reopened.log_end_offset == far + 1
    reopened.close()


def test_time_index_holds_growing_timestamps_in_kafkas_layout(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path / "t-0", config=LogConfig(index_interval_bytes=100, segment_bytes=3_000))
    for i in range(30):
        ts = 1_000 + (i * 37) % 500  # not monotonic
        log.append_as_leader(value_batch(1, timestamp=ts), 0, now_ms=ts)
    log.close()
    raw = (tmp_path / "t-0" / "00000000000000000000.timeindex").read_bytes()
    assert raw and len(raw) % 12 == 0
    entries = list(struct.iter_unpack(">qi", raw))
    assert all(a[0] < b[0] and a[1] < b[1] for a, b in itertools.pairwise(entries))


def test_oserror_propagates_unchanged_and_fails_the_dir(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path / "t-0")
    log.append_as_leader(value_batch(1), 0)
    shutil.rmtree(tmp_path / "t-0")
    with pytest.raises(FileNotFoundError):
        log.roll()  # creating the next segment needs the dir
    log.close_handles()


async def test_oserror_from_a_log_reaches_the_failure_channel(tmp_path: Path) -> None:
    failed: list[BaseException] = []
    d = LogDir(tmp_path, Uuid.random(), lambda _d, e: failed.append(e))
    log = await d.run(PartitionLog.open, tmp_path / "t-0")
    await d.run(log.append_as_leader, value_batch(1), 0)
    shutil.rmtree(tmp_path / "t-0")
    with pytest.raises(LogDirOfflineError):
        await d.run(log.roll)
    assert len(failed) == 1 and isinstance(failed[0], OSError) and failed[0].errno == errno.ENOENT
    log.close_handles()
    d.close()


def test_log_config_from_kafka_names() -> None:
    cfg = LogConfig.from_configs({"log.segment.bytes": "5000", "segment.bytes": 6000, "retention.ms": "-1"})
    assert (cfg.segment_bytes, cfg.retention_ms) == (6000, -1)
    broker = KafkaConfig.from_properties(
        {"log.segment.bytes": "7000", "log.retention.hours": "1", "log.roll.ms": "99"}
    )
    lc = LogConfig.from_kafka_config(broker, {"retention.bytes": "123"})
    assert (lc.segment_bytes, lc.retention_ms, lc.segment_ms, lc.retention_bytes) == (
        7000,
        3_600_000,
        99,
        123,
    )
    with pytest.raises(ValueError, match=r"segment\.bytes"):
        LogConfig.from_configs({"segment.bytes": "lots"})
    with pytest.raises(ValueError, match=r"log\.roll\.ms"):
        LogConfig.from_configs({"log.roll.ms": "soon"})
    with pytest.raises(ValueError, match="minimum"):
        LogConfig(segment_bytes=1)
