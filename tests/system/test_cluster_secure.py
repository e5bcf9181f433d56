"""`kraftpy cluster up --secure` as an operator runs it (one controller, two brokers, plain dirs):
kraftpy's tools work with the admin certificate (--command-config), anything without a certificate
from the cluster's CA is turned away at the TLS handshake and writes nothing, a node cannot speak
for another, and Kafka's clients produce and consume over SASL_SSL with client.properties and only
with the right password."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import ssl
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kraftpy.properties import load_properties
from protocol.errors import Errors
from protocol.rpc import BrokerHeartbeatRequest, BrokerRegistrationRequest
from protocol.rpc.create_topics import CreateTopicsRequest
from protocol.transport import NO_RETRIES, RpcClient, RpcConnectionError
from protocol.uuid import Uuid
from tests.conftest import require_real
from tests.support.processes import kraftpy_command, run_kraftpy
from tools.cluster.certs import create_ca, node_cert
from tools.cluster.cluster import LocalCluster
from tools.cluster.launcher import mark_test_run
from tools.cluster.metadata import iter_records
from tools.cluster.secure import write_properties

pytestmark = [pytest.mark.system, pytest.mark.slow]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    mark_test_run()
    work = tmp_path_factory.mktemp("secure") / "cluster"
    up = run_kraftpy(
        "cluster", "up", "--secure", "--work-dir", str(work),
        "--controllers", "1", "--brokers", "2", "--dirs", "1", timeout=120,
    )  # fmt: skip
    cluster = LocalCluster(work)
    try:
        sec = cluster.security
        # how to use it is printed
        assert f"--command-config {sec.admin_properties}" in up.stdout
        assert f"kcat -F {sec.client_properties}" in up.stdout
        yield cluster
    finally:
        cluster.down()


def controller_url(cluster: LocalCluster) -> str:
    return cluster.controllers[0].url


def last_offset(cluster: LocalCluster) -> int:
    return max(r.offset for r in iter_records(cluster.controllers[0].metadata_dir))


def records_since(cluster: LocalCluster, offset: int) -> set[str]:
    """Record types the controller wrote after `offset`, besides the NoOps it writes while idle."""
    return {r.type for r in iter_records(cluster.controllers[0].metadata_dir, offset + 1)} - {"NoOpRecord"}


def context(cluster: LocalCluster, keystore: Path) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(cluster.security.ca))
    ctx.load_cert_chain(keystore)
    return ctx


def test_the_work_dir_and_kraftpys_tools(cluster: LocalCluster) -> None:
    sec = cluster.security
    assert sec.dir.stat().st_mode & 0o777 == 0o700
    assert all(f.stat().st_mode & 0o777 == 0o600 for f in sec.dir.iterdir())
    status = json.loads(
        run_kraftpy("cluster", "status", "--work-dir", str(cluster.work_dir), "--json").stdout
    )
    assert "secure" in status["mode"] and status["controller"]["healthy"]
    assert [(b["node_id"], b["state"]) for b in status["brokers"]] == [(1, "unfenced"), (2, "unfenced")]

    rpc = cluster.brokers[0].bootstrap
    made = run_kraftpy(
        "topics", "create", "--bootstrap-server", rpc, "--command-config", str(sec.admin_properties),
        "--topic", "orders", "--partitions", "2", "--replication-factor", "2",
    )  # fmt: skip
    assert "Created topic orders" in made.stdout
    described = run_kraftpy(
        "--command-config", str(sec.admin_properties), "topics", "describe", "--bootstrap-server", rpc,
        "--topic", "orders",
    ).stdout  # fmt: skip
    assert "PartitionCount: 2" in described
    # without --bootstrap-server: KRAFTPY_WORK's cluster, reached with its own admin certificate
    listed = subprocess.run(
        kraftpy_command("topics", "list"),
        capture_output=True, text=True, timeout=60, check=False,
        env={**os.environ, "KRAFTPY_WORK": str(cluster.work_dir), "KRAFTPY_COMMAND_CONFIG": ""},
    )  # fmt: skip
    assert listed.returncode == 0 and "orders" in listed.stdout.split(), listed.stderr
    plain = run_kraftpy("topics", "list", "--bootstrap-server", rpc, check=False)
    assert plain.returncode != 0


async def test_requests_without_the_clusters_certificates_are_refused_and_write_nothing(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    before = last_offset(cluster)
    registration = BrokerRegistrationRequest(
        BrokerId=1,
        ClusterId=cluster.state.cluster_id,
        IncarnationId=Uuid.random(),
        Listeners=[BrokerRegistrationRequest.Listener(Name="RPC", Host="127.0.0.1", Port=1)],
    )
    create = CreateTopicsRequest(
        Topics=[CreateTopicsRequest.CreatableTopic(Name="sneaky", NumPartitions=1, ReplicationFactor=1)],
        TimeoutMs=5000,
    )
    other = create_ca(tmp_path / "other-ca", "another CA")
    stranger = node_cert(other, 1, tmp_path / "stranger")
    for ctx in (None, context(cluster, stranger.keystore)):
        async with RpcClient(controller_url(cluster), ssl=ctx, retry=NO_RETRIES, timeout=5) as client:
            for api, req in (("BrokerRegistration", registration), ("CreateTopics", create)):
                with pytest.raises(RpcConnectionError):
                    await client.call(api, req)
    await asyncio.sleep(1.0)  # what a request let through would have written by now
    assert records_since(cluster, before) == set()
    image = cluster.image()
    assert image is not None and image.topics.get_topic("sneaky") is None


async def test_a_node_cannot_heartbeat_for_another(cluster: LocalCluster) -> None:
    view = cluster.view(probe=False)
    epochs = {b: view.broker(b).epoch for b in (1, 2)}
    before = last_offset(cluster)
    as_broker_2 = context(cluster, cluster.security.node_keystore(2))
    async with RpcClient(controller_url(cluster), ssl=as_broker_2, retry=NO_RETRIES, timeout=5) as client:
        spoofed = await client.call(
            "BrokerHeartbeat", BrokerHeartbeatRequest(BrokerId=1, BrokerEpoch=epochs[1], WantFence=True)
        )
        assert spoofed.ErrorCode == Errors.CLUSTER_AUTHORIZATION_FAILED
        # the same certificate speaks for its own node
        own = await client.call(
            "BrokerHeartbeat",
            BrokerHeartbeatRequest(BrokerId=2, BrokerEpoch=epochs[2], CurrentMetadataOffset=before),
        )
        assert own.ErrorCode == Errors.NONE
    await asyncio.sleep(1.0)
    assert records_since(cluster, before) == set()
    assert cluster.view(probe=False).broker(1).state == "unfenced"


def client_conf(cluster: LocalCluster, **overrides: str) -> dict[str, Any]:
    return {**load_properties(cluster.security.client_properties), **overrides}


def test_confluent_kafka_produces_and_consumes_over_sasl_ssl(cluster: LocalCluster) -> None:
    confluent_kafka = pytest.importorskip("confluent_kafka", reason="confluent-kafka is not installed")
    cluster.create_topic("payments", 2, 2)
    errors: list[Any] = []
    producer = confluent_kafka.Producer(client_conf(cluster, acks="all"))
    for i in range(20):
        producer.produce("payments", f"m{i}".encode(), on_delivery=lambda err, _m: err and errors.append(err))
    assert producer.flush(30) == 0 and errors == []
    consumer = confluent_kafka.Consumer(
        client_conf(cluster, **{"group.id": "payers", "auto.offset.reset": "earliest"})
    )
    got: list[bytes] = []
    try:
        consumer.subscribe(["payments"])
        deadline = time.monotonic() + 30
        while len(got) < 20 and time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is not None and m.error() is None:
                got.append(m.value())
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    assert sorted(got) == sorted(f"m{i}".encode() for i in range(20))

    from confluent_kafka.admin import AdminClient

    admin = AdminClient(client_conf(cluster, **{"sasl.password": "wrong"}))
    with pytest.raises(confluent_kafka.KafkaException):
        admin.list_topics(timeout=5)


def kcat(config: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["/usr/bin/kcat", "-F", str(config), "-L", "-m", "5"], capture_output=True, text=True, timeout=60
    )


def test_kcat_with_client_properties(cluster: LocalCluster, tmp_path: Path) -> None:
    require_real("kcat", shutil.which("kcat") is not None)
    cluster.create_topic("lines", 1, 2)
    ok = kcat(cluster.security.client_properties)
    assert ok.returncode == 0, ok.stderr
    assert 'topic "lines"' in ok.stdout and "2 brokers" in ok.stdout
    wrong = tmp_path / "wrong.properties"
    write_properties(wrong, client_conf(cluster, **{"sasl.password": "wrong"}), "a wrong password")
    refused = kcat(wrong)
    assert refused.returncode != 0
    assert "Authentication failed" in refused.stderr
