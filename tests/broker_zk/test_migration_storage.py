"""A ZooKeeper broker's dirs when it is configured for a migration (KIP-858; field bugs 22, 23, 27)."""

from __future__ import annotations

from pathlib import Path

from broker.zk.migration import is_kraft_controller, migration_config_problem, migration_configured
from broker.zk.storage import load_zk_broker_dirs
from kraftpy.config import KafkaConfig
from kraftpy.storage import MetaPropertiesVersion
from kraftpy.storage.meta_properties import read_meta_properties

CLUSTER = "MRxngbOiRYuudE8ZvxAhag"


def config(dirs: list[Path], **extra: str) -> KafkaConfig:
    props = {
        "broker.id": "1",
        "zookeeper.connect": "127.0.0.1:2181",
        "listeners": "PLAINTEXT://127.0.0.1:9092",
        "log.dirs": ",".join(str(d) for d in dirs),
        **extra,
    }
    return KafkaConfig.from_properties(props)


MIGRATION = {
    "zookeeper.metadata.migration.enable": "true",
    "controller.quorum.voters": "3000@127.0.0.1:9093",
    "controller.listener.names": "CONTROLLER",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
}


def test_a_plain_zookeeper_broker_writes_no_directory_id(tmp_path: Path) -> None:
    dirs = [tmp_path / "d0", tmp_path / "d1"]
    loaded = load_zk_broker_dirs(config(dirs), CLUSTER)
    assert len(loaded.log_dirs) == 2
    for d in dirs:
        meta = read_meta_properties(d)
        assert meta.version is MetaPropertiesVersion.V0 and meta.directory_id is None


def test_migration_gives_every_dir_a_directory_id_and_keeps_version_0(tmp_path: Path) -> None:
    dirs = [tmp_path / "d0", tmp_path / "d1"]
    load_zk_broker_dirs(config(dirs), CLUSTER)  # born in ZooKeeper mode
    cfg = config(dirs, **MIGRATION)
    assert migration_configured(cfg) and migration_config_problem(cfg) is None
    loaded = load_zk_broker_dirs(cfg, CLUSTER, migrating=True)
    ids = {}
    for d in dirs:
        meta = read_meta_properties(d)
        assert meta.version is MetaPropertiesVersion.V0
        assert meta.directory_id is not None and meta.node_id == 1 and meta.cluster_id == CLUSTER
        ids[str(d)] = meta.directory_id
    assert dict(loaded.log_dirs) == ids
    again = load_zk_broker_dirs(cfg, CLUSTER, migrating=True)
    assert dict(again.log_dirs) == ids, "a restart keeps the ids it wrote"


def test_migration_deletes_a_local_metadata_log_in_whichever_dir_holds_it(tmp_path: Path) -> None:
    """Field bugs 23 and 27: a migration attempted again after a rollback starts without the old
    metadata log, and it may sit in any JBOD dir (or a separate metadata.log.dir)."""
    dirs = [tmp_path / "d0", tmp_path / "d1"]
    meta_dir = tmp_path / "meta"
    for d in (dirs[1], meta_dir):
        (d / "__cluster_metadata-0").mkdir(parents=True)
        (d / "__cluster_metadata-0" / "00000000000000000000.log").write_bytes(b"old")
    (dirs[0] / "orders-0").mkdir(parents=True)
    cfg = config(dirs, **MIGRATION, **{"metadata.log.dir": str(meta_dir)})
    load_zk_broker_dirs(cfg, CLUSTER, migrating=True)
    assert not (dirs[1] / "__cluster_metadata-0").exists()
    assert not (meta_dir / "__cluster_metadata-0").exists()
    assert (dirs[0] / "orders-0").is_dir(), "partition logs stay"


def test_what_a_migrating_broker_needs_and_who_its_controller_is(tmp_path: Path) -> None:
    dirs = [tmp_path / "d0"]
    no_voters = config(dirs, **{"zookeeper.metadata.migration.enable": "true"})
    assert not migration_configured(no_voters)
    assert "controller.quorum.voters" in (migration_config_problem(no_voters) or "")
    cfg = config(dirs, **MIGRATION)
    assert is_kraft_controller(cfg, 3000)
    assert not is_kraft_controller(cfg, 1), "a broker id names a ZooKeeper-mode controller"
    assert not is_kraft_controller(cfg, -1)
