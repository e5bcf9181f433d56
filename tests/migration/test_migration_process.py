"""A ZooKeeper-mode JBOD cluster migrated to KRaft, as real processes against a real ZooKeeper.

One scenario in the order an operator runs it (Kafka's zookeeper_migration_test), checking at each
step what the KIPs promise: the copy keeps every partition (PartitionEpoch = the state znode's
version, replicas MIGRATING), dual write mirrors KRaft's changes into ZooKeeper and to the ZooKeeper
brokers, a ZooKeeper outage only delays it, a topic deleted by hand in ZooKeeper comes back after a
controller restart, brokers restarted in KRaft mode place every replica in a real directory, and
taking the migration configs away finalizes. Every acknowledged record is read back once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from protocol import znodes
from protocol.rpc.create_topics import CreateTopicsRequest
from protocol.transport import RpcClient
from tests.migration.rig import MigrationRig, wait
from tests.support.zk_server import ZkServer
from tools.cluster.launcher import ProcessSet, run_kraftpy

pytestmark = [pytest.mark.real, pytest.mark.slow]

MIGRATING = "MIGRATING"


@pytest.fixture
def rig(tmp_path: Path, zk_server: ZkServer) -> Iterator[MigrationRig]:
    procs = ProcessSet(tmp_path / "procs")
    rig = MigrationRig.build(tmp_path, zk_server, procs)
    try:
        rig.zk_cluster.start()
        yield rig
    finally:
        procs.stop_all()


def _create_topic_in_kraft(rig: MigrationRig, name: str, partitions: int = 2) -> None:
    async def send() -> int:
        client = RpcClient(f"http://127.0.0.1:{rig.controller_port}", timeout=30)
        try:
            T = CreateTopicsRequest
            req = T(
                Topics=[T.CreatableTopic(Name=name, NumPartitions=partitions, ReplicationFactor=2)],
                TimeoutMs=30000,
            )
            resp = await client.call("CreateTopics", req)
            return int(resp.Topics[0].ErrorCode)
        finally:
            await client.close()

    assert asyncio.run(send()) == 0


def _partitions(image: dict, topic: str | None = None) -> list[dict]:  # type: ignore[type-arg]
    return [p for t in image["topics"] if topic in (None, t["name"]) for p in t["partitions"]]


def test_online_migration_of_a_jbod_cluster(rig: MigrationRig) -> None:
    run_kraftpy(
        "topics",
        "create",
        "--bootstrap-server",
        rig.zk_cluster.bootstrap,
        "--topic",
        "orders",
        "--partitions",
        "4",
        "--replication-factor",
        "2",
    )
    rig.produce("orders", [f"before-{i}" for i in range(100)])

    # The controller first: it writes PRE_MIGRATION and waits for the brokers.
    rig.start_controller()
    rig.wait_controller(driver="WAIT_FOR_BROKERS", zk_state="PRE_MIGRATION")
    for b in rig.zk_cluster.brokers:
        rig.roll_migrating(b)
    h = rig.wait_controller(driver="DUAL_WRITE", zk_state="MIGRATION")
    assert h["zk_controller_epoch"] > 0
    controller_znode = znodes.ControllerZnode.from_bytes(rig.zk_get(znodes.CONTROLLER) or b"")
    assert controller_znode.brokerid == 3000 and controller_znode.kraftControllerEpoch >= 0
    migration = znodes.MigrationZnode.from_bytes(rig.zk_get(znodes.MIGRATION) or b"")
    assert migration.initial_migration_done and migration.kraft_controller_id == 3000

    def copied_as_zookeeper_holds_it() -> bool:
        """Each partition's epoch in KRaft is its state znode's version (set by the copy, then moved
        in step by dual write), and every replica is MIGRATING."""
        orders = _partitions(rig.image(), "orders")
        client = rig.kazoo()
        try:
            versions = {p: client.get(znodes.partition_state_path("orders", p))[1].version for p in range(4)}
        finally:
            client.stop()
            client.close()
        return len(orders) == 4 and all(
            p["partitionEpoch"] == versions[p["partition"]] and set(p["directories"]) == {MIGRATING}
            for p in orders
        )

    wait("the copy to match ZooKeeper", lambda: copied_as_zookeeper_holds_it() or None, 30)
    rig.produce("orders", [f"during-{i}" for i in range(100)])

    # Dual write: a topic KRaft creates appears in ZooKeeper, and the ZooKeeper brokers host it.
    _create_topic_in_kraft(rig, "fresh")
    wait("fresh in ZooKeeper", lambda: rig.zk_get(znodes.partition_state_path("fresh", 1)))
    topic = znodes.TopicZnode.from_bytes(rig.zk_get(znodes.topic_path("fresh")) or b"")
    assert sorted(topic.partitions) == [0, 1]
    rig.produce("fresh", ["x"] * 10)
    assert len(rig.consume("fresh", 10)) == 10

    # ZooKeeper away: KRaft goes on, ZooKeeper catches up when it is back.
    rig.zk.stop()
    _create_topic_in_kraft(rig, "while-zk-is-away")
    lag = wait("a write-behind lag", lambda: rig.health().get("zk_write_behind_lag") or None, 30)
    assert lag > 0
    rig.zk.start()
    wait(
        "the topic created while ZooKeeper was away",
        lambda: rig.zk_get(znodes.topic_path("while-zk-is-away")),
        90,
    )
    wait("no write-behind lag", lambda: rig.health().get("zk_write_behind_lag") == 0 or None, 60)

    # A topic deleted by hand in ZooKeeper comes back after a controller restart (reconciliation).
    client = rig.kazoo()
    try:
        client.delete(znodes.topic_path("fresh"), recursive=True)
    finally:
        client.stop()
        client.close()
    rig.stop_controller()
    rig.start_controller()
    rig.wait_controller(driver="DUAL_WRITE")
    wait("fresh written back to ZooKeeper", lambda: rig.zk_get(znodes.partition_state_path("fresh", 0)), 60)

    # Brokers into KRaft mode: every replica they host gets its real directory.
    for b in rig.zk_cluster.brokers:
        rig.roll_kraft(b)
    for p in _partitions(rig.image()):
        assert MIGRATING not in p["directories"], p
    rig.produce("orders", [f"after-{i}" for i in range(100)])

    # Finalize: the controller without the migration configs writes POST_MIGRATION.
    rig.stop_controller()
    rig.start_controller(migration=False)
    rig.wait_controller(zk_state="POST_MIGRATION")
    rows = rig.consume("orders", 300)
    assert sorted(rows) == sorted([f"{w}-{i}" for w in ("before", "during", "after") for i in range(100)])
    run_kraftpy("metadata", "verify", str(rig.controller_meta / "__cluster_metadata-0"))
