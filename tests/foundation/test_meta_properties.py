"""meta.properties v0/v1: parse, validate, write atomically."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kraftpy.storage import (
    MetaProperties,
    MetaPropertiesError,
    MetaPropertiesVersion,
    atomic_write,
    read_meta_properties,
    write_meta_properties,
)
from kraftpy.storage.meta_properties import parse_meta_properties
from protocol.uuid import Uuid


def test_v1_round_trip(tmp_path: Path) -> None:
    d = Uuid.random()
    meta = MetaProperties(MetaPropertiesVersion.V1, "MkU3OEVBNTcwNTJENDM2Qg", 3, d)
    write_meta_properties(tmp_path, meta)
    text = (tmp_path / "meta.properties").read_text()
    lines = text.splitlines()
    assert lines[0] == "#" and lines[1].startswith("#")
    assert lines[2:] == ["node.id=3", f"directory.id={d}", "version=1", "cluster.id=MkU3OEVBNTcwNTJENDM2Qg"]
    assert read_meta_properties(tmp_path) == meta
    assert not (tmp_path / "meta.properties.tmp").exists()


def test_v0_with_implicit_version() -> None:
    meta = parse_meta_properties("broker.id=5\ncluster.id=abc\n")
    assert meta.version is MetaPropertiesVersion.V0
    assert meta.node_id == 5 and meta.cluster_id == "abc" and meta.directory_id is None
    assert meta.to_properties() == {"broker.id": "5", "version": "0", "cluster.id": "abc"}
    assert parse_meta_properties("").version is MetaPropertiesVersion.V0


@pytest.mark.parametrize(
    "text,message",
    [
        ("version=2\n", "Unknown meta.properties version number 2"),
        ("version=x\n", "Invalid meta.properties version string"),
        ("version=1\nnode.id=1\n", "cluster.id was not found."),
        ("version=1\ncluster.id=c\n", "node.id was not found."),
        ("version=1\ncluster.id=c\nnode.id=z\n", "Failed to parse node.id"),
        ("version=1\ncluster.id=c\nnode.id=1\ndirectory.id=nope\n", "Unable to read directory.id as a Uuid"),
    ],
)
def test_parse_errors(text: str, message: str) -> None:
    with pytest.raises(MetaPropertiesError, match=message):
        parse_meta_properties(text)


def test_reads_real_kafka_files(samples_dir: Path) -> None:
    found = sorted(samples_dir.glob("*/meta.properties"))
    assert found
    for f in found:
        meta = read_meta_properties(f.parent)
        assert meta.version is MetaPropertiesVersion.V1 and meta.node_id == 1 and meta.cluster_id


def test_missing_file_is_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_meta_properties(tmp_path)


def test_atomic_write_replaces_and_cleans_up(tmp_path: Path) -> None:
    target = tmp_path / "f"
    atomic_write(target, b"old")
    atomic_write(target, b"new")
    assert target.read_bytes() == b"new"
    assert sorted(os.listdir(tmp_path)) == ["f"]


def test_atomic_write_failure_leaves_old_content_and_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "f"
    target.mkdir()
    (target / "keep").write_text("x")  # renaming a file over a non-empty dir fails
    with pytest.raises(OSError):
        atomic_write(target, b"new")
    assert (target / "keep").read_text() == "x"
    assert not (tmp_path / "f.tmp").exists()
