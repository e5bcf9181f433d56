from __future__ import annotations

from pathlib import Path

import pytest

from kraftpy.log.leader_epoch_checkpoint import parse_leader_epoch_checkpoint
from kraftpy.log.partition_metadata import read_partition_metadata_file as read_partition_metadata
from kraftpy.metalog import LogError, MetadataLog, QuorumStateData
from kraftpy.metalog.checkpoints import read_quorum_state
from kraftpy.metalog.files import PARTITION_DIR
from protocol.uuid import Uuid


def test_real_sample_files_parse(samples_dir: Path) -> None:
    part = samples_dir / "otus_kafka_HW02_d9e6ebb" / PARTITION_DIR
    assert read_partition_metadata(part / "partition.metadata") == Uuid.METADATA_TOPIC_ID
    entries = parse_leader_epoch_checkpoint((part / "leader-epoch-checkpoint").read_text())
    assert len(entries) == 23
    with MetadataLog.open(part, read_only=True) as log:
        assert log.epoch_entries() == entries  # the history rebuilt from the batches agrees
    qs = read_quorum_state(part / "quorum-state")
    assert qs is not None
    assert (qs.leader_id, qs.leader_epoch, qs.voted_id, qs.current_voters) == (1, 23, -1, (1,))


def test_quorum_state_is_written_byte_for_byte_as_kafka_does(samples_dir: Path, tmp_path: Path) -> None:
    original = (samples_dir / "LDI-POC_16c4da1" / PARTITION_DIR / "quorum-state").read_text()
    state = QuorumStateData.from_json(original)
    assert state.to_json() == original
    with MetadataLog.open(tmp_path) as log:
        assert log.read_quorum_state() is None
        log.write_quorum_state(QuorumStateData(leader_id=3000, leader_epoch=7, current_voters=(3000, 3001)))
        assert log.read_quorum_state() == QuorumStateData(
            leader_id=3000, leader_epoch=7, current_voters=(3000, 3001)
        )
    assert not (tmp_path / PARTITION_DIR / "quorum-state.tmp").exists()


def test_quorum_state_v1_and_bad_files() -> None:
    v1 = QuorumStateData.from_json(
        '{"leaderId":2,"leaderEpoch":9,"votedId":2,"votedDirectoryId":"XHhkr4tkSsD900pOQ8pPfg","data_version":1}'
    )
    assert v1.voted_directory_id == Uuid.from_string("XHhkr4tkSsD900pOQ8pPfg")
    assert QuorumStateData.from_json(v1.to_json()) == v1
    with pytest.raises(LogError, match="no data_version"):
        QuorumStateData.from_json('{"leaderId":1}')
