"""Loading a node's set of dirs, and the startup checks (KafkaRaftServer.initializeLogDirs)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kraftpy.config import KafkaConfig
from kraftpy.storage import (
    EnsembleError,
    MetaProperties,
    MetaPropertiesEnsemble,
    VerificationFlag,
    initialize_log_dirs,
    read_meta_properties,
    write_meta_properties,
)
from protocol.uuid import UNASSIGNED, Uuid

CLUSTER = "MkU3OEVBNTcwNTJENDM2Qg"


def _cfg(tmp_path: Path, n: int = 3, node_id: int = 1) -> KafkaConfig:
    dirs = [str(tmp_path / f"d{i}") for i in range(n)]
    return KafkaConfig.from_properties(
        {
            "process.roles": "broker",
            "node.id": str(node_id),
            "controller.listener.names": "CONTROLLER",
            "log.dirs": ",".join(dirs),
            "metadata.log.dir": str(tmp_path / "meta"),
        }
    )


def _format(
    dirs: list[str], cluster: str = CLUSTER, node_id: int = 1, with_ids: bool = True
) -> dict[str, Uuid]:
    ids = {}
    for d in dirs:
        Path(d).mkdir(parents=True, exist_ok=True)
        ids[d] = Uuid.random()
        write_meta_properties(
            d, MetaProperties(cluster_id=cluster, node_id=node_id, directory_id=ids[d] if with_ids else None)
        )
    return ids


def test_buckets(tmp_path: Path) -> None:
    good, empty, missing, bad, unreadable = (
        str(tmp_path / n) for n in ("good", "empty", "missing", "bad", "unreadable")
    )
    _format([good])
    Path(empty).mkdir()
    Path(bad).mkdir()
    (Path(bad) / "meta.properties").write_text("version=7\n")
    (Path(unreadable) / "meta.properties").mkdir(parents=True)  # reading it fails with an I/O error
    e = MetaPropertiesEnsemble.load([good, empty, missing, bad, unreadable])
    assert set(e.log_dir_props) == {good}
    assert e.empty_log_dirs == {empty, missing}
    assert set(e.error_log_dirs) == {bad, unreadable}
    assert "Unknown meta.properties version number 7" in e.error_log_dirs[bad]


def test_verify_cluster_and_node_mismatch_name_the_dir(tmp_path: Path) -> None:
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    _format([a])
    _format([b], cluster="other")
    e = MetaPropertiesEnsemble.load([a, b])
    with pytest.raises(
        EnsembleError, match=f"Invalid cluster.id in: {b}. Expected {CLUSTER}, but read other"
    ):
        e.verify(None, None)
    with pytest.raises(EnsembleError, match=f"Invalid cluster.id in: {a}"):
        e.verify("expected", None)
    _format([b], node_id=2)
    e = MetaPropertiesEnsemble.load([a, b])
    with pytest.raises(EnsembleError, match=f"Stored node id 1 doesn't match previous node id 7 in {a}"):
        e.verify(None, 7)
    with pytest.raises(EnsembleError, match=f"Stored node id 2 doesn't match previous node id 1 in {b}"):
        e.verify(None, None)


def test_verify_duplicate_and_reserved_ids(tmp_path: Path) -> None:
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    dup = Uuid.random()
    for d in (a, b):
        Path(d).mkdir()
        write_meta_properties(d, MetaProperties(cluster_id=CLUSTER, node_id=1, directory_id=dup))
    with pytest.raises(EnsembleError) as err:
        MetaPropertiesEnsemble.load([a, b]).verify(None, None)
    assert f"Duplicate directory ID {dup} found. It was the ID of {a}, but also of {b}" == str(err.value)
    write_meta_properties(b, MetaProperties(cluster_id=CLUSTER, node_id=1, directory_id=UNASSIGNED))
    with pytest.raises(EnsembleError, match=f"reserved directory ID {UNASSIGNED} found in {b}"):
        MetaPropertiesEnsemble.load([a, b]).verify(None, None)


def test_verify_flags(tmp_path: Path) -> None:
    with pytest.raises(EnsembleError, match=re.escape("No readable meta.properties files found.")):
        MetaPropertiesEnsemble.load([str(tmp_path)]).verify(
            None, None, {VerificationFlag.REQUIRE_AT_LEAST_ONE_VALID}
        )
    with pytest.raises(EnsembleError, match="No metadata log directory"):
        MetaPropertiesEnsemble.load([str(tmp_path)]).verify(
            None, None, {VerificationFlag.REQUIRE_METADATA_LOG_DIR}
        )


def test_startup_all_formatted(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path)
    ids = _format(cfg.all_dirs)
    before = {d: (Path(d) / "meta.properties").read_bytes() for d in cfg.all_dirs}
    nd = initialize_log_dirs(cfg)
    assert nd.online == ids and nd.offline == {}
    assert nd.cluster_id == CLUSTER and nd.node_id == 1
    assert nd.metadata_directory_id == ids[str(tmp_path / "meta")]
    assert nd.sorted_online_ids(cfg) == sorted(ids[d] for d in cfg.log_dir_list)
    assert {
        d: (Path(d) / "meta.properties").read_bytes() for d in cfg.all_dirs
    } == before  # nothing rewritten


def test_startup_generates_and_persists_missing_directory_ids(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path)
    ids = _format(cfg.all_dirs)
    no_id = cfg.log_dir_list[1]
    write_meta_properties(no_id, MetaProperties(cluster_id=CLUSTER, node_id=1))
    nd = initialize_log_dirs(cfg)
    new = nd.online[no_id]
    assert new not in {v for d, v in ids.items() if d != no_id} and not new.is_reserved()
    assert read_meta_properties(no_id).directory_id == new
    assert initialize_log_dirs(cfg).online[no_id] == new  # stable from then on


def test_startup_refuses_duplicate_ids_naming_both(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path)
    _format(cfg.all_dirs)
    a, b = cfg.log_dir_list[0], cfg.log_dir_list[2]
    write_meta_properties(b, read_meta_properties(a))
    with pytest.raises(EnsembleError) as err:
        initialize_log_dirs(cfg)
    assert a in str(err.value) and b in str(err.value)


def test_startup_refuses_node_id_other_than_config(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path, node_id=4)
    _format(cfg.all_dirs)
    with pytest.raises(EnsembleError, match="Stored node id 1 doesn't match previous node id 4"):
        initialize_log_dirs(cfg)


def test_startup_refuses_a_dir_of_another_cluster(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path)
    _format(cfg.all_dirs)
    other = cfg.log_dir_list[2]
    _format([other], cluster="AnotherClusterAAAAAAAA")
    with pytest.raises(EnsembleError, match=f"Invalid cluster.id in: {other}"):
        initialize_log_dirs(cfg)


def test_startup_unreadable_dir_is_offline_not_a_crash(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path)
    ids = _format(cfg.all_dirs)
    broken = cfg.log_dir_list[1]
    (Path(broken) / "meta.properties").unlink()
    (Path(broken) / "meta.properties").mkdir()
    nd = initialize_log_dirs(cfg)
    assert broken in nd.offline and broken not in nd.online
    assert set(nd.online) == set(ids) - {broken}
    assert ids[broken] not in nd.sorted_online_ids(cfg)


def test_startup_unreadable_metadata_dir_stops(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path)
    _format(cfg.all_dirs)
    meta = Path(cfg.metadata_log_dir_path)
    (meta / "meta.properties").write_text("version=1\n")
    with pytest.raises(EnsembleError, match="I/O error in metadata log directory"):
        initialize_log_dirs(cfg)


def test_startup_refuses_unformatted_dir(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path)
    _format(cfg.all_dirs[:-1])
    with pytest.raises(EnsembleError, match=re.escape("No `meta.properties` found in")):
        initialize_log_dirs(cfg)


def test_startup_refuses_metadata_partition_in_a_data_dir(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path)
    _format(cfg.all_dirs)
    (Path(cfg.log_dir_list[0]) / "__cluster_metadata-0").mkdir()
    with pytest.raises(EnsembleError, match="Found unexpected metadata location"):
        initialize_log_dirs(cfg)
