"""Clients this project did not write against a kraftpy cluster, over Kafka's protocol: Debian's kcat
(librdkafka 2.0), confluent-kafka (librdkafka 2.16) and kafka-python from PyPI.

The last scenario is the one people who run Kafka ask about: an idempotent acks=all producer and a
group consumer keep going while the disk under a partition leader (and group coordinator) dies, and
every acknowledged message is in the log exactly once and reaches the group."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import have, require_real
from tests.support.processes import run_kraftpy
from tests.system.helpers import dir_index_of
from tools.cluster.cluster import LocalCluster
from tools.cluster.spec import ClusterSpec

pytestmark = [pytest.mark.system, pytest.mark.slow]

confluent_kafka = pytest.importorskip("confluent_kafka", reason="confluent-kafka is not installed")
kafka = pytest.importorskip("kafka", reason="kafka-python is not installed")

MESSAGES = 10_000


def _kcat(bootstrap: str, *args: str, data: str | None = None, timeout: float = 60) -> str:
    out = subprocess.run(
        ["kcat", "-b", bootstrap, *args], input=data, capture_output=True, text=True, timeout=timeout
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def _until(what: str, check: Callable[[], Any], timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.3)


def _create(
    bootstrap: str, name: str, partitions: int, rf: int, configs: dict[str, str] | None = None
) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(name, partitions, rf, config=configs or {})])
    futures[name].result(30)

    def has_leaders() -> bool:
        md = admin.list_topics(name, timeout=10).topics[name]
        return (
            md.error is None
            and len(md.partitions) == partitions
            and all(p.leader >= 0 for p in md.partitions.values())
        )

    _until(f"{name} to have leaders", has_leaders)


@pytest.fixture
def plain_cluster(tmp_path: Path):  # type: ignore[no-untyped-def]
    cluster = LocalCluster.up(
        tmp_path / "cluster", ClusterSpec(brokers=3, dirs=2, controllers=1), timeout=120
    )
    try:
        yield cluster
    finally:
        cluster.down()


@pytest.mark.real
def test_kcat_lists_produces_consumes_and_joins_a_group(plain_cluster: LocalCluster) -> None:
    require_real("kcat (Debian's package)", have("kcat"))
    cluster = plain_cluster
    status = json.loads(
        run_kraftpy("cluster", "status", "--json", "--work-dir", str(cluster.work_dir)).stdout
    )
    brokers = status["brokers"]
    assert all(b["bootstrap"] and b["bootstrap"] != b["address"] for b in brokers)
    bootstrap = cluster.kafka_bootstrap_servers()
    assert bootstrap == ",".join(b["bootstrap"] for b in brokers)

    _create(bootstrap, "lines", 3, 3)
    listing = _kcat(bootstrap, "-L", "-t", "lines")
    assert " 3 brokers:" in listing
    for b in brokers:
        assert f"at {b['bootstrap']}" in listing
    assert 'topic "lines" with 3 partitions:' in listing

    sent = [f"line-{i}" for i in range(MESSAGES)]
    _kcat(
        bootstrap, "-P", "-t", "lines", "-X", "topic.request.required.acks=all", data="\n".join(sent) + "\n"
    )
    got = _kcat(bootstrap, "-C", "-t", "lines", "-e", "-q").splitlines()
    assert sorted(got) == sorted(sent)

    grouped = _kcat(bootstrap, "-G", "kcat-group", "lines", "-e", "-q", "-X", "auto.offset.reset=earliest")
    assert sorted(grouped.splitlines()) == sorted(sent)
    groups = run_kraftpy("consumer-groups", "--list", "--bootstrap-server", bootstrap).stdout.split()
    assert "kcat-group" in groups
    described = run_kraftpy(
        "consumer-groups", "--describe", "--group", "kcat-group", "--bootstrap-server", bootstrap
    ).stdout
    rows = [line.split() for line in described.splitlines() if line.startswith("kcat-group ")]
    # a partition shows once the group committed an offset for it: kcat's producer may leave some empty
    assert rows and {int(r[2]) for r in rows} <= {0, 1, 2}
    assert sum(int(r[3]) for r in rows) == MESSAGES  # committed offsets cover everything read
    assert all(r[5] == "0" for r in rows)  # no lag


def test_python_clients_produce_consume_and_administer(plain_cluster: LocalCluster) -> None:
    from confluent_kafka import Consumer, Producer
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
    from kafka.admin import NewTopic

    bootstrap = plain_cluster.kafka_bootstrap_servers()
    admin = KafkaAdminClient(bootstrap_servers=bootstrap.split(","))
    admin.create_topics([NewTopic("py", num_partitions=2, replication_factor=3)])
    _until("py to have leaders", lambda: len(admin.describe_topics(["py"])[0]["partitions"]) == 2)
    dirs = admin.describe_log_dirs()
    assert dirs  # every broker's dirs, as kafka-log-dirs shows them
    admin.close()
    from confluent_kafka.admin import AdminClient, ConfigResource, NewPartitions

    ck_admin = AdminClient({"bootstrap.servers": bootstrap})  # kept: its futures die with it
    described = ck_admin.describe_cluster(request_timeout=15).result()
    assert sorted(n.id for n in described.nodes) == [1, 2, 3]
    assert {f"{n.host}:{n.port}" for n in described.nodes} == set(bootstrap.split(","))
    resource = ConfigResource(ConfigResource.Type.TOPIC, "py")
    configs = ck_admin.describe_configs([resource])[resource].result(15)
    assert configs["cleanup.policy"].value == "delete" and "retention.ms" in configs
    ck_admin.create_partitions([NewPartitions("py", 4)])["py"].result(30)
    _until(
        "py to have 4 partitions",
        lambda: len(ck_admin.list_topics("py", timeout=10).topics["py"].partitions) == 4,
    )
    from kafka import TopicPartition

    # KIP-455 through kafka-python: a partition moved from broker 1 to broker 2.
    mover = KafkaAdminClient(bootstrap_servers=bootstrap.split(","))
    mover.create_topics([NewTopic("moved", replica_assignments={0: [1]})])
    _until("moved to have a leader", lambda: mover.describe_topics(["moved"])[0]["partitions"])
    tp = TopicPartition("moved", 0)
    assert mover.alter_partition_reassignments({tp: [2]}) == {tp: None}
    _until(
        "moved to be on broker 2 only",
        lambda: (
            not mover.list_partition_reassignments()
            and mover.describe_topics(["moved"])[0]["partitions"][0]["replica_nodes"] == [2]
        ),
    )
    assert mover.alter_partition_reassignments({tp: None})[tp] is kafka.errors.NoReassignmentInProgressError
    mover.close()

    producer = KafkaProducer(bootstrap_servers=bootstrap.split(","), acks="all")
    for i in range(500):
        producer.send("py", f"kp-{i}".encode())
    producer.flush()
    producer.close()
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True})
    for i in range(500):
        p.produce("py", f"ck-{i}".encode())
    assert p.flush(30) == 0

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "ck-group", "auto.offset.reset": "earliest"})
    c.subscribe(["py"])
    seen: list[str] = []
    deadline = time.monotonic() + 60
    while len(seen) < 1000 and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            seen.append(m.value().decode())
    c.close()
    assert sorted(seen) == sorted([f"kp-{i}" for i in range(500)] + [f"ck-{i}" for i in range(500)])

    kc = KafkaConsumer(
        "py",
        bootstrap_servers=bootstrap.split(","),
        group_id="kp-group",
        auto_offset_reset="earliest",
        consumer_timeout_ms=10_000,
    )
    assert len([m for m in kc]) == 1000
    kc.commit()
    kc.close()
    again = KafkaConsumer(
        "py", bootstrap_servers=bootstrap.split(","), group_id="kp-group", consumer_timeout_ms=5000
    )
    assert [m for m in again] == []  # the group resumes from its committed offsets
    again.close()


class Traffic:
    """An idempotent acks=all librdkafka producer and a kafka-python group consumer, on threads."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.bootstrap, self.topic = bootstrap, topic
        self.acked: list[str] = []
        self.failed: list[str] = []
        self.received: list[str] = []
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._produce), threading.Thread(target=self._consume)]

    def start(self) -> None:
        for t in self.threads:
            t.start()

    def _produce(self) -> None:
        from confluent_kafka import Producer

        p = Producer(
            {
                "bootstrap.servers": self.bootstrap,
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 5,
                "delivery.timeout.ms": 120_000,
            }
        )

        def done(err: Any, msg: Any) -> None:
            (self.failed if err else self.acked).append(msg.value().decode())

        i = 0
        while not self.stop.is_set():
            p.produce(self.topic, f"m-{i}".encode(), on_delivery=done)
            i += 1
            p.poll(0)
            time.sleep(0.002)
        assert p.flush(120) == 0

    def _consume(self) -> None:
        from kafka import KafkaConsumer

        c = KafkaConsumer(
            self.topic,
            bootstrap_servers=self.bootstrap.split(","),
            group_id="survivors",
            auto_offset_reset="earliest",
            enable_auto_commit=False,
        )
        quiet_since = None
        while True:
            batch = c.poll(timeout_ms=500)
            for records in batch.values():
                self.received += [r.value.decode() for r in records]
            if batch:
                try:
                    c.commit()
                except Exception:
                    pass  # the coordinator moved: the next commit goes to the new one
                quiet_since = None
            elif self.stop.is_set():
                quiet_since = quiet_since or time.monotonic()
                if time.monotonic() - quiet_since > 10 and set(self.acked) <= set(self.received):
                    break
                if time.monotonic() - quiet_since > 60:
                    break
        c.close()


