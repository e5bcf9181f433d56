"""A disk dies under a ZooKeeper broker in the middle of a migration, on real loop-device filesystems.

KIP-858's migration rules: a broker in migration mode shuts down on any dir failure, the KRaft
controller moves its leaderships, and when the broker comes back as a KRaft broker with the disk still
dead, its replicas on that disk are offline (LOST) while the others are placed in their real
directories; once the disk is healed every replica is placed. Production never loses an
acknowledged message.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from protocol.uuid import LOST, MIGRATING
from tests.system.helpers import more_acks, start_traffic, validate_clients, wait_exit
from tools.cluster.migrate import plan
from tools.cluster.migrate.runner import Migration

pytestmark = [pytest.mark.system, pytest.mark.real, pytest.mark.slow]

TOPIC = "migrating"
WAIT_S = 120.0


def test_a_dir_failure_on_a_migrating_broker(make_cluster, tmp_path: Path) -> None:
    cluster = make_cluster(brokers=3, dirs=2, zookeeper=True)
    cluster.create_topic(TOPIC, 6, 3, configs={"min.insync.replicas": "2"})
    producer = start_traffic(cluster, TOPIC, tmp_path / "acks.txt")
    migration = Migration(cluster, timeout=WAIT_S)
    for step in (plan.ADD_CONTROLLERS, plan.ROLL_BROKERS_MIGRATION, plan.WAIT_MIGRATION):
        migration.run(step, controllers=1)
    more_acks(producer, 50)

    # The disk under a leader, not the first one: that one holds the metadata log once the broker
    # runs in KRaft mode, and a KRaft broker cannot start without it (as in Kafka). The metadata
    # says MIGRATING for every replica of a ZooKeeper broker, so where one lives is read on disk.
    view = cluster.view()
    index = 1
    victim = next(
        p.leader
        for p in view.topic(TOPIC)
        if (Path(cluster.dir_plan(p.leader, index).path) / f"{TOPIC}-{p.partition}").is_dir()
    )
    failed_path = Path(cluster.dir_plan(victim, index).path)
    on_failed = {p.partition for p in view.topic(TOPIC) if (failed_path / f"{TOPIC}-{p.partition}").is_dir()}
    cluster.fail_dir(victim, index)
    wait_exit(cluster, victim)
    cluster.wait_until(
        lambda v: all(p.leader >= 0 and p.leader != victim for p in v.topic(TOPIC)),
        WAIT_S,
        f"leadership moved off the halted broker {victim}",
    )
    more_acks(producer, 50)

    # Back as a KRaft broker, the disk still dead.
    node = cluster.broker(victim)
    migration.set_broker_mode(node, plan.KRAFT)
    cluster.start_node(node.name)

    def placed(lost_expected: bool) -> bool:
        image = cluster.image()
        if image is None:
            return False
        reg = image.cluster.broker(victim)
        if reg is None or reg.is_migrating_zk_broker or reg.fenced:
            return False
        topic = image.topics.get_topic(TOPIC)
        for p, part in topic.partitions.items():
            d = part.directories[part.replicas.index(victim)]
            if d == MIGRATING:
                return False
            lost = d == LOST
            if lost != (lost_expected and p in on_failed):
                return False
        return True

    cluster.wait_until(lambda v: placed(True), WAIT_S, "the failed dir's replicas LOST, the others placed")
    more_acks(producer, 50)

    cluster.stop_node(node.name, timeout=30)
    cluster.heal_dir(victim, index, timeout=30)
    cluster.start_node(node.name)
    cluster.wait_until(lambda v: placed(False), WAIT_S, "every replica placed once the disk is healed")

    migration.run(plan.ROLL_BROKERS_KRAFT)
    migration.run(plan.FINALIZE)
    more_acks(producer, 50)
    validate_clients(cluster, TOPIC, producer)
