"""Real Kafka-written metadata logs (read in place from ../shared): every batch and record decodes
and re-encodes to the bytes on disk."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from protocol.control_records import control_records, encode_control_record
from protocol.framing import encode_record
from protocol.log_files import FileKind, classify, iter_entries, list_segments, list_snapshots, resolve
from protocol.metadata_records import PartitionChangeRecord, PartitionRecord, RegisterBrokerRecord
from protocol.record_batch import encode_batch, iter_batches, metadata_records
from protocol.uuid import Uuid


def sample_files(samples_dir: Path) -> list[Path]:
    files = sorted(p for p in samples_dir.rglob("*") if p.suffix in (".log", ".checkpoint"))
    assert files, f"no .log or .checkpoint files under {samples_dir}"
    return files


def test_every_sample_file_re_encodes_batch_by_batch(samples_dir: Path) -> None:
    for path in sample_files(samples_dir):
        data = path.read_bytes()
        pos = 0
        for batch in iter_batches(data):
            size = batch.size
            assert encode_batch(batch) == data[pos : pos + size], f"{path} at {pos}"
            if batch.is_control:
                for r, amv in zip(batch.records, control_records(batch), strict=True):
                    assert encode_control_record(amv) == (r.key, r.value), f"{path} at {pos}"
            else:
                for r, amv in zip(batch.records, metadata_records(batch), strict=True):
                    assert encode_record(amv) == r.value, f"{path} at {pos}: {amv}"
            pos += size
        assert pos == len(data)


def test_sample_record_counts_match_their_readme(samples_dir: Path) -> None:
    segment = samples_dir / "flink-on-prem_cp7.6.0" / "__cluster_metadata-0" / "00000000000000000000.log"
    counts: Counter[str] = Counter()
    batches = 0
    for batch in iter_batches(segment.read_bytes()):
        batches += 1
        if not batch.is_control:
            counts.update(amv.message.NAME for amv in metadata_records(batch))
    assert batches == 16340
    assert counts["NoOpRecord"] == 16277
    assert counts["ConfigRecord"] == 375
    assert counts["PartitionRecord"] == counts["PartitionChangeRecord"] == 151
    assert counts["TopicRecord"] == 63


def test_jbod_sample_carries_directory_ids(samples_dir: Path) -> None:
    dir_id = Uuid.from_string("XHhkr4tkSsD900pOQ8pPfg")
    part = samples_dir / "LDI-POC_16c4da1"
    entries = [e for f in resolve(part, include_snapshots=False) for e in iter_entries(f)]
    partitions = [e.message for e in entries if type(e.message.message) is PartitionRecord]
    assert len(partitions) == 54
    assert all(amv.version == 1 and amv.message.Directories == [dir_id] for amv in partitions)
    changes = [e.message for e in entries if type(e.message.message) is PartitionChangeRecord]
    assert all(amv.version == 1 for amv in changes)
    brokers = [e.message for e in entries if type(e.message.message) is RegisterBrokerRecord]
    assert [amv.version for amv in brokers] == [3, 3]
    assert all(amv.message.LogDirs == [dir_id] for amv in brokers)
    offsets = [e.offset for e in entries]
    assert offsets == list(range(len(offsets)))


def test_file_listing_by_name(samples_dir: Path) -> None:
    part = samples_dir / "flink-on-prem_cp7.6.0" / "__cluster_metadata-0"
    assert [f.offset for f in list_segments(part)] == [0]
    assert [(f.offset, f.epoch) for f in list_snapshots(part)] == [(7752, 1), (14926, 1)]
    files = resolve(part.parent, include_snapshots=True)
    assert [f.kind for f in files] == [
        FileKind.BOOTSTRAP,
        FileKind.SEGMENT,
        FileKind.SNAPSHOT,
        FileKind.SNAPSHOT,
    ]
    lf = classify(part / "00000000000000007752-0000000001.checkpoint")
    assert lf is not None and (lf.kind, lf.offset, lf.epoch) == (FileKind.SNAPSHOT, 7752, 1)


@pytest.mark.parametrize("name", ["quorum-state", "leader-epoch-checkpoint"])
def test_other_files_are_not_log_files(samples_dir: Path, name: str) -> None:
    assert classify(samples_dir / "LDI-POC_16c4da1" / "__cluster_metadata-0" / name) is None
