"""Replaying real Kafka metadata logs (read in place from ../shared)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from kraftpy.image import MetadataDelta, MetadataImage
from protocol.record_batch import iter_batches, metadata_records
from protocol.uuid import Uuid

SAMPLES = ["LDI-POC_16c4da1", "flink-on-prem_cp7.6.0", "otus_kafka_HW02_d9e6ebb", "otus_kafka_main_b4c7710"]


def replay_file(path: Path, until: int | None = None) -> MetadataImage:
    """Replay the metadata records of a segment or snapshot, offsets below `until` only."""
    d = MetadataDelta(MetadataImage.EMPTY)
    for batch in iter_batches(path.read_bytes()):
        if batch.is_control:
            continue
        for rec, amv in zip(batch.records, metadata_records(batch), strict=True):
            offset = batch.base_offset + rec.offset_delta
            if until is not None and offset >= until:
                return d.apply()
            d.replay(amv, offset, epoch=batch.partition_leader_epoch, timestamp_ms=batch.max_timestamp)
    assert not d.in_transaction
    return d.apply()


def segment(samples_dir: Path, name: str) -> Path:
    return samples_dir / name / "__cluster_metadata-0" / "00000000000000000000.log"


@pytest.mark.parametrize("name", SAMPLES)
def test_every_sample_replays_and_round_trips(samples_dir: Path, name: str) -> None:
    img = replay_file(segment(samples_dir, name))
    assert img.metadata_version is not None
    d = MetadataDelta(MetadataImage.EMPTY)
    for r in img.write():
        d.replay(r)
    assert replace(d.apply(), provenance=img.provenance) == img


def test_ldi_poc_partitions_live_in_the_brokers_directory(samples_dir: Path) -> None:
    img = replay_file(segment(samples_dir, "LDI-POC_16c4da1"))
    dir_id = Uuid.from_string("XHhkr4tkSsD900pOQ8pPfg")
    assert img.metadata_version == 19
    assert img.cluster.brokers[1].directories == (dir_id,)
    parts = list(img.topics.partitions())
    assert len(parts) >= 54
    assert all(reg.directory(1) == dir_id for _, reg in parts)
    assert img.topics.replicas_by_directory(1).keys() == {dir_id}


@pytest.mark.parametrize(
    ("name", "snapshot"),
    [
        ("flink-on-prem_cp7.6.0", "00000000000000007752-0000000001.checkpoint"),
        ("flink-on-prem_cp7.6.0", "00000000000000014926-0000000001.checkpoint"),
        ("otus_kafka_HW02_d9e6ebb", "00000000000000008931-0000000023.checkpoint"),
    ],
)
def test_kafka_snapshot_equals_log_replayed_to_the_same_offset(
    samples_dir: Path, name: str, snapshot: str
) -> None:
    part = samples_dir / name / "__cluster_metadata-0"
    end_offset = int(snapshot.split("-")[0])
    from_snapshot = replay_file(part / snapshot)
    from_log = replay_file(part / "00000000000000000000.log", until=end_offset)
    assert replace(from_snapshot, provenance=from_log.provenance) == from_log
