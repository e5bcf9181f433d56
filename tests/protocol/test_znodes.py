"""Every znode kraftpy writes, compared with the bytes real Kafka 3.x clusters hold (as zookeeper-shell
prints them), and decoding that refuses anything else with one error."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol import znodes as z
from protocol.uuid import Uuid


def test_cluster_id() -> None:
    raw = b'{"version":"1","id":"eQzK4lYlQ9y8P21IScOl_g"}'
    assert z.ClusterIdZnode("eQzK4lYlQ9y8P21IScOl_g").to_bytes() == raw
    assert z.ClusterIdZnode.from_bytes(raw).id == "eQzK4lYlQ9y8P21IScOl_g"


def test_controller_and_its_epoch() -> None:
    raw = b'{"version":2,"brokerid":1,"timestamp":"1704032949256","kraftControllerEpoch":-1}'
    node = z.ControllerZnode(brokerid=1, timestamp="1704032949256")
    assert node.to_bytes() == raw
    assert z.ControllerZnode.from_bytes(raw) == node
    assert (
        z.ControllerZnode.from_bytes(b'{"version":1,"brokerid":2,"timestamp":"1673382716473"}').brokerid == 2
    )
    assert z.encode_controller_epoch(7) == b"7" and z.decode_controller_epoch(b"7") == 7


def test_broker_registration_v5() -> None:
    raw = (
        b'{"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},'
        b'"endpoints":["PLAINTEXT://server1:9092"],"jmx_port":-1,"port":9092,"host":"server1",'
        b'"version":5,"timestamp":"1704032948949"}'
    )
    node = z.BrokerIdZnode(
        host="server1",
        port=9092,
        endpoints=["PLAINTEXT://server1:9092"],
        listener_security_protocol_map={"PLAINTEXT": "PLAINTEXT"},
        timestamp="1704032948949",
    )
    assert node.to_bytes() == raw
    assert z.BrokerIdZnode.from_bytes(raw) == node


def test_topic_v3_and_partition_state() -> None:
    raw = (
        b'{"partitions":{"0":[2,3,1],"1":[3,1,2],"2":[1,2,3]},"topic_id":"cMr3GpVESX2L3byPGf93lQ",'
        b'"adding_replicas":{},"removing_replicas":{},"version":3}'
    )
    topic = z.TopicZnode(
        {0: [2, 3, 1], 1: [3, 1, 2], 2: [1, 2, 3]}, Uuid.from_string("cMr3GpVESX2L3byPGf93lQ")
    )
    assert topic.to_bytes() == raw
    assert z.TopicZnode.from_bytes(raw) == topic
    old = z.TopicZnode.from_bytes(
        b'{"version":2,"partitions":{"0":[0]},"adding_replicas":{},"removing_replicas":{}}'
    )
    assert old.partitions == {0: [0]} and old.topic_id is None

    state = b'{"controller_epoch":1,"leader":2,"version":1,"leader_epoch":0,"isr":[2,3,1]}'
    ps = z.PartitionStateZnode(leader=2, leader_epoch=0, controller_epoch=1, isr=[2, 3, 1])
    assert ps.to_bytes() == state
    assert z.PartitionStateZnode.from_bytes(state) == ps
    recovering = z.PartitionStateZnode(2, 1, 1, [2], leader_recovery_state=1)
    assert z.PartitionStateZnode.from_bytes(recovering.to_bytes()) == recovering


def test_kip112_log_dir_event_and_the_others() -> None:
    assert z.LogDirEventZnode(broker=3).to_bytes() == b'{"version":1,"broker":3,"event":1}'
    assert z.log_dir_event_path(12) == "/log_dir_event_notification/log_dir_event_0000000012"
    assert z.TopicConfigZnode({"min.insync.replicas": "2"}).to_bytes() == (
        b'{"version":1,"config":{"min.insync.replicas":"2"}}'
    )
    assert z.ConfigChangeZnode("topics/foo").to_bytes() == b'{"version":2,"entity_path":"topics/foo"}'
    block = z.ProducerIdBlockZnode(broker=1, block_start=0, block_end=999)
    assert block.to_bytes() == b'{"version":1,"broker":1,"block_start":"0","block_end":"999"}'
    assert z.ProducerIdBlockZnode.from_bytes(block.to_bytes()) == block


@pytest.mark.parametrize(
    ("kind", "raw"),
    [
        (z.PartitionStateZnode, b"{not json"),
        (z.PartitionStateZnode, b'{"controller_epoch":1,"leader":"2","version":1,"leader_epoch":0,"isr":[]}'),
        (z.PartitionStateZnode, b'{"controller_epoch":1,"leader":2,"version":9,"leader_epoch":0,"isr":[]}'),
        (z.LogDirEventZnode, b'{"version":1,"broker":3,"event":2}'),
        (z.LogDirEventZnode, b"\xff\xfe"),
        (z.TopicZnode, b'{"version":3,"partitions":{"x":[1]}}'),
        (z.TopicZnode, b'{"version":3,"partitions":{"0":[1]},"topic_id":"short"}'),
        (z.BrokerIdZnode, b"[1,2]"),
        (z.ClusterIdZnode, b'{"version":1,"id":"x"}'),
    ],
)
def test_bad_znodes_are_one_clear_error(kind: type, raw: bytes) -> None:
    with pytest.raises(z.ZnodeDecodeError):
        kind.from_bytes(raw)


@given(st.binary(max_size=200))
def test_random_bytes_never_raise_anything_else(raw: bytes) -> None:
    for kind in (z.PartitionStateZnode, z.TopicZnode, z.BrokerIdZnode, z.LogDirEventZnode, z.ControllerZnode):
        try:
            kind.from_bytes(raw)
        except z.ZnodeDecodeError:
            pass
