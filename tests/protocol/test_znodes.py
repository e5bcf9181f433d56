"""Every znode compared with the exact bytes Kafka 3.9 writes, and decoding that refuses anything else
with one error.

The expected strings are what ZkData.scala's encoders give on Kafka's Scala 2.13 build: each one was
produced by building the same Scala/Java maps ZkData builds and writing them with Jackson, so the
key orders (hash orders, not source orders) are Kafka's own.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol import znodes as z
from protocol.uuid import Uuid

TOPIC_ID = Uuid.from_string("cMr3GpVESX2L3byPGf93lQ")
TS = "1704032948949"

KAFKA_BYTES: list[tuple[str, Any, bytes]] = [
    (
        "cluster id",
        z.ClusterIdZnode("eQzK4lYlQ9y8P21IScOl_g"),
        b'{"version":"1","id":"eQzK4lYlQ9y8P21IScOl_g"}',
    ),
    (
        "controller",
        z.ControllerZnode(brokerid=1, timestamp="1704032949256"),
        b'{"version":2,"brokerid":1,"timestamp":"1704032949256","kraftControllerEpoch":-1}',
    ),
    (
        "controller held by a KRaft controller",
        z.ControllerZnode(brokerid=3000, timestamp="1704032949256", kraftControllerEpoch=7),
        b'{"version":2,"brokerid":3000,"timestamp":"1704032949256","kraftControllerEpoch":7}',
    ),
    ("controller epoch", z.ControllerEpochZnode(7), b"7"),
    (
        "broker",
        z.BrokerIdZnode(
            host="server1",
            port=9092,
            endpoints=["PLAINTEXT://server1:9092"],
            listener_security_protocol_map={"PLAINTEXT": "PLAINTEXT"},
            timestamp=TS,
        ),
        b'{"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},'
        b'"endpoints":["PLAINTEXT://server1:9092"],"jmx_port":-1,"port":9092,"host":"server1",'
        b'"version":5,"timestamp":"1704032948949"}',
    ),
    (
        "broker with a rack, five listeners and none of them PLAINTEXT",
        z.BrokerIdZnode(
            host=None,
            port=-1,
            endpoints=[
                "CLIENT://h1:9092",
                "REPLICATION://h1:9093",
                "EXTERNAL://e:9094",
                "INTERNAL://h1:9095",
                "CONTROLLER://h1:9096",
            ],
            listener_security_protocol_map={
                "CLIENT": "SASL_SSL",
                "REPLICATION": "PLAINTEXT",
                "EXTERNAL": "PLAINTEXT",
                "INTERNAL": "PLAINTEXT",
                "CONTROLLER": "PLAINTEXT",
            },
            timestamp=TS,
            rack="rack-a",
        ),
        b'{"features":{},"listener_security_protocol_map":{"REPLICATION":"PLAINTEXT","CLIENT":"SASL_SSL",'
        b'"INTERNAL":"PLAINTEXT","EXTERNAL":"PLAINTEXT","CONTROLLER":"PLAINTEXT"},'
        b'"endpoints":["CLIENT://h1:9092","REPLICATION://h1:9093","EXTERNAL://e:9094","INTERNAL://h1:9095",'
        b'"CONTROLLER://h1:9096"],"rack":"rack-a","jmx_port":-1,"port":-1,"host":null,"version":5,'
        b'"timestamp":"1704032948949"}',
    ),
    (
        "topic",
        z.TopicZnode({0: [1, 2, 3], 1: [1, 2, 3], 2: [1, 2, 3]}, TOPIC_ID),
        b'{"partitions":{"0":[1,2,3],"1":[1,2,3],"2":[1,2,3]},"topic_id":"cMr3GpVESX2L3byPGf93lQ",'
        b'"adding_replicas":{},"removing_replicas":{},"version":3}',
    ),
    (
        "topic of 12 partitions being reassigned",
        z.TopicZnode({p: [1, 2, 3] for p in range(12)}, TOPIC_ID, {1: [4]}, {1: [3]}),
        b'{"partitions":{"11":[1,2,3],"0":[1,2,3],"1":[1,2,3],"2":[1,2,3],"3":[1,2,3],"4":[1,2,3],'
        b'"5":[1,2,3],"6":[1,2,3],"7":[1,2,3],"8":[1,2,3],"9":[1,2,3],"10":[1,2,3]},'
        b'"topic_id":"cMr3GpVESX2L3byPGf93lQ","adding_replicas":{"1":[4]},"removing_replicas":{"1":[3]},'
        b'"version":3}',
    ),
    (
        "topic without an id",
        z.TopicZnode({0: [1, 2, 3]}),
        b'{"partitions":{"0":[1,2,3]},"adding_replicas":{},"removing_replicas":{},"version":3}',
    ),
    (
        "partition state",
        z.PartitionStateZnode(leader=2, leader_epoch=0, controller_epoch=1, isr=[2, 3, 1]),
        b'{"controller_epoch":1,"leader":2,"version":1,"leader_epoch":0,"isr":[2,3,1]}',
    ),
    (
        "partition state while recovering",
        z.PartitionStateZnode(leader=2, leader_epoch=5, controller_epoch=1, isr=[2], leader_recovery_state=1),
        b'{"controller_epoch":1,"leader":2,"version":1,"leader_recovery_state":1,"leader_epoch":5,"isr":[2]}',
    ),
    ("log dir event", z.LogDirEventZnode(broker=3), b'{"version":1,"broker":3,"event":1}'),
    ("delete topic", z.DeleteTopicZnode(), b""),
    ("topic config, empty", z.EntityConfigZnode(), b'{"version":1,"config":{}}'),
    (
        "topic config",
        z.EntityConfigZnode(
            {
                "retention.ms": "1",
                "cleanup.policy": "1",
                "min.insync.replicas": "1",
                "segment.bytes": "1",
                "max.message.bytes": "1",
            }
        ),
        b'{"version":1,"config":{"cleanup.policy":"1","max.message.bytes":"1","min.insync.replicas":"1",'
        b'"retention.ms":"1","segment.bytes":"1"}}',
    ),
    ("config change", z.ConfigChangeZnode("topics/foo"), b'{"version":2,"entity_path":"topics/foo"}'),
    (
        "migration, initial",
        z.MigrationZnode(),
        b'{"version":0,"kraft_metadata_offset":-1,"kraft_controller_id":-1,"kraft_metadata_epoch":-1,'
        b'"kraft_controller_epoch":-1}',
    ),
    (
        "migration, done",
        z.MigrationZnode(3000, 1, 1234, 1),
        b'{"version":0,"kraft_metadata_offset":1234,"kraft_controller_id":3000,"kraft_metadata_epoch":1,'
        b'"kraft_controller_epoch":1}',
    ),
    (
        "producer id block",
        z.ProducerIdBlockZnode(broker=1, block_start=0, block_end=999),
        b'{"version":1,"broker":1,"block_start":"0","block_end":"999"}',
    ),
    ("feature", z.FeatureZnode(), b'{"features":{},"version":2,"status":1}'),
]


@pytest.mark.parametrize(
    ("node", "raw"), [(n, r) for _, n, r in KAFKA_BYTES], ids=[i for i, _, _ in KAFKA_BYTES]
)
def test_bytes_are_kafkas_and_read_back(node: Any, raw: bytes) -> None:
    assert node.to_bytes() == raw
    assert type(node).from_bytes(raw) == node


def test_many_partitions_come_in_scala_hash_order_not_numeric_order() -> None:
    raw = z.TopicZnode({p: [0] for p in range(50)}, TOPIC_ID).to_bytes()
    keys = list(json.loads(raw)["partitions"])
    assert keys[:8] == ["44", "45", "46", "47", "48", "49", "10", "11"]
    assert sorted(keys, key=int) == [str(p) for p in range(50)]
    assert z.TopicZnode.from_bytes(raw).partitions == {p: [0] for p in range(50)}


def test_a_big_config_comes_in_properties_order() -> None:
    names = [
        "retention.ms",
        "cleanup.policy",
        "min.insync.replicas",
        "segment.bytes",
        "max.message.bytes",
        "compression.type",
        "unclean.leader.election.enable",
        "message.timestamp.type",
        "flush.ms",
        "index.interval.bytes",
        "segment.ms",
        "delete.retention.ms",
        "file.delete.delay.ms",
    ]
    raw = z.EntityConfigZnode(dict.fromkeys(names, "x")).to_bytes()
    assert list(json.loads(raw)["config"]) == [
        "compression.type",
        "file.delete.delay.ms",
        "max.message.bytes",
        "message.timestamp.type",
        "min.insync.replicas",
        "index.interval.bytes",
        "unclean.leader.election.enable",
        "delete.retention.ms",
        "cleanup.policy",
        "flush.ms",
        "retention.ms",
        "segment.bytes",
        "segment.ms",
    ]


def test_strings_are_escaped_as_jackson_escapes_them() -> None:
    raw = z.ClusterIdZnode('a"\\\n\x01é😀').to_bytes()
    assert raw == b'{"version":"1","id":"a\\"\\\\\\n\\u0001\xc3\xa9\\uD83D\\uDE00"}'
    assert z.ClusterIdZnode.from_bytes(raw).id == 'a"\\\n\x01é😀'


def test_older_versions_kafka_wrote_still_read() -> None:
    v1 = z.ControllerZnode.from_bytes(b'{"version":1,"brokerid":2,"timestamp":"1673382716473"}')
    assert v1 == z.ControllerZnode(2, "1673382716473", -1)
    old_topic = z.TopicZnode.from_bytes(
        b'{"version":2,"partitions":{"0":[0]},"adding_replicas":{},"removing_replicas":{}}'
    )
    assert old_topic == z.TopicZnode({0: [0]})
    assert z.TopicZnode.from_bytes(b'{"version":1,"partitions":{"0":[0,1]}}').partitions == {0: [0, 1]}
    v4 = z.BrokerIdZnode.from_bytes(
        b'{"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},"endpoints":["PLAINTEXT://h:9092"],'
        b'"rack":"r","jmx_port":9999,"host":"h","timestamp":"1","port":9092,"version":4}'
    )
    assert (v4.version, v4.rack, v4.jmx_port, v4.features) == (4, "r", 9999, {})
    v1_broker = z.BrokerIdZnode.from_bytes(
        b'{"version":1,"host":"h","port":9092,"jmx_port":-1,"timestamp":"1"}'
    )
    assert v1_broker.endpoints == ["PLAINTEXT://h:9092"]
    assert z.ConfigChangeZnode.from_bytes(
        b'{"version":1,"entity_type":"topics","entity_name":"foo"}'
    ) == z.ConfigChangeZnode("topics/foo")


def test_broker_features_and_older_versions_round_trip() -> None:
    node = z.BrokerIdZnode(
        "h", 9092, ["PLAINTEXT://h:9092"], {"PLAINTEXT": "PLAINTEXT"}, "1", features={"f": (1, 3)}
    )
    raw = node.to_bytes()
    assert json.loads(raw)["features"] == {"f": {"min_version": 1, "max_version": 3}}
    assert z.BrokerIdZnode.from_bytes(raw) == node
    v4 = z.BrokerIdZnode(
        "h", 9092, ["PLAINTEXT://h:9092"], {"PLAINTEXT": "PLAINTEXT"}, "1", rack="r", version=4
    )
    assert "features" not in json.loads(v4.to_bytes())
    assert z.BrokerIdZnode.from_bytes(v4.to_bytes()) == v4


def test_topic_reassignment_lists_only_name_partitions_of_the_topic() -> None:
    raw = (
        b'{"version":3,"partitions":{"0":[1,2]},"adding_replicas":{"0":[],"7":[3]},'
        b'"removing_replicas":{"0":[2]}}'
    )
    node = z.TopicZnode.from_bytes(raw)
    assert node == z.TopicZnode({0: [1, 2]}, None, {}, {0: [2]})
    assert json.loads(node.to_bytes())["adding_replicas"] == {}


def test_migration_and_producer_ids() -> None:
    assert not z.MigrationZnode().initial_migration_done
    assert z.MigrationZnode(3000, 1, 1234, 1).initial_migration_done
    big = z.ProducerIdBlockZnode(2, 2**40, 2**40 + 999)
    assert z.ProducerIdBlockZnode.from_bytes(big.to_bytes()) == big


def test_controller_epoch_is_bare_decimal_text() -> None:
    assert z.encode_controller_epoch(12) == b"12"
    assert z.decode_controller_epoch(b"12") == 12
    assert z.decode_controller_epoch(b"-1") == -1
    for bad in (b"", b" 7", b"7\n", b"1_0", b"0x10", b"2147483648", b"\xff", b'{"epoch":1}'):
        with pytest.raises(z.ZnodeDecodeError):
            z.decode_controller_epoch(bad)


def test_paths() -> None:
    assert z.broker_path(3) == "/brokers/ids/3"
    assert z.topic_path("foo") == "/brokers/topics/foo"
    assert z.partitions_path("foo") == "/brokers/topics/foo/partitions"
    assert z.partition_path("foo", 2) == "/brokers/topics/foo/partitions/2"
    assert z.partition_state_path("foo", 2) == "/brokers/topics/foo/partitions/2/state"
    assert z.topic_config_path("foo") == "/config/topics/foo"
    assert z.config_entity_path("users", "alice") == "/config/users/alice"
    assert z.delete_topic_path("foo") == "/admin/delete_topics/foo"
    assert z.log_dir_event_path(12) == "/log_dir_event_notification/log_dir_event_0000000012"
    assert z.config_change_path(3) == "/config/changes/config_change_0000000003"
    assert z.sequence_number("log_dir_event_0000000012", z.LOG_DIR_EVENT_PREFIX) == 12
    assert z.sequence_number("/config/changes/config_change_0000000003", z.CONFIG_CHANGE_PREFIX) == 3
    assert z.sequence_number("log_dir_event_", z.LOG_DIR_EVENT_PREFIX) is None
    assert z.sequence_number("other_0000000001", z.LOG_DIR_EVENT_PREFIX) is None
    assert (z.CONTROLLER, z.CONTROLLER_EPOCH, z.CLUSTER_ID, z.MIGRATION) == (
        "/controller",
        "/controller_epoch",
        "/cluster/id",
        "/migration",
    )
    assert (z.BROKER_IDS, z.TOPICS, z.DELETE_TOPICS, z.LOG_DIR_EVENT_NOTIFICATION) == (
        "/brokers/ids",
        "/brokers/topics",
        "/admin/delete_topics",
        "/log_dir_event_notification",
    )
    assert z.LOG_DIR_EVENT_PREFIX == "log_dir_event_"


def test_persistent_paths_are_kafkas_in_its_order() -> None:
    assert z.PERSISTENT_PATHS == (
        "/consumers",
        "/brokers/ids",
        "/brokers/topics",
        "/config/changes",
        "/admin/delete_topics",
        "/brokers/seqid",
        "/isr_change_notification",
        "/latest_producer_id_block",
        "/log_dir_event_notification",
        "/config/topics",
        "/config/clients",
        "/config/users",
        "/config/brokers",
        "/config/ips",
    )


BAD: list[tuple[type, bytes]] = [
    # not JSON, or not an object
    (z.PartitionStateZnode, b"{not json"),
    (z.PartitionStateZnode, b""),
    (z.BrokerIdZnode, b"[1,2]"),
    (z.TopicZnode, b'"text"'),
    (z.MigrationZnode, b"null"),
    (z.LogDirEventZnode, b'{"version":1,"broker":NaN,"event":1}'),
    (z.LogDirEventZnode, b"[" * 100_000),
    (
        z.ControllerZnode,
        b'{"version":2,"brokerid":1' + b"9" * 5000 + b',"timestamp":"1","kraftControllerEpoch":-1}',
    ),
    # not UTF-8, or text that cannot be written back
    (z.LogDirEventZnode, b"\xff\xfe"),
    (z.ClusterIdZnode, b'{"version":"1","id":"\xc3"}'),
    (z.ClusterIdZnode, b'{"version":"1","id":"\\ud800"}'),
    # wrong types
    (z.PartitionStateZnode, b'{"controller_epoch":1,"leader":"2","version":1,"leader_epoch":0,"isr":[]}'),
    (z.PartitionStateZnode, b'{"controller_epoch":1,"leader":2.0,"version":1,"leader_epoch":0,"isr":[]}'),
    (z.PartitionStateZnode, b'{"controller_epoch":1,"leader":true,"version":1,"leader_epoch":0,"isr":[]}'),
    (z.PartitionStateZnode, b'{"controller_epoch":1,"leader":2,"version":1,"leader_epoch":0,"isr":[1,"2"]}'),
    (z.PartitionStateZnode, b'{"controller_epoch":1,"leader":2,"version":1,"leader_epoch":0,"isr":{}}'),
    (z.PartitionStateZnode, b'{"controller_epoch":1,"leader":2,"version":1,"leader_epoch":0}'),
    (
        z.PartitionStateZnode,
        b'{"controller_epoch":1,"leader":2147483648,"version":1,"leader_epoch":0,"isr":[]}',
    ),
    (
        z.PartitionStateZnode,
        b'{"controller_epoch":1,"leader":2,"version":1,"leader_epoch":0,"isr":[],"leader_recovery_state":2}',
    ),
    (z.TopicZnode, b'{"version":3,"partitions":{"x":[1]}}'),
    (z.TopicZnode, b'{"version":3,"partitions":{"01":[1]}}'),
    (z.TopicZnode, b'{"version":3,"partitions":{"-1":[1]}}'),
    (z.TopicZnode, b'{"version":3,"partitions":[[1]]}'),
    (z.TopicZnode, b'{"version":3,"partitions":{"0":[1]},"topic_id":"short"}'),
    (z.TopicZnode, b'{"version":3,"partitions":{"0":[1]},"topic_id":7}'),
    (z.TopicZnode, b'{"version":3,"partitions":{"0":[1]},"adding_replicas":{"0":"1"}}'),
    (z.TopicZnode, b'{"version":3}'),
    (
        z.BrokerIdZnode,
        b'{"version":5,"host":"h","port":1,"endpoints":"PLAINTEXT://h:1","jmx_port":-1,"timestamp":"1"}',
    ),
    (z.BrokerIdZnode, b'{"version":5,"host":"h","port":1,"endpoints":[],"jmx_port":-1,"timestamp":1}'),
    (z.BrokerIdZnode, b'{"version":5,"host":"h","port":1,"endpoints":[],"timestamp":"1"}'),
    (z.BrokerIdZnode, b'{"version":5,"host":1,"port":1,"endpoints":[],"jmx_port":-1,"timestamp":"1"}'),
    (
        z.BrokerIdZnode,
        b'{"version":5,"host":"h","port":1,"endpoints":[],"jmx_port":-1,"timestamp":"1","rack":5}',
    ),
    (
        z.BrokerIdZnode,
        b'{"version":5,"host":"h","port":1,"endpoints":[],"jmx_port":-1,"timestamp":"1",'
        b'"listener_security_protocol_map":{"A":"TLS"}}',
    ),
    (
        z.BrokerIdZnode,
        b'{"version":5,"host":"h","port":1,"endpoints":[],"jmx_port":-1,"timestamp":"1","features":{"f":1}}',
    ),
    (z.ClusterIdZnode, b'{"version":1,"id":"x"}'),
    (z.ClusterIdZnode, b'{"version":"1","id":null}'),
    (z.ControllerZnode, b'{"version":2,"brokerid":1,"timestamp":1,"kraftControllerEpoch":-1}'),
    (z.ControllerZnode, b'{"version":2,"brokerid":1,"timestamp":"1"}'),
    (z.LogDirEventZnode, b'{"version":1,"broker":3,"event":2}'),
    (z.LogDirEventZnode, b'{"version":1,"broker":"3","event":1}'),
    (z.EntityConfigZnode, b'{"version":1,"config":{"retention.ms":1}}'),
    (z.EntityConfigZnode, b'{"version":1,"config":null}'),
    (z.ConfigChangeZnode, b'{"version":2,"entity_path":["topics","foo"]}'),
    (
        z.MigrationZnode,
        b'{"version":0,"kraft_controller_id":-1,"kraft_controller_epoch":-1,"kraft_metadata_epoch":-1}',
    ),
    (z.ProducerIdBlockZnode, b'{"version":1,"broker":1,"block_start":0,"block_end":"999"}'),
    (z.ProducerIdBlockZnode, b'{"version":1,"broker":1,"block_start":"0","block_end":"9e3"}'),
    (z.ProducerIdBlockZnode, b'{"version":1,"broker":1,"block_start":"0","block_end":"99999999999"}'),
    (z.FeatureZnode, b'{"features":{"f":{"max_version_level":0}},"version":2,"status":1}'),
    (z.FeatureZnode, b'{"features":{},"version":2,"status":5}'),
    # unknown versions
    (z.PartitionStateZnode, b'{"controller_epoch":1,"leader":2,"version":9,"leader_epoch":0,"isr":[]}'),
    (z.PartitionStateZnode, b'{"controller_epoch":1,"leader":2,"version":"1","leader_epoch":0,"isr":[]}'),
    (z.ControllerZnode, b'{"version":3,"brokerid":1,"timestamp":"1","kraftControllerEpoch":-1}'),
    (z.BrokerIdZnode, b'{"version":6,"host":"h","port":1,"endpoints":[],"jmx_port":-1,"timestamp":"1"}'),
    (z.BrokerIdZnode, b'{"version":0,"host":"h","port":1,"endpoints":[],"jmx_port":-1,"timestamp":"1"}'),
    (z.TopicZnode, b'{"version":4,"partitions":{}}'),
    (z.TopicZnode, b'{"partitions":{}}'),
    (z.LogDirEventZnode, b'{"version":2,"broker":3,"event":1}'),
    (z.EntityConfigZnode, b'{"version":2,"config":{}}'),
    (z.ConfigChangeZnode, b'{"version":3,"entity_path":"topics/foo"}'),
    (
        z.MigrationZnode,
        b'{"version":1,"kraft_controller_id":-1,"kraft_controller_epoch":-1,"kraft_metadata_offset":-1,"kraft_metadata_epoch":-1}',
    ),
    (z.ProducerIdBlockZnode, b'{"version":2,"broker":1,"block_start":"0","block_end":"999"}'),
    (z.FeatureZnode, b'{"features":{},"version":3,"status":1}'),
    (z.ClusterIdZnode, b'{"version":"2","id":"x"}'),
]


@pytest.mark.parametrize(("kind", "raw"), BAD, ids=[f"{k.__name__}-{i}" for i, (k, _) in enumerate(BAD)])
def test_bad_znodes_are_one_clear_error(kind: type, raw: bytes) -> None:
    with pytest.raises(z.ZnodeDecodeError) as e:
        kind.from_bytes(raw)
    assert isinstance(e.value, ValueError)
    assert "/brokers" not in str(e.value) and str(e.value)


def test_data_that_is_not_bytes_is_refused_the_same_way() -> None:
    with pytest.raises(z.ZnodeDecodeError):
        z.PartitionStateZnode.from_bytes("{}")  # type: ignore[arg-type]
    with pytest.raises(z.ZnodeDecodeError):
        z.ControllerEpochZnode.from_bytes(None)  # type: ignore[arg-type]


def test_delete_topic_marker_data_is_never_read() -> None:
    assert z.DeleteTopicZnode.from_bytes(b"") == z.DeleteTopicZnode()
    assert z.DeleteTopicZnode.from_bytes(b"anything") == z.DeleteTopicZnode()


KINDS: tuple[Any, ...] = (
    z.ClusterIdZnode,
    z.ControllerZnode,
    z.ControllerEpochZnode,
    z.BrokerIdZnode,
    z.TopicZnode,
    z.PartitionStateZnode,
    z.LogDirEventZnode,
    z.DeleteTopicZnode,
    z.EntityConfigZnode,
    z.ConfigChangeZnode,
    z.MigrationZnode,
    z.ProducerIdBlockZnode,
    z.FeatureZnode,
)


def _decode_or_refuse(raw: bytes) -> None:
    for kind in KINDS:
        try:
            kind.from_bytes(raw)
        except z.ZnodeDecodeError:
            pass


@given(st.binary(max_size=300))
def test_random_bytes_never_raise_anything_but_znode_decode_error(raw: bytes) -> None:
    _decode_or_refuse(raw)


_JSON_LEAF = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8)
_JSON = st.recursive(
    _JSON_LEAF,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
_KEYS = st.sampled_from(
    [
        "version", "id", "brokerid", "timestamp", "kraftControllerEpoch", "host", "port", "endpoints",
        "jmx_port", "rack", "listener_security_protocol_map", "features", "partitions", "topic_id",
        "adding_replicas", "removing_replicas", "leader", "leader_epoch", "controller_epoch", "isr",
        "leader_recovery_state", "broker", "event", "config", "entity_path", "entity_type", "entity_name",
        "kraft_controller_id", "kraft_controller_epoch", "kraft_metadata_offset", "kraft_metadata_epoch",
        "block_start", "block_end", "status", "0", "min_version", "max_version", "max_version_level",
    ]
)  # fmt: skip


@given(st.dictionaries(_KEYS, _JSON | st.integers(-1, 6) | st.sampled_from(["1", "0", "-1"]), max_size=10))
def test_json_objects_with_kafkas_keys_and_any_values_never_raise_anything_else(obj: dict[str, Any]) -> None:
    _decode_or_refuse(json.dumps(obj).encode())


@given(st.dictionaries(st.text(max_size=12), st.text(max_size=6), max_size=20))
def test_any_config_round_trips(config: dict[str, str]) -> None:
    node = z.EntityConfigZnode(config)
    assert z.EntityConfigZnode.from_bytes(node.to_bytes()) == node
