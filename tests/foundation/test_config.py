"""Kafka-style server config: names, defaults, types, errors naming key and file, helpers."""

from __future__ import annotations

from pathlib import Path

import pytest
import structlog

from kraftpy.config import ConfigError, KafkaConfig, ListenerSpec, QuorumVoter, load_config

BASE = """\
process.roles=broker,controller
node.id=1
listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://:9093
controller.listener.names=CONTROLLER
controller.quorum.voters=1@127.0.0.1:9093,2@[::1]:9094
log.dirs=/data/a, /data/b ,/data/c
metadata.log.dir=/data/meta
"""


def _write(tmp_path: Path, text: str) -> Path:
    f = tmp_path / "server.properties"
    f.write_text(text)
    return f


def test_kafka_defaults() -> None:
    cfg = KafkaConfig.from_properties({})
    expect = {
        "process.roles": [],
        "node.id": -1,
        "broker.heartbeat.interval.ms": 2000,
        "broker.session.timeout.ms": 9000,
        "log.dir.failure.timeout.ms": 30000,
        "initial.broker.registration.timeout.ms": 60000,
        "num.partitions": 1,
        "default.replication.factor": 1,
        "min.insync.replicas": 1,
        "replica.lag.time.max.ms": 30000,
        "unclean.leader.election.enable": False,
        "metadata.log.segment.bytes": 1073741824,
        "metadata.max.idle.interval.ms": 500,
        "metadata.log.max.record.bytes.between.snapshots": 20971520,
        "metadata.log.max.snapshot.interval.ms": 3600000,
        "metadata.max.retention.bytes": 104857600,
        "metadata.max.retention.ms": 604800000,
        "log.segment.bytes": 1073741824,
        "log.retention.bytes": -1,
        "log.dir.probe.interval.ms": 1000,
        "kraftpy.leader.tail.max.bytes": 33554432,
        "log.dir": "/tmp/kafka-logs",
        "controller.quorum.voters": [],
    }
    for key, value in expect.items():
        assert cfg.get(key) == value, key
    assert cfg.log_dir_list == ["/tmp/kafka-logs"]
    assert cfg.metadata_log_dir_path == "/tmp/kafka-logs"
    assert cfg.effective_log_roll_ms == 168 * 3600_000
    assert cfg.effective_log_retention_ms == 168 * 3600_000


def test_typed_attributes_and_kafka_names(tmp_path: Path) -> None:
    cfg = load_config(
        _write(tmp_path, BASE + "broker.heartbeat.interval.ms = 250\nunclean.leader.election.enable=TRUE\n")
    )
    assert cfg.broker_heartbeat_interval_ms == 250 == cfg.get("broker.heartbeat.interval.ms")
    assert cfg.unclean_leader_election_enable is True
    assert cfg.roles == {"broker", "controller"} and cfg.is_broker and cfg.is_controller and cfg.is_kraft
    assert cfg.log_dir_list == ["/data/a", "/data/b", "/data/c"]
    assert cfg.metadata_log_dir_path == "/data/meta"
    assert cfg.all_dirs == ["/data/a", "/data/b", "/data/c", "/data/meta"]
    assert cfg.source == str(tmp_path / "server.properties")
    with pytest.raises(KeyError):
        cfg.get("no.such.key")
    cfg.require_kraft()


def test_metadata_dir_defaults_to_first_log_dir(tmp_path: Path) -> None:
    cfg = load_config(_write(tmp_path, BASE.replace("metadata.log.dir=/data/meta\n", "")))
    assert cfg.metadata_log_dir_path == "/data/a"
    assert cfg.all_dirs == ["/data/a", "/data/b", "/data/c"]


def test_log_dir_used_when_log_dirs_unset() -> None:
    cfg = KafkaConfig.from_properties({"log.dir": "/x,/y"})
    assert cfg.log_dir_list == ["/x", "/y"]