@pytest.mark.real
def test_clients_ride_through_a_leader_dir_failure(make_cluster: Callable[..., LocalCluster]) -> None:
    """The partition's leader is also the group's coordinator; the dir under the partition fails,
    then the dir under the group's offsets (one and the same when they share it)."""
    from confluent_kafka import Consumer, TopicPartition
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic

    cluster = make_cluster(brokers=3, dirs=3, broker_config={"offsets.topic.num.partitions": "1"})
    bootstrap = cluster.kafka_bootstrap_servers()
    # a lookup of the group's coordinator creates __consumer_offsets
    _until(
        "a coordinator for the group",
        lambda: (
            run_kraftpy(
                "consumer-groups",
                "--describe",
                "--group",
                "survivors",
                "--bootstrap-server",
                bootstrap,
                check=False,
            ).returncode
            in (0, 1)
            and cluster.view(probe=False).partition("__consumer_offsets", 0) is not None
            and cluster.view(probe=False).partition("__consumer_offsets", 0).leader >= 0
        ),
    )
    coordinator = cluster.view(probe=False).partition("__consumer_offsets", 0).leader
    others = [b for b in (1, 2, 3) if b != coordinator]
    admin = KafkaAdminClient(bootstrap_servers=bootstrap.split(","))
    admin.create_topics(
        [
            NewTopic(
                "orders",
                num_partitions=-1,
                replication_factor=-1,
                replica_assignments={0: [coordinator, *others]},
                topic_configs={"min.insync.replicas": "2"},
            )
        ]
    )
    admin.close()
    _until(
        "orders to have its leader",
        lambda: (p := cluster.view(probe=False).partition("orders", 0)) and p.leader == coordinator,
    )

    traffic = Traffic(bootstrap, "orders")
    traffic.start()
    try:
        _fail_under_leader_and_coordinator(cluster, traffic, coordinator)
    finally:
        traffic.stop.set()
        for t in traffic.threads:
            t.join(180)

    assert traffic.failed == []
    # the log holds every acknowledged message exactly once
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "audit", "enable.auto.commit": False})
    c.assign([TopicPartition("orders", 0, 0)])
    in_log: list[str] = []
    quiet = time.monotonic()
    while time.monotonic() - quiet < 5:
        m = c.poll(0.5)
        if m is not None and not m.error():
            in_log.append(m.value().decode())
            quiet = time.monotonic()
    c.close()
    assert len(in_log) == len(set(in_log)), "a message is in the log twice"
    assert set(traffic.acked) <= set(in_log), "an acknowledged message is missing from the log"
    # the group read them all, across both moves, and its offsets came with it
    assert set(traffic.acked) <= set(traffic.received)
    described = run_kraftpy(
        "consumer-groups", "--describe", "--group", "survivors", "--bootstrap-server", bootstrap
    ).stdout
    [row] = [line.split() for line in described.splitlines() if line.startswith("survivors ")]
    assert int(row[3]) == len(in_log) and row[5] == "0", row


