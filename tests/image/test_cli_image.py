"""`kraftpy metadata image` on real samples."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.metalog.helpers import copy_sample
from tools.cli.main import main

LDI_DIR = "XHhkr4tkSsD900pOQ8pPfg"


def run_json(capsys: pytest.CaptureFixture[str], path: Path) -> dict:
    assert main(["metadata", "image", str(path), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_ldi_poc_partitions_show_the_replica_directory(
    samples_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = run_json(capsys, samples_dir / "LDI-POC_16c4da1")
    assert doc["features"] == {"metadata.version": 19}
    assert doc["brokers"][0]["logDirs"] == [LDI_DIR]
    partitions = [p for t in doc["topics"] for p in t["partitions"]]
    assert len(partitions) >= 54
    assert all(p["directories"] == [LDI_DIR] for p in partitions)
    # the log ends with the broker fenced: every replica is offline, no partition has a leader
    assert doc["brokers"][0]["state"] == "fenced"
    assert all(p["offlineReplicas"] == [1] for p in partitions)

    assert main(["metadata", "image", str(samples_dir / "LDI-POC_16c4da1")]) == 0
    out = capsys.readouterr().out
    assert f"1:{LDI_DIR}" in out
    assert "fenced" in out


def test_directory_replays_the_latest_snapshot_then_the_log(
    samples_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = run_json(capsys, samples_dir / "flink-on-prem_cp7.6.0" / "__cluster_metadata-0")
    assert doc["sources"][0].endswith("00000000000000014926-0000000001.checkpoint")
    assert doc["offset"] == 17026
    assert all(d == "MIGRATING" for t in doc["topics"] for p in t["partitions"] for d in p["directories"])
    assert doc["brokers"][0]["logDirs"] == []


def test_single_files(samples_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    part = samples_dir / "otus_kafka_HW02_d9e6ebb" / "__cluster_metadata-0"
    from_snapshot = run_json(capsys, part / "00000000000000008931-0000000023.checkpoint")
    assert from_snapshot["offset"] == 8930
    from_segment = run_json(capsys, part / "00000000000000000000.log")
    assert from_segment["topics"][0]["partitions"][0]["directories"] == ["uqILiACavwjFzy-6zrtdOw"]
    boot = run_json(capsys, samples_dir / "otus_kafka_HW02_d9e6ebb" / "bootstrap.checkpoint")
    assert boot["features"]["metadata.version"] == 20


def test_corrupt_input_is_a_one_line_error(
    samples_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = copy_sample(samples_dir / "LDI-POC_16c4da1", tmp_path / "ldi")
    seg = root / "__cluster_metadata-0" / "00000000000000000000.log"
    data = bytearray(seg.read_bytes())
    data[len(data) // 2] ^= 0x01
    seg.write_bytes(bytes(data))
    assert main(["metadata", "image", str(root)]) == 2
    err = capsys.readouterr().err
    assert "00000000000000000000.log" in err and "file position" in err
    assert main(["metadata", "image", str(tmp_path / "missing")]) == 2


def test_the_installed_command(samples_dir: Path) -> None:
    exe = Path(sys.executable).parent / "kraftpy"
    out = subprocess.run(
        [str(exe), "metadata", "image", str(samples_dir / "LDI-POC_16c4da1"), "--json"],
        check=True,
        capture_output=True,
        text=True,
    )
    assert LDI_DIR in json.loads(out.stdout)["topics"][0]["partitions"][0]["directories"]
