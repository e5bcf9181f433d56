"""ZooKeeper mode beyond KIP-112's three scenarios, on real loop-device filesystems and a real ZooKeeper:
the controller dying while it handles a dir failure, a broker whose ZooKeeper session expires, and the
znodes it all leaves behind, compared field by field with what Kafka writes."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from tests.system.helpers import dir_index_of, more_acks, start_traffic, validate_clients
from tools.cluster.cluster import LocalCluster
from tools.cluster.launcher import run_kraftpy

pytestmark = [pytest.mark.system, pytest.mark.real, pytest.mark.slow]

TOPIC = "zk_topic"
WAIT_S = 60.0


def _zk(cluster: LocalCluster, *args: str) -> str:
    return run_kraftpy("zk", "--zookeeper", cluster.state.zookeeper or "", *args).stdout


def _zk_json(cluster: LocalCluster, path: str) -> dict[str, object]:
    return json.loads(_zk(cluster, "get", path))


def _controller(cluster: LocalCluster, other_than: int | None = None) -> int:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        c = cluster.zk_controller()
        if c is not None and c.node_id != other_than:
            return c.node_id
        time.sleep(0.1)
    raise AssertionError(f"no ZooKeeper-mode controller other than {other_than}")


def test_the_controller_dies_while_a_dir_failure_is_handled(make_cluster, tmp_path: Path) -> None:
    cluster = make_cluster(brokers=3, dirs=2, zookeeper=True)
    cluster.create_topic(TOPIC, 1, 3, configs={"min.insync.replicas": "1"})
    producer = start_traffic(cluster, TOPIC, tmp_path / "acks.txt")
    controller = _controller(cluster)
    view = cluster.view(probe=False)
    p = view.partition(TOPIC, 0)
    victim = next(b for b in p.replicas if b != controller)
    bad = dir_index_of(view, TOPIC, 0, victim)

    cluster.fail_dir(victim, bad)
    cluster.stop_broker(controller, kill=True)
    new_controller = _controller(cluster, other_than=controller)
    survivor = next(b for b in p.replicas if b not in (controller, victim))
    cluster.wait_until(
        lambda v: (
            (q := v.partition(TOPIC, 0)).leader == survivor and victim in q.offline and victim not in q.isr
        ),
        WAIT_S,
        "leadership on the one replica left, the failed one offline",
    )
    # The new controller read the notification (or learnt the same from its full LeaderAndIsr) and
    # removed it.
    deadline = time.monotonic() + WAIT_S
    while _zk(cluster, "ls", "/log_dir_event_notification").strip() != "[]":
        assert time.monotonic() < deadline, "log dir event notifications were never consumed"
        time.sleep(0.2)
    assert new_controller in (victim, survivor)
    more_acks(producer, 50)
    validate_clients(cluster, TOPIC, producer)


def test_a_broker_whose_session_expires_is_dead_until_it_registers_again(
    make_cluster, tmp_path: Path
) -> None:
    cluster = make_cluster(brokers=3, dirs=2, zookeeper=True)
    cluster.create_topic(TOPIC, 1, 3, configs={"min.insync.replicas": "1"})
    producer = start_traffic(cluster, TOPIC, tmp_path / "acks.txt")
    controller = _controller(cluster)
    leader = cluster.view(probe=False).partition(TOPIC, 0).leader
    frozen = (
        leader
        if leader != controller
        else next(b.node_id for b in cluster.brokers if b.node_id != controller)
    )
    pid = cluster.process_state(cluster.broker(frozen).name)[0]
    assert pid is not None
    name = cluster.broker(frozen).name

    def epoch() -> int:
        return int(cluster.health([name])[name]["body"]["broker_epoch"])

    before = epoch()

    os.kill(pid, signal.SIGSTOP)  # no heartbeats: ZooKeeper expires the session
    try:
        cluster.wait_until(
            lambda v: (q := v.partition(TOPIC, 0)).leader not in (-1, frozen) and frozen not in q.isr,
            WAIT_S,
            f"broker {frozen} treated as dead",
        )
        assert str(frozen) not in _zk(cluster, "ls", "/brokers/ids")
    finally:
        os.kill(pid, signal.SIGCONT)
    cluster.wait_until(
        lambda v: frozen in v.partition(TOPIC, 0).isr,
        WAIT_S,
        f"broker {frozen} back in the ISR after registering",
    )
    assert epoch() > before  # a new registration: a new czxid, a new broker epoch
    more_acks(producer, 50)
    validate_clients(cluster, TOPIC, producer)


def test_znodes_are_kafkas(make_cluster) -> None:
    cluster = make_cluster(brokers=2, dirs=2, zookeeper=True)
    cluster.create_topic(TOPIC, 2, 2)
    broker = cluster.broker(1)
    reg = _zk_json(cluster, "/brokers/ids/1")
    assert list(reg) == [
        "features",
        "listener_security_protocol_map",
        "endpoints",
        "jmx_port",
        "port",
        "host",
        "version",
        "timestamp",
    ]
    assert reg["version"] == 5 and reg["endpoints"] == [f"PLAINTEXT://{broker.bootstrap}"]
    assert reg["listener_security_protocol_map"] == {"PLAINTEXT": "PLAINTEXT"} and reg["jmx_port"] == -1
    assert isinstance(reg["timestamp"], str) and reg["features"] == {}

    controller = _zk_json(cluster, "/controller")
    assert list(controller) == ["version", "brokerid", "timestamp", "kraftControllerEpoch"]
    assert controller["version"] == 2 and controller["kraftControllerEpoch"] == -1
    assert int(_zk(cluster, "get", "/controller_epoch")) >= 1
    cluster_id = _zk_json(cluster, "/cluster/id")
    assert cluster_id == {"version": "1", "id": cluster.state.cluster_id}

    topic = _zk_json(cluster, f"/brokers/topics/{TOPIC}")
    assert list(topic) == ["partitions", "topic_id", "adding_replicas", "removing_replicas", "version"]
    assert topic["version"] == 3 and sorted(topic["partitions"]) == ["0", "1"]  # type: ignore[arg-type]
    state = _zk_json(cluster, f"/brokers/topics/{TOPIC}/partitions/0/state")
    assert list(state) == ["controller_epoch", "leader", "version", "leader_epoch", "isr"]
    assert _zk_json(cluster, f"/config/topics/{TOPIC}") == {"version": 1, "config": {}}
    # Every broker's dirs carry meta.properties version 0: broker.id and cluster.id, no directory.id.
    for b in cluster.brokers:
        for d in b.log_dirs:
            text = Path(d.path, "meta.properties").read_text()
            props = dict(
                line.split("=", 1) for line in text.splitlines() if "=" in line and not line.startswith("#")
            )
            assert props == {
                "broker.id": str(b.node_id),
                "version": "0",
                "cluster.id": cluster.state.cluster_id,
            }