def test_listener_and_voter_helpers(tmp_path: Path) -> None:
    cfg = load_config(_write(tmp_path, BASE))
    assert cfg.listener_list == [
        ListenerSpec("PLAINTEXT", "127.0.0.1", 9092),
        ListenerSpec("CONTROLLER", "", 9093),
    ]
    assert cfg.listener("controller").url == "http://127.0.0.1:9093"
    assert cfg.advertised_listener_list == [ListenerSpec("PLAINTEXT", "127.0.0.1", 9092)]
    assert cfg.quorum_voters == [QuorumVoter(1, "127.0.0.1", 9093), QuorumVoter(2, "::1", 9094)]
    assert cfg.controller_endpoint() == QuorumVoter(1, "127.0.0.1", 9093)
    assert cfg.controller_endpoint(2).url == "http://[::1]:9094"
    assert cfg.security_protocol("PLAINTEXT") == 0
    assert cfg.security_protocol("CONTROLLER") == 0
    with pytest.raises(ConfigError):
        cfg.controller_endpoint(9)


@pytest.mark.parametrize(
    "line,key",
    [
        ("node.id=one", "node.id"),
        ("node.id=99999999999", "node.id"),
        ("broker.heartbeat.interval.ms=2s", "broker.heartbeat.interval.ms"),
        ("unclean.leader.election.enable=yes", "unclean.leader.election.enable"),
        ("log.dir.failure.timeout.ms=0", "log.dir.failure.timeout.ms"),
        ("num.partitions=0", "num.partitions"),
        ("process.roles=broker,zookeeper", "process.roles"),
        ("listeners=PLAINTEXT:9092", "listeners"),
        ("controller.quorum.voters=1@host", "controller.quorum.voters"),
        ("controller.quorum.voters=x@host:1", "controller.quorum.voters"),
    ],
)
def test_bad_value_names_key_and_file(tmp_path: Path, line: str, key: str) -> None:
    f = _write(tmp_path, BASE + line + "\n")
    with pytest.raises(ConfigError) as e:
        load_config(f)
    assert key in str(e.value) and str(f) in str(e.value)


def test_unknown_key_is_a_warning_not_an_error(tmp_path: Path) -> None:
    with structlog.testing.capture_logs() as logs:
        cfg = load_config(_write(tmp_path, BASE + "no.such.setting=1\n"))
    assert cfg.originals["no.such.setting"] == "1"
    warnings = [entry for entry in logs if entry["log_level"] == "warning"]
    assert warnings and warnings[0]["key"] == "no.such.setting"
    assert warnings[0]["file"] == str(tmp_path / "server.properties")


def test_missing_file() -> None:
    with pytest.raises(ConfigError, match="/no/such/file"):
        load_config("/no/such/file")


def test_require_kraft(tmp_path: Path) -> None:
    for drop, word in (
        ("process.roles=broker,controller\n", r"process\.roles"),
        ("node.id=1\n", r"node\.id"),
        ("controller.listener.names=CONTROLLER\n", r"controller\.listener\.names"),
    ):
        cfg = load_config(_write(tmp_path, BASE.replace(drop, "")))
        with pytest.raises(ConfigError, match=word):
            cfg.require_kraft()
    cfg = load_config(_write(tmp_path, BASE.replace("node.id=1", "node.id=5")))
    with pytest.raises(ConfigError, match=r"controller\.quorum\.voters"):
        cfg.require_kraft()


def test_a_broker_may_not_take_a_voters_id(tmp_path: Path) -> None:
    cfg = load_config(
        _write(tmp_path, BASE.replace("process.roles=broker,controller", "process.roles=broker"))
    )
    with pytest.raises(ConfigError, match=r"only the broker role but is in controller\.quorum\.voters"):
        cfg.require_kraft()


def test_overrides_win(tmp_path: Path) -> None:
    cfg = load_config(_write(tmp_path, BASE), {"node.id": "2"})
    assert cfg.node_id == 2


def test_every_field_has_a_kafka_name() -> None:
    names = KafkaConfig.kafka_names()
    assert len(names) == len(KafkaConfig.model_fields)
    assert all("." in n or n == "listeners" for n in names)


def test_socket_request_max_bytes_is_kafkas_default_and_settable() -> None:
    assert KafkaConfig.from_properties({}).socket_request_max_bytes == 104857600
    assert KafkaConfig.from_properties({"socket.request.max.bytes": "1000"}).socket_request_max_bytes == 1000
