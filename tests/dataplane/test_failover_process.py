"""KIP-112's validation on a real cluster: a producer (acks=all, idempotent) and a consumer lose and
duplicate nothing while a leader dies, a leader's log dir fails, or a follower's log dir fails; and
`kraftpy topics describe` shows the failed replica as offline with its directory id.

A controller and three brokers run as processes; disk faults hit real loop-device filesystems
(`real_disks`: root only, skipped elsewhere, required under KRAFTPY_REQUIRE_REAL=1).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from typing import Any

import pytest

from tests.dataplane.cluster import DataCluster, wait_until
from tests.dataplane.workload import produce_with_fault, read_back, verify
from tests.support.processes import kraftpy_command
from tools.client import Producer, consume_all

pytestmark = pytest.mark.timeout(600)

TOPIC = "orders"


def create_topic(c: DataCluster) -> None:
    out = c.kraftpy(
        "topics", "create", "--bootstrap-server", c.bootstrap, "--topic", TOPIC,
        "--partitions", "3", "--replication-factor", "3", "--config", "min.insync.replicas=2",
    )  # fmt: skip
    assert f"Created topic {TOPIC}." in out


def describe(c: DataCluster) -> list[dict[str, Any]]:
    rows = json.loads(
        c.kraftpy("topics", "describe", "--bootstrap-server", c.bootstrap, "--topic", TOPIC, "--json")
    )
    return rows[0]["partitions"]  # type: ignore[no-any-return]


def partition(c: DataCluster, index: int) -> dict[str, Any]:
    return next(p for p in describe(c) if p["partition"] == index)


def disk_of(c: DataCluster, disks: dict[int, list[Any]], broker: int, dir_id: str) -> Any:
    for i, disk in enumerate(disks[broker]):
        if str(c.brokers[broker].dir_id(i)) == dir_id:
            return disk
    raise AssertionError(f"broker {broker} has no dir {dir_id}")


def test_leader_killed_then_back(cluster: DataCluster) -> None:
    c = cluster
    create_topic(c)
    leader = partition(c, 0)["leader"]

    outcome = asyncio.run(
        produce_with_fault(
            c.bootstrap,
            TOPIC,
            20_000,
            fault=lambda: c.brokers[leader].proc.kill9(),
            fault_after=6_000,  # type: ignore[union-attr]
        )
    )
    assert outcome.fault_at is not None and not outcome.failed, outcome.failed
    verify(outcome, asyncio.run(read_back(c.bootstrap, TOPIC)))

    # The dead broker is fenced: every replica it holds is offline, none leads.
    def dead_shown() -> list[dict[str, Any]] | None:
        parts = describe(c)
        return parts if all(leader in p["offline"] and p["leader"] != leader for p in parts) else None

    for p in wait_until("the killed broker's replicas offline", dead_shown):
        assert leader not in p["isr"]

    # Back again: it truncates what it alone had, catches up, rejoins every ISR.
    c.start_broker(leader)
    wait_until(
        "the restarted broker back in every ISR",
        lambda: all(leader in p["isr"] and not p["offline"] for p in describe(c)),
    )
    verify(outcome, asyncio.run(read_back(c.bootstrap, TOPIC)))


def test_follower_dir_failed(disk_cluster: tuple[DataCluster, dict[int, list[Any]]]) -> None:
    c, disks = disk_cluster
    create_topic(c)
    p0 = partition(c, 0)
    follower = next(b for b in p0["replicas"] if b != p0["leader"])
    dir_id = p0["directories"][str(follower)]
    disk = disk_of(c, disks, follower, dir_id)

    outcome = asyncio.run(produce_with_fault(c.bootstrap, TOPIC, 20_000, fault=disk.fail, fault_after=6_000))
    assert not outcome.failed, outcome.failed
    verify(outcome, asyncio.run(read_back(c.bootstrap, TOPIC)))

    after = wait_until("the failed follower offline and out of the ISR", lambda: (
        (p := partition(c, 0)) and follower in p["offline"] and follower not in p["isr"] and p
    ))  # fmt: skip
    assert after["leader"] == p0["leader"]
    assert after["directories"][str(follower)] == dir_id
    text = c.kraftpy("topics", "describe", "--bootstrap-server", c.bootstrap, "--topic", TOPIC, "--extras")
    assert f"Offline: {follower}" in text and f"{follower}:{dir_id}" in text
    assert c.brokers[follower].proc.alive  # type: ignore[union-attr]

    # The broker still answers for its dirs: the failed one as offline with KafkaStorageException.
    doc = json.loads(
        c.kraftpy("log-dirs", "describe", "--bootstrap-server", c.bootstrap, "--broker-list", str(follower))
    )
    dirs = {d["directoryId"]: d for d in doc["brokers"][0]["logDirs"]}
    assert (
        not dirs[dir_id]["online"]
        and dirs[dir_id]["error"] == "org.apache.kafka.common.errors.KafkaStorageException"
    )
    assert not dirs[dir_id]["partitions"]
    assert all(d["online"] and d["totalBytes"] > 0 for i, d in dirs.items() if i != dir_id)


def test_leader_dir_failed_during_100k_messages(
    disk_cluster: tuple[DataCluster, dict[int, list[Any]]],
) -> None:
    """The issue's must-show: 100,000 messages, acks=all and idempotence, the leader's dir failed
    mid-stream; every acknowledged message is read back exactly once, in order."""
    c, disks = disk_cluster
    create_topic(c)
    p0 = partition(c, 0)
    leader = p0["leader"]
    dir_id = p0["directories"][str(leader)]
    disk = disk_of(c, disks, leader, dir_id)

    outcome = asyncio.run(
        produce_with_fault(
            c.bootstrap, TOPIC, 100_000, fault=disk.fail, fault_after=40_000,
            producer_config={"batch_size": 256 * 1024, "linger_ms": 10},
        )
    )  # fmt: skip
    assert not outcome.failed, list(outcome.failed.items())[:5]
    assert len(outcome.acked) == 100_000
    assert outcome.fault_at is not None and outcome.fault_at < 100_000
    print(
        f"100,000 acks=all records in {outcome.seconds:.1f}s, {outcome.retries} batch retries across the failover"
    )
    records = asyncio.run(read_back(c.bootstrap, TOPIC))
    verify(outcome, records)
    assert len(records) == 100_000

    after = partition(c, 0)
    assert after["leader"] not in (leader, -1)
    assert leader in after["offline"] and leader not in after["isr"]
    assert after["directories"][str(leader)] == dir_id
    text = c.kraftpy("topics", "describe", "--bootstrap-server", c.bootstrap, "--topic", TOPIC, "--extras")
    assert (
        f"Leader: {after['leader']}" in text and f"Offline: {leader}" in text and f"{leader}:{dir_id}" in text
    )


def test_admin_and_console_tools(cluster: DataCluster) -> None:
    c = cluster
    out = c.kraftpy(
        "topics", "create", "--bootstrap-server", c.controller_address, "--topic", "manual",
        "--replica-assignment", "1:2:3,2:3:1",
    )  # fmt: skip
    assert "Created topic manual." in out
    assert "manual" in c.kraftpy("topics", "list", "--bootstrap-server", c.bootstrap).split()
    parts = {p["partition"]: p for p in json.loads(
        c.kraftpy("topics", "describe", "--bootstrap-server", c.bootstrap, "--topic", "manual", "--json")
    )[0]["partitions"]}  # fmt: skip
    assert parts[0]["replicas"] == [1, 2, 3] and parts[1]["replicas"] == [2, 3, 1]
    assert all(len(p["directories"]) == 3 and not p["offline"] for p in parts.values())

    proc = subprocess.run(
        kraftpy_command("produce", "--bootstrap-server", c.bootstrap, "--topic", "manual", "--partition", "1",
                        "--report", "--property", "parse.key=true", "--property", "key.separator=:"),
        input="a:one\nb:two\nc:three\n", capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["manual-1@0", "manual-1@1", "manual-1@2"]
    proc = subprocess.run(
        kraftpy_command("consume", "--bootstrap-server", c.bootstrap, "--topic", "manual", "--from-beginning",
                        "--max-messages", "3", "--property", "print.key=true", "--property", "print.offset=true"),
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["Offset:0\ta\tone", "Offset:1\tb\ttwo", "Offset:2\tc\tthree"]
    assert "Processed a total of 3 messages" in proc.stderr

    doc = json.loads(c.kraftpy("log-dirs", "describe", "--bootstrap-server", c.bootstrap))
    assert sorted(b["broker"] for b in doc["brokers"]) == [1, 2, 3]
    sizes = [
        p["size"]
        for b in doc["brokers"]
        for d in b["logDirs"]
        for p in d["partitions"]
        if p["partition"] == "manual-1"
    ]
    assert len(sizes) == 3 and all(s > 0 for s in sizes)

    bad = c.kraftpy(
        "topics",
        "create",
        "--bootstrap-server",
        c.bootstrap,
        "--topic",
        "x",
        "--partitions",
        "0",
        check=False,
    )
    assert bad == ""
    c.kraftpy("topics", "delete", "--bootstrap-server", c.bootstrap, "--topic", "manual")
    wait_until(
        "topic gone",
        lambda: "manual" not in c.kraftpy("topics", "list", "--bootstrap-server", c.bootstrap).split(),
    )


def test_deposed_leader_truncates_what_only_it_had(cluster: DataCluster) -> None:
    """Records only the old leader took (acks=1 while its followers were stopped) are cut from its
    log when it comes back (DivergingEpoch), and every replica ends with the same records."""
    import signal

    c = cluster
    c.kraftpy(
        "topics", "create", "--bootstrap-server", c.bootstrap, "--topic", "trunc",
        "--partitions", "1", "--replication-factor", "3", "--config", "min.insync.replicas=2",
    )  # fmt: skip
    p0 = next(p for p in json.loads(
        c.kraftpy("topics", "describe", "--bootstrap-server", c.bootstrap, "--topic", "trunc", "--json")
    )[0]["partitions"])  # fmt: skip
    old, followers = p0["leader"], [b for b in p0["replicas"] if b != p0["leader"]]

    async def send(values: list[bytes], bootstrap: str = c.bootstrap, **cfg: Any) -> list[int]:
        async with Producer(bootstrap, **cfg) as producer:
            futs = [await producer.send("trunc", v) for v in values]
            await producer.flush()
            return [(await f).offset for f in futs]

    committed = asyncio.run(send([b"c%03d" % i for i in range(100)]))
    assert committed == list(range(100))
    for b in followers:
        c.brokers[b].proc.signal_group(signal.SIGSTOP)  # type: ignore[union-attr]
    try:
        # Past the followers' last long poll (replica.fetch.wait.max.ms 500), nothing more reaches
        # them; well within the session and lag timeouts, so they stay unfenced and in the ISR.
        # Through the leader only: a stopped broker would hold a request until it times out.
        time.sleep(1.0)
        lone = asyncio.run(
            send([b"lone%d" % i for i in range(5)], c.brokers[old].address, acks=1, enable_idempotence=False)
        )
        assert lone == list(range(100, 105))
        c.brokers[old].proc.kill9()  # type: ignore[union-attr]
    finally:
        for b in followers:
            c.brokers[b].proc.signal_group(signal.SIGCONT)  # type: ignore[union-attr]

    new_leader = wait_until(
        "a new leader", lambda: (p := partition_of(c, "trunc")) and p["leader"] in followers and p["leader"]
    )
    later = asyncio.run(send([b"n%03d" % i for i in range(50)]))
    assert later == list(range(100, 150))  # the lone records are not in the new leader's log

    c.start_broker(old)
    wait_until("the old leader back in the ISR", lambda: old in partition_of(c, "trunc")["isr"])
    assert "truncated after a leader change" in c.brokers[old].proc.log_text()  # type: ignore[union-attr]

    expected = [b"c%03d" % i for i in range(100)] + [b"n%03d" % i for i in range(50)]
    values = [r.value for r in asyncio.run(consume_all(c.bootstrap, "trunc"))]
    assert values == expected
    # Now read the old leader's own copy: make it lead by stopping the others.
    for b in followers:
        c.brokers[b].proc.kill9()  # type: ignore[union-attr]
    wait_until("the old leader leading again", lambda: partition_of(c, "trunc")["leader"] == old, timeout=60)
    values = [r.value for r in asyncio.run(consume_all(c.bootstrap, "trunc"))]
    assert values == expected
    assert new_leader in followers


def partition_of(c: DataCluster, topic: str) -> dict[str, Any]:
    rows = json.loads(
        c.kraftpy("topics", "describe", "--bootstrap-server", c.bootstrap, "--topic", topic, "--json")
    )
    return rows[0]["partitions"][0]  # type: ignore[no-any-return]


def test_corrupt_data_on_the_leader_is_visible_not_silent(cluster: DataCluster) -> None:
    """A flipped bit in the middle of the leader's segment: the follower that fetches it reports the
    partition in FailedPartitionsCount and /healthz, with the offset and why; so does the leader,
    which also lists itself in the partition's OfflineReplicas while it still leads; a consumer gets
    the records before it, then CORRUPT_MESSAGE."""
    from protocol.errors import Errors
    from tools.client import ClientError, Consumer

    c = cluster
    c.kraftpy(
        "topics", "create", "--bootstrap-server", c.bootstrap, "--topic", "rot",
        "--replica-assignment", "1:2", "--config", "min.insync.replicas=1",
    )  # fmt: skip
    wait_until("broker 1 leading rot-0", lambda: partition_of(c, "rot")["leader"] == 1)
    c.stop_broker(2)

    async def send() -> None:
        async with Producer(c.brokers[1].address, acks=1, enable_idempotence=False, linger_ms=0) as producer:
            for i in range(30):
                await (await producer.send("rot", b"v%02d" % i, partition=0))

    asyncio.run(send())
    segment = next(p for d in c.brokers[1].log_dirs for p in d.glob("rot-0/00000000000000000000.log"))
    data = bytearray(segment.read_bytes())
    from protocol.record_batch import iter_batch_positions

    batches = list(iter_batch_positions(bytes(data)))
    pos, h = batches[len(batches) // 2]
    data[pos + h.size - 1] ^= 0x01  # inside the last record of a middle batch: only the CRC tells
    segment.write_bytes(bytes(data))

    c.start_broker(2, wait=False)
    health = wait_until(
        "broker 2 reporting the corrupt partition",
        lambda: (hh := c.brokers[2].health()).get("failed_partitions") and hh,
    )
    assert any(
        f"offset {h.base_offset}" in reason and "CRC" in reason for reason in health["failed_partitions"]
    )
    assert (
        'kafka_server_replicafetchermanager_failedpartitionscount{clientId="Replica"} 1.0'
        in c.brokers[2].metrics()
    )

    # The leader learns it from the follower's fetch (checked there): its Metadata lists itself
    # offline for rot-0, still leading, and its /healthz names the batch.
    def described_by_leader() -> dict[str, Any]:
        rows = json.loads(
            c.kraftpy(
                "topics", "describe", "--bootstrap-server", c.brokers[1].address, "--topic", "rot", "--json"
            )
        )
        return rows[0]["partitions"][0]  # type: ignore[no-any-return]

    p0 = wait_until(
        "the leader listing itself offline", lambda: (p := described_by_leader())["offline"] and p
    )
    assert p0["offline"] == [1] and p0["leader"] == 1, p0
    (reason,) = c.brokers[1].health()["failed_partitions"]
    assert reason.startswith("rot-0") and f"offset {h.base_offset}" in reason and "CRC-32C" in reason, reason

    async def read() -> tuple[list[bytes], ClientError | None]:
        got: list[bytes] = []
        async with Consumer(c.brokers[1].address) as consumer:
            consumer.assign([("rot", 0)])
            consumer.seek(("rot", 0), 0)
            try:
                for _ in range(20):
                    got += [r.value or b"" for r in await consumer.poll(500)]
            except ClientError as e:
                return got, e
        return got, None

    got, error = asyncio.run(read())
    assert error is not None and error.code is Errors.CORRUPT_MESSAGE, error
    assert got == [b"v%02d" % i for i in range(h.base_offset)]
