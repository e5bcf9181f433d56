"""`kraftpy metadata dump` and `verify`, run in process and as the installed command."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from protocol.control_records import SnapshotFooterRecord, SnapshotHeaderRecord
from protocol.framing import ApiMessageAndVersion
from protocol.metadata_records import NoOpRecord, TopicRecord
from protocol.record_batch import build_control_batch, build_metadata_batch, iter_batch_positions
from protocol.uuid import Uuid
from tools.cli.main import main

REPO = Path(__file__).resolve().parents[2]


def sample_files(samples_dir: Path) -> list[Path]:
    return sorted(p for p in samples_dir.rglob("*") if p.suffix in (".log", ".checkpoint"))


def test_verify_passes_on_every_sample_file(samples_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for path in sample_files(samples_dir):
        assert main(["metadata", "verify", str(path)]) == 0, path
        assert ": ok" in capsys.readouterr().out


def test_verify_of_a_directory_counts_by_type(samples_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["metadata", "verify", str(samples_dir / "otus_kafka_main_b4c7710")]) == 0
    out = capsys.readouterr().out
    assert "bootstrap.checkpoint" in out and "00000000000000000000.log" in out
    assert "FeatureLevelRecord" in out and "LeaderChangeMessage" in out


def _copy(samples_dir: Path, tmp_path: Path) -> Path:
    src = samples_dir / "LDI-POC_16c4da1" / "__cluster_metadata-0" / "00000000000000000000.log"
    dst = tmp_path / "00000000000000000000.log"
    shutil.copyfile(src, dst)
    dst.chmod(0o644)
    return dst


def _batch_at(data: bytes, index: int) -> tuple[int, int]:
    for pos, header in iter_batch_positions(data):
        if pos <= index < pos + header.size:
            return pos, header.base_offset
    raise AssertionError("index outside every batch")


def test_verify_names_the_offset_of_a_flipped_byte(
    samples_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _copy(samples_dir, tmp_path)
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    position, offset = _batch_at(bytes(data), middle)
    data[middle] ^= 0xFF
    path.write_bytes(bytes(data))
    assert main(["metadata", "verify", str(path)]) == 1
    err = capsys.readouterr().err
    assert str(path) in err
    assert f"file position {position}, offset {offset}" in err


def test_verify_catches_a_damaged_base_offset(
    samples_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _copy(samples_dir, tmp_path)
    data = bytearray(path.read_bytes())
    position, _ = _batch_at(bytes(data), len(data) // 2)
    data[position + 7] ^= 0x04  # base offset is outside the CRC
    path.write_bytes(bytes(data))
    assert main(["metadata", "verify", str(path)]) == 1
    assert f"file position {position}" in capsys.readouterr().err


def test_verify_reports_a_torn_tail(
    samples_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _copy(samples_dir, tmp_path)
    data = path.read_bytes()
    path.write_bytes(data[:-10])
    assert main(["metadata", "verify", str(path)]) == 1
    assert "bytes left" in capsys.readouterr().err


def test_dump_json_lines(samples_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = samples_dir / "otus_kafka_HW02_d9e6ebb"
    assert main(["metadata", "dump", "--json", str(path)]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [obj["offset"] for obj in lines] == list(range(len(lines)))
    first = lines[0]
    assert first["type"] == "LeaderChangeMessage" and first["control"] is True
    broker = next(obj for obj in lines if obj["type"] == "RegisterBrokerRecord")
    assert set(broker) == {"offset", "timestamp", "leaderEpoch", "type", "version", "data"}
    assert broker["version"] == 3 and broker["data"]["LogDirs"] == ["uqILiACavwjFzy-6zrtdOw"]
    assert isinstance(broker["data"]["IncarnationId"], str) and len(broker["data"]["IncarnationId"]) == 22


def test_dump_from_offset_and_text(samples_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = samples_dir / "otus_kafka_HW02_d9e6ebb" / "__cluster_metadata-0" / "00000000000000000000.log"
    assert main(["metadata", "dump", "--json", "--from-offset", "9070", str(path)]) == 0
    assert [json.loads(x)["offset"] for x in capsys.readouterr().out.splitlines()] == [9070, 9071, 9072, 9073]
    assert main(["metadata", "dump", str(path), "--format", "kraftpy", "--from-offset", "9073"]) == 0
    out = capsys.readouterr().out
    assert "| offset 9073 NoOpRecord v0 {}" in out


def test_dump_snapshot_shows_header_and_footer(samples_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    snap = (
        samples_dir
        / "otus_kafka_HW02_d9e6ebb"
        / "__cluster_metadata-0"
        / "00000000000000008931-0000000023.checkpoint"
    )
    assert main(["metadata", "dump", "--json", str(snap)]) == 0
    types = [json.loads(x)["type"] for x in capsys.readouterr().out.splitlines()]
    assert types[0] == "SnapshotHeaderRecord" and types[-1] == "SnapshotFooterRecord"
    assert "FeatureLevelRecord" in types


def test_unknown_record_types_are_dumped_and_verified(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from protocol.framing import decode_record

    unknown = decode_record(bytes.fromhex("01630007"))  # type 99 from some future Kafka
    tid = Uuid.random()
    data = (
        build_control_batch(0, 1, 0, [SnapshotHeaderRecord()])
        + build_metadata_batch(
            1,
            1,
            5,
            [
                ApiMessageAndVersion(TopicRecord(Name="a", TopicId=tid), 0),
                unknown,
                ApiMessageAndVersion(NoOpRecord(), 0),
            ],
        )
        + build_control_batch(4, 1, 0, [SnapshotFooterRecord()])
    )
    path = tmp_path / "00000000000000000004-0000000001.checkpoint"
    path.write_bytes(data)
    assert main(["metadata", "verify", str(path)]) == 0
    assert "UnknownRecord(apiKey=99)" in capsys.readouterr().out
    assert main(["metadata", "dump", "--json", str(path)]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [x["type"] for x in lines] == [
        "SnapshotHeaderRecord",
        "TopicRecord",
        "UnknownRecord(apiKey=99)",
        "NoOpRecord",
        "SnapshotFooterRecord",
    ]
    assert lines[1]["data"] == {"Name": "a", "TopicId": str(tid)}


def test_bad_paths_are_user_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["metadata", "verify", str(tmp_path / "missing")]) == 2
    assert "no such file" in capsys.readouterr().err
    (tmp_path / "notes.txt").write_text("hi")
    assert main(["metadata", "dump", str(tmp_path / "notes.txt")]) == 2
    assert main(["metadata", "dump", str(tmp_path)]) == 2
    assert "no metadata log" in capsys.readouterr().err


def test_installed_command_exit_codes(samples_dir: Path, tmp_path: Path) -> None:
    exe = Path(sys.executable).parent / "kraftpy"
    sample = samples_dir / "otus_kafka_main_b4c7710" / "__cluster_metadata-0" / "00000000000000000000.log"
    ok = subprocess.run(
        [str(exe), "metadata", "verify", str(sample)], capture_output=True, text=True, cwd=REPO
    )
    assert ok.returncode == 0, ok.stderr
    bad = tmp_path / "00000000000000000000.log"
    data = bytearray(sample.read_bytes())
    data[len(data) // 2] ^= 0xFF
    bad.write_bytes(bytes(data))
    failed = subprocess.run(
        [str(exe), "metadata", "verify", str(bad)], capture_output=True, text=True, cwd=REPO
    )
    assert failed.returncode == 1
    assert str(bad) in failed.stderr and "Traceback" not in failed.stderr