def _fail_under_leader_and_coordinator(cluster: LocalCluster, traffic: Traffic, coordinator: int) -> None:
    _until("the group to have read something", lambda: len(traffic.received) > 200)
    view = cluster.view(probe=False)
    under_orders = dir_index_of(view, "orders", 0, coordinator)
    under_offsets = dir_index_of(view, "__consumer_offsets", 0, coordinator)
    cluster.fail_dir(coordinator, under_orders)
    cluster.wait_until(
        lambda v: v.partition("orders", 0).leader not in (-1, coordinator), 60, "a new leader of orders-0"
    )
    acked = len(traffic.acked)
    _until("acknowledged messages after the leader's dir failed", lambda: len(traffic.acked) > acked + 300)
    if under_offsets != under_orders:
        cluster.fail_dir(coordinator, under_offsets)
    cluster.wait_until(
        lambda v: v.partition("__consumer_offsets", 0).leader not in (-1, coordinator),
        60,
        "the group to get a new coordinator",
    )
    received = len(traffic.received)
    _until("the group to read on under its new coordinator", lambda: len(traffic.received) > received + 300)


def test_a_follower_points_clients_at_the_leader(plain_cluster: LocalCluster) -> None:
    """KIP-951: a NOT_LEADER_OR_FOLLOWER answer names the leader and its Kafka-protocol endpoint."""
    import asyncio

    from protocol.record_batch import build_data_batch
    from protocol.rpc.broker_fetch import FetchRequest
    from protocol.rpc.produce import ProduceRequest
    from tools.client.wire import KafkaRpcClient

    bootstrap = plain_cluster.kafka_bootstrap_servers()
    _create(bootstrap, "moved", 1, 3)
    p = plain_cluster.view(probe=False).partition("moved", 0)
    follower = next(b for b in p.replicas if b != p.leader)
    where = {b.node_id: b.kafka_bootstrap for b in plain_cluster.brokers}
    host, port = where[follower].split(":")
    topic_id = plain_cluster.image().topics.get_topic("moved").id

    async def ask() -> tuple[object, object]:
        async with KafkaRpcClient(host, int(port)) as conn:
            produced = await conn.call(
                "Produce",
                ProduceRequest(
                    Acks=-1,
                    TopicData=[
                        ProduceRequest.TopicProduceData(
                            Name="moved",
                            PartitionData=[
                                ProduceRequest.PartitionProduceData(
                                    Index=0, Records=build_data_batch([(None, b"x")], 0)
                                )
                            ],
                        )
                    ],
                ),
                11,
            )
            fetched = await conn.call(
                "Fetch",
                FetchRequest(
                    MaxWaitMs=0,
                    Topics=[
                        FetchRequest.FetchTopic(
                            TopicId=topic_id,
                            Partitions=[FetchRequest.FetchPartition(Partition=0, FetchOffset=0)],
                        )
                    ],
                ),
                16,
            )
            return produced, fetched

    produced, fetched = asyncio.run(ask())
    part = produced.Responses[0].PartitionResponses[0]  # type: ignore[attr-defined]
    assert part.ErrorCode == 6 and part.CurrentLeader.LeaderId == p.leader
    assert [(e.NodeId, f"{e.Host}:{e.Port}") for e in produced.NodeEndpoints] == [(p.leader, where[p.leader])]  # type: ignore[attr-defined]
    fpart = fetched.Responses[0].Partitions[0]  # type: ignore[attr-defined]
    assert fpart.ErrorCode == 6 and fpart.CurrentLeader.LeaderId == p.leader
    assert [(e.NodeId, f"{e.Host}:{e.Port}") for e in fetched.NodeEndpoints] == [(p.leader, where[p.leader])]  # type: ignore[attr-defined]


