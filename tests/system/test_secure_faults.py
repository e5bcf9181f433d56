"""A secure cluster (`cluster up --secure`: TLS between nodes, SASL_SSL for clients, ACLs on) under
the faults of the plain one, on real loop-device disks:
- the dir under a leader fails while an idempotent acks=all producer runs as the SCRAM user: leadership
  moves and every acknowledged message is read back exactly once;
- an ACL added with `kraftpy acls` takes effect on every broker once replayed, and still holds after
  the controller restarts."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from kraftpy.properties import load_properties
from tests.support.processes import run_kraftpy
from tests.system.helpers import dir_index_of
from tools.cluster.cluster import LocalCluster

pytestmark = [pytest.mark.system, pytest.mark.real, pytest.mark.slow]

TOPIC = "ledger"
WAIT_S = 60.0


def client_config(cluster: LocalCluster, **more: Any) -> dict[str, Any]:
    """librdkafka's settings from the cluster's client.properties (SASL_SSL as the SCRAM user)."""
    return {**load_properties(cluster.security.client_properties), **more}


def admin(cluster: LocalCluster, *args: str, check: bool = True) -> Any:
    return run_kraftpy(
        "--command-config",
        str(cluster.security.admin_properties),
        *args,
        "--bootstrap-server",
        cluster.bootstrap_servers(),
        check=check,
    )


def _until(what: str, predicate: Callable[[], bool], timeout: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


class Producer:
    def __init__(self, cluster: LocalCluster) -> None:
        self.config = client_config(
            cluster,
            acks="all",
            **{"enable.idempotence": True, "linger.ms": 5, "delivery.timeout.ms": 120_000},
        )
        self.acked: list[str] = []
        self.failed: list[str] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run)

    def _run(self) -> None:
        from confluent_kafka import Producer as P

        p = P(self.config)

        def done(err: Any, msg: Any) -> None:
            (self.failed if err else self.acked).append(msg.value().decode())

        i = 0
        while not self.stop.is_set():
            p.produce(TOPIC, f"m-{i}".encode(), on_delivery=done)
            i += 1
            p.poll(0)
            time.sleep(0.002)
        assert p.flush(120) == 0


def read_all(cluster: LocalCluster) -> list[str]:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer(client_config(cluster, **{"group.id": "audit", "enable.auto.commit": False}))
    c.assign([TopicPartition(TOPIC, 0, 0)])
    out: list[str] = []
    quiet = time.monotonic()
    while time.monotonic() - quiet < 5:
        m = c.poll(0.5)
        if m is not None and not m.error():
            out.append(m.value().decode())
            quiet = time.monotonic()
    c.close()
    return out


def test_a_leader_dir_failure_on_a_secure_cluster_loses_nothing(
    make_cluster: Callable[..., LocalCluster],
) -> None:
    cluster = make_cluster(brokers=3, dirs=2, secure=True)
    admin(cluster, "topics", "create", "--topic", TOPIC, "--partitions", "1", "--replication-factor", "3")
    cluster.wait_until(
        lambda v: (p := v.partition(TOPIC, 0)) is not None and len(p.isr) == 3, WAIT_S, "ISR of 3"
    )
    leader = cluster.view(probe=False).partition(TOPIC, 0).leader

    producer = Producer(cluster)
    producer.thread.start()
    try:
        _until("acknowledged messages", lambda: len(producer.acked) > 300)
        cluster.fail_dir(leader, dir_index_of(cluster.view(probe=False), TOPIC, 0, leader))
        cluster.wait_until(
            lambda v: v.partition(TOPIC, 0).leader not in (-1, leader),
            WAIT_S,
            "a new leader after the dir failure",
        )
        acked = len(producer.acked)
        _until("acknowledged messages under the new leader", lambda: len(producer.acked) > acked + 300)
    finally:
        producer.stop.set()
        producer.thread.join(180)

    assert producer.failed == []
    in_log = read_all(cluster)
    assert len(in_log) == len(set(in_log)), "a message is in the log twice"
    assert set(producer.acked) <= set(in_log), "an acknowledged message is missing from the log"


def _client_may_read(cluster: LocalCluster, topic: str) -> bool:
    """Whether the SCRAM client sees `topic` in Metadata (DESCRIBE), asked of every broker alone."""
    from confluent_kafka.admin import AdminClient

    for address in cluster.kafka_bootstrap_servers().split(","):
        md = AdminClient(client_config(cluster, **{"bootstrap.servers": address})).list_topics(timeout=10)
        t = md.topics.get(topic)
        if t is None or t.error is not None:
            return False
    return True


def test_acls_take_effect_on_every_broker_and_survive_a_controller_restart(
    make_cluster: Callable[..., LocalCluster],
) -> None:
    cluster = make_cluster(brokers=2, dirs=1, secure=True, real_disks=False)
    admin(cluster, "topics", "create", "--topic", TOPIC, "--partitions", "1", "--replication-factor", "2")
    assert _client_may_read(cluster, TOPIC)  # up grants the client every topic

    # a DENY on the topic takes DESCRIBE away on both brokers
    admin(cluster, "acls", "--add", "--deny-principal", "User:client", "--operation", "All", "--topic", TOPIC)
    _until("every broker to apply the DENY", lambda: not _client_may_read(cluster, TOPIC), 20)

    [controller] = cluster.controllers
    cluster.stop_node_id(controller.node_id)
    cluster.start_node_id(controller.node_id)
    listed = admin(cluster, "acls", "--list", "--topic", TOPIC).stdout
    assert "principal=User:client" in listed and "permissionType=DENY" in listed, listed
    assert not _client_may_read(cluster, TOPIC)

    # the controller still has it after replaying its log: removing it matches and reaches every broker
    admin(
        cluster,
        "acls",
        "--remove",
        "--force",
        "--deny-principal",
        "User:client",
        "--operation",
        "All",
        "--topic",
        TOPIC,
    )
    _until("every broker to drop the DENY", lambda: _client_may_read(cluster, TOPIC), 20)
