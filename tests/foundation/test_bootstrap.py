"""bootstrap.checkpoint: same bytes as real Kafka's, readable both ways."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftpy.storage.bootstrap import (
    BootstrapError,
    bootstrap_records,
    decode_bootstrap_checkpoint,
    encode_bootstrap_checkpoint,
    read_bootstrap_checkpoint,
    write_bootstrap_checkpoint,
)
from protocol.record_batch import iter_batches


def test_real_kafka_files_read_and_reencode_byte_for_byte(samples_dir: Path) -> None:
    files = sorted(samples_dir.glob("*/bootstrap.checkpoint"))
    assert files
    for f in files:
        real = f.read_bytes()
        boot = read_bootstrap_checkpoint(f.parent)
        assert boot.metadata_version_level in range(7, 23)
        stamps = tuple(b.base_timestamp for b in iter_batches(real))
        assert encode_bootstrap_checkpoint(bootstrap_records(boot.metadata_version_level), stamps) == real, f


def test_layout_header_records_footer(tmp_path: Path) -> None:
    write_bootstrap_checkpoint(tmp_path, 21, {"group.version": 1, "kraft.version": 1, "a.zero": 0})
    data = (tmp_path / "bootstrap.checkpoint").read_bytes()
    batches = list(iter_batches(data))
    assert [b.is_control for b in batches] == [True, False, True]
    assert [b.base_offset for b in batches] == [0, 1, 3]
    assert all(b.partition_leader_epoch == 0 for b in batches)
    boot = read_bootstrap_checkpoint(tmp_path)
    assert boot.metadata_version_level == 21
    names = [amv.message.Name for amv in boot.records]
    assert names == ["metadata.version", "group.version"]  # kraft.version and level-0 features never get one
    assert boot.feature_level("group.version") == 1
    assert not (tmp_path / "bootstrap.checkpoint.tmp").exists()


def test_missing_and_broken_files(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_bootstrap_checkpoint(tmp_path)
    with pytest.raises(BootstrapError):
        decode_bootstrap_checkpoint(b"\x00" * 10 + b"garbage" * 20)
    good = encode_bootstrap_checkpoint(bootstrap_records(21))
    broken = bytearray(good)
    broken[len(good) // 2] ^= 0xFF
    with pytest.raises(BootstrapError):
        decode_bootstrap_checkpoint(bytes(broken))