def test_kraftpys_own_tools_take_kafka_addresses(plain_cluster: LocalCluster) -> None:
    """--bootstrap-server with a broker's Kafka-protocol address, as Kafka's tools take it; the HTTP
    address keeps working, and kafka:// says which without a probe."""
    kafka_address = plain_cluster.kafka_bootstrap_servers().split(",")[0]
    http_address = plain_cluster.bootstrap_servers().split(",")[0]
    run_kraftpy(
        "topics",
        "create",
        "--bootstrap-server",
        kafka_address,
        "--topic",
        "tooled",
        "--partitions",
        "2",
        "--replication-factor",
        "3",
    )
    for where in (kafka_address, f"kafka://{kafka_address}", http_address):
        assert "tooled" in run_kraftpy("topics", "list", "--bootstrap-server", where).stdout.split()
    described = run_kraftpy(
        "topics", "describe", "--bootstrap-server", kafka_address, "--topic", "tooled"
    ).stdout
    assert "PartitionCount: 2" in described and "ReplicationFactor: 3" in described
    doc = json.loads(run_kraftpy("log-dirs", "describe", "--bootstrap-server", kafka_address).stdout)
    assert sorted(b["broker"] for b in doc["brokers"]) == [1, 2, 3]
    assert all(not b.get("error") and len(b["logDirs"]) == 2 for b in doc["brokers"]), doc
    import subprocess as sp

    from tests.support.processes import REPO

    produced = sp.run(
        [
            str(REPO / ".venv" / "bin" / "kraftpy"),
            "produce",
            "--bootstrap-server",
            kafka_address,
            "--topic",
            "tooled",
        ],
        input="\n".join(f"v{i}" for i in range(300)) + "\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert produced.returncode == 0, produced.stderr
    consumed = run_kraftpy(
        "consume",
        "--bootstrap-server",
        kafka_address,
        "--topic",
        "tooled",
        "--from-beginning",
        "--max-messages",
        "300",
    ).stdout.split()
    assert sorted(consumed) == sorted(f"v{i}" for i in range(300))
