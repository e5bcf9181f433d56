"""Per-dir offset checkpoints, partition.metadata and partition dir names."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.storage import (
    CorruptCheckpointError,
    DirKind,
    InconsistentTopicIdError,
    OffsetCheckpointFile,
    PartitionLog,
    TopicPartition,
    parse_partition_dir_name,
)
from broker.storage.checkpoints import (
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_OFFSET_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
)
from broker.storage.dir_names import delete_dir_name, future_dir_name, stray_dir_name
from protocol.errors import Errors
from protocol.uuid import Uuid


@pytest.mark.parametrize(
    "name", [REPLICATION_OFFSET_CHECKPOINT, LOG_START_OFFSET_CHECKPOINT, RECOVERY_POINT_OFFSET_CHECKPOINT]
)
def test_offset_checkpoint_round_trip_in_kafkas_layout(tmp_path: Path, name: str) -> None:
    f = OffsetCheckpointFile(tmp_path / name)
    offsets = {
        TopicPartition("orders", 1): 1500,
        TopicPartition("a.b_c-d", 0): 0,
        TopicPartition("orders", 0): 7,
    }
    f.write(offsets)
    assert f.read() == offsets
    assert (tmp_path / name).read_text() == "0\n3\na.b_c-d 0 0\norders 0 7\norders 1 1500\n"
    assert not (tmp_path / f"{name}.tmp").exists()
    f.write({})
    assert f.read() == {}


def test_missing_or_empty_checkpoint_reads_empty(tmp_path: Path) -> None:
    f = OffsetCheckpointFile(tmp_path / REPLICATION_OFFSET_CHECKPOINT)
    assert f.read() == {}
    f.path.write_text("")
    assert f.read() == {}


@pytest.mark.parametrize(
    "text",
    ["1\n0\n", "0\n2\nt 0 5\n", "0\nx\n", "0\n1\nt 0\n", "0\n1\nt zero 5\n", "0\n1\nt 0 five\n", "\xff\xfe"],
)
def test_bad_checkpoint_is_a_clear_error_not_an_oserror(tmp_path: Path, text: str) -> None:
    path = tmp_path / REPLICATION_OFFSET_CHECKPOINT
    path.write_bytes(text.encode("latin-1"))
    with pytest.raises(CorruptCheckpointError) as e:
        OffsetCheckpointFile(path).read()
    assert not isinstance(e.value, OSError)
    assert str(path) in str(e.value)


def test_partition_metadata_guards_the_topic_id(tmp_path: Path) -> None:
    topic_id = Uuid.random()
    PartitionLog.open(tmp_path / "t-0", topic_id=topic_id).close()
    reopened = PartitionLog.open(tmp_path / "t-0")
    assert reopened.topic_id == topic_id
    reopened.close()
    with pytest.raises(InconsistentTopicIdError) as e:
        PartitionLog.open(tmp_path / "t-0", topic_id=Uuid.random())
    assert e.value.code == Errors.INCONSISTENT_TOPIC_ID
    (tmp_path / "t-0" / "partition.metadata").write_text("version: 3\ntopic_id: x")
    with pytest.raises(CorruptCheckpointError):
        PartitionLog.open(tmp_path / "t-0")


def test_partition_dir_names() -> None:
    tp = TopicPartition("my-topic", 12)
    uid = "0123456789abcdef0123456789abcdef"
    assert parse_partition_dir_name("my-topic-12") is not None
    for make, kind in (
        (future_dir_name, DirKind.FUTURE),
        (delete_dir_name, DirKind.DELETE),
        (stray_dir_name, DirKind.STRAY),
    ):
        name = make(tp, uid)
        assert name == f"my-topic-12.{uid}{kind.value}"
        parsed = parse_partition_dir_name(name)
        assert parsed is not None and (parsed.topic_partition, parsed.kind, parsed.unique_id) == (
            tp,
            kind,
            uid,
        )
    assert len(make(tp)) == len(name)  # a fresh 32-hex id
    for bad in ("lost+found", "topic", "topic-", "-3", "t-0.abc-future", "t-x", f"t-0.{uid}-gone"):
        assert parse_partition_dir_name(bad) is None, bad


def test_delete_dir_name_fits_in_255_bytes() -> None:
    name = delete_dir_name(TopicPartition("t" * 249, 99999))
    assert len(name) == 255 and name.endswith("-99999." + name.split(".")[-1])
    parsed = parse_partition_dir_name(name)
    assert parsed is not None and parsed.kind == DirKind.DELETE and parsed.topic_partition.partition == 99999
