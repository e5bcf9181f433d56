"""Real Kafka metadata logs (../shared/samples, read in place) replay into the controller core."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.core import ControllerConfig, QuorumControllerCore
from protocol.record_batch import iter_batches, metadata_records

SAMPLES = {
    "flink-on-prem_cp7.6.0": 14,
    "otus_kafka_HW02_d9e6ebb": 20,
    "otus_kafka_main_b4c7710": 20,
    "LDI-POC_16c4da1": 19,
}


def _replay(segment: Path) -> QuorumControllerCore:
    core = QuorumControllerCore(ControllerConfig(node_id=1, cluster_id="sample"))
    for batch in iter_batches(segment.read_bytes()):
        if batch.is_control:
            continue
        core.replay_all(metadata_records(batch), batch.base_offset)
    return core


@pytest.mark.parametrize(("name", "metadata_version"), sorted(SAMPLES.items()))
def test_a_real_kafka_log_replays(samples_dir: Path, name: str, metadata_version: int) -> None:
    segment = samples_dir / name / "__cluster_metadata-0" / "00000000000000000000.log"
    core = _replay(segment)
    assert core.metadata_version == metadata_version
    assert not core.in_transaction
    again = _replay(segment)
    assert again.state() == core.state()
    replication = core.m.replication
    for topic in replication.topics.values():
        for p in topic.partitions.values():
            assert len(p.directories) == len(p.replicas)
            assert p.leader == -1 or p.leader in p.isr
    if name != "otus_kafka_main_b4c7710":
        assert core.m.cluster.registrations
        assert replication.topics


def test_the_jbod_sample_keeps_each_replicas_directory(samples_dir: Path) -> None:
    core = _replay(samples_dir / "LDI-POC_16c4da1" / "__cluster_metadata-0" / "00000000000000000000.log")
    registrations = core.m.cluster.registrations
    assert all(len(r.directories) == 1 for r in registrations.values())
    dirs = {
        d for t in core.m.replication.topics.values() for p in t.partitions.values() for d in p.directories
    }
    registered = {d for r in registrations.values() for d in r.directories}
    assert dirs and dirs <= registered
