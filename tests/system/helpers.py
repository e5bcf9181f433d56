"""Steps the system tests share: traffic, KIP-112's "validate client/cluster state", topic description."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

from tests.support.processes import kraftpy_command
from tools.cluster import launcher
from tools.cluster.cluster import LocalCluster
from tools.cluster.view import ClusterView
from tools.cluster.workload import ProducerProcess, verify

RATE = 200.0


def start_traffic(
    cluster: LocalCluster, topic: str, ack_file: Path, *, bootstrap: str | None = None, min_acks: int = 50
) -> ProducerProcess:
    """A continuous acks=all idempotent producer; returns once `min_acks` messages are acknowledged."""
    producer = cluster.start_producer(topic, ack_file, rate=RATE, bootstrap=bootstrap)
    wait_acks(producer, min_acks)
    return producer


def wait_acks(producer: ProducerProcess, at_least: int, timeout: float = 60.0) -> int:
    deadline = time.monotonic() + timeout
    while True:
        producer.tail.poll()
        if producer.tail.acked >= at_least:
            return int(producer.tail.acked)
        if not producer.alive:
            raise AssertionError(f"producer exited early; log:\n{producer.log_file.read_text()[-3000:]}")
        if time.monotonic() > deadline:
            raise AssertionError(
                f"only {producer.tail.acked} of {at_least} messages acknowledged after {timeout:.0f}s; "
                f"producer log:\n{producer.log_file.read_text()[-3000:]}"
            )
        time.sleep(0.1)


def more_acks(producer: ProducerProcess, n: int = 50, timeout: float = 60.0) -> int:
    """Wait until `n` more messages than now are acknowledged: the topic takes writes again."""
    producer.tail.poll()
    return wait_acks(producer, producer.tail.acked + n, timeout)


def validate_clients(
    cluster: LocalCluster, topic: str, producer: ProducerProcess, *, bootstrap: str | None = None
) -> None:
    """KIP-112: "a pair of producer and consumer can successfully produce/consume from a topic
    without message loss or duplication"."""
    acks = producer.stop()
    assert acks.done is not None, (
        f"producer did not finish cleanly; log:\n{producer.log_file.read_text()[-3000:]}"
    )
    assert len(acks.acked) > 0
    rows = cluster.consume(topic, bootstrap=bootstrap)
    verdict = verify(acks, rows)
    assert verdict.ok, verdict.describe()


def describe(cluster: LocalCluster, topic: str, *, bootstrap: str | None = None) -> list[dict[str, Any]]:
    """`kraftpy topics describe --json`: the partitions as the user-facing tool shows them (KIP-112:
    "kafka-topics will display offline replicas")."""
    argv = kraftpy_command(
        "topics",
        "describe",
        "--bootstrap-server",
        bootstrap or cluster.bootstrap_servers(),
        "--topic",
        topic,
        "--json",
    )
    proc = subprocess.run(
        cluster.client_command(argv), capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    assert len(rows) == 1 and rows[0]["topic"] == topic, rows
    return list(rows[0]["partitions"])


def dir_index_of(view: ClusterView, topic: str, partition: int, broker_id: int) -> int:
    """Which of `broker_id`'s log dirs holds its replica of the partition."""
    p = view.partition(topic, partition)
    assert p is not None, f"no partition {topic}-{partition}"
    label = p.directories[p.replicas.index(broker_id)]
    assert label.startswith(f"b{broker_id}/d"), (
        f"replica of broker {broker_id} is in {label}, not a known dir"
    )
    return int(label.split("/d")[1])


def broker_log(cluster: LocalCluster, broker_id: int) -> str:
    return Path(cluster.broker(broker_id).log).read_text(errors="replace")


def log_lines(cluster: LocalCluster, broker_id: int, event: str) -> list[dict[str, Any]]:
    """The broker's JSON log lines whose event contains `event`."""
    out = []
    for line in broker_log(cluster, broker_id).splitlines():
        if event in line and line.startswith("{"):
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
    return [d for d in out if event in str(d.get("event", ""))]


def wait_exit(cluster: LocalCluster, broker_id: int, timeout: float = 60.0) -> None:
    name = cluster.broker(broker_id).name
    deadline = time.monotonic() + timeout
    while cluster.is_running(name):
        if time.monotonic() > deadline:
            raise AssertionError(
                f"broker {broker_id} still running after {timeout:.0f}s; log:\n"
                + launcher.log_tail(cluster.broker(broker_id).log, 30)
            )
        time.sleep(0.2)


def all_in_sync(view: ClusterView, topic: str) -> bool:
    """Every partition of `topic` led, with every replica online and in the ISR."""
    parts = view.topic(topic)
    return bool(parts) and all(
        len(p.isr) == len(p.replicas) and not p.offline and p.leader >= 0 for p in parts
    )
