"""The KRaft controller during a migration, without I/O: who may register, who is unfenced, and
where migrated replicas live until their brokers run in KRaft mode."""

from __future__ import annotations

from controller.migration.zk_metadata import ZkMetadata, begin_migration, end_migration, migration_records
from controller.zk.model import LeaderAndIsr, TopicAssignment
from kraftpy.metadata import ZkMigrationState
from protocol.errors import Errors
from protocol.uuid import MIGRATING, Uuid
from tests.controller.control_context import SESSION_TIMEOUT_MS, ControlTestContext

TOPIC = Uuid.random()


def migrating_cluster() -> ControlTestContext:
    ctx = ControlTestContext(zk_migration_enabled=True)
    assert ctx.core.m.features.zk_migration_state == ZkMigrationState.PRE_MIGRATION
    for b in (1, 2):
        assert ctx.register(b, (f"b{b}x", f"b{b}y"), migrating_zk_broker=True).response.ErrorCode == 0
    zk = ZkMetadata(
        topics={"orders": TopicAssignment(TOPIC, {0: (1, 2), 1: (2, 1)})},
        states={
            ("orders", 0): LeaderAndIsr(1, 3, (1, 2), 4, 5),
            ("orders", 1): LeaderAndIsr(2, 1, (2, 1), 4, 2),
        },
    )
    ctx.replay([begin_migration(), *migration_records(zk), *end_migration()])
    return ctx


def test_a_kraft_broker_is_refused_before_the_migration() -> None:
    ctx = ControlTestContext(zk_migration_enabled=True)
    result = ctx.register(7, ("a", "b"))
    assert result.response.ErrorCode == Errors.BROKER_ID_NOT_REGISTERED


def test_migrating_zookeeper_brokers_are_unfenced_with_migrating_replicas() -> None:
    ctx = migrating_cluster()
    assert ctx.partition("orders", 0).directories == (MIGRATING, MIGRATING)
    for b in (1, 2):
        assert ctx.heartbeat(b).response.IsFenced is False
    assert ctx.partition("orders", 0).leader == 1
    assert ctx.core.offline_partition_count() == 0
    assert ctx.core.m.replication.state() == ctx.replayed_from_empty().m.replication.state()


def test_migrating_replicas_count_as_online_for_leadership() -> None:
    """Broker 1 stops: the leader of orders-0 moves to broker 2, whose replica is MIGRATING."""
    ctx = migrating_cluster()
    for b in (1, 2):
        ctx.heartbeat(b)
    ctx.advance(SESSION_TIMEOUT_MS + 1)
    ctx.heartbeat(2)
    ctx.fence_stale()
    p = ctx.partition("orders", 0)
    assert (p.leader, p.isr) == (2, (2,))
    assert ctx.core.offline_partition_count() == 0


def test_a_broker_restarted_in_kraft_mode_stays_fenced_until_its_replicas_are_placed() -> None:
    ctx = migrating_cluster()
    for b in (1, 2):
        ctx.heartbeat(b)
    ctx.advance(SESSION_TIMEOUT_MS + 1)  # broker 1 stopped to restart in KRaft mode
    ctx.heartbeat(2)
    assert ctx.register(1, ("b1x", "b1y"), new_incarnation=True).response.ErrorCode == 0
    assert ctx.heartbeat(1).response.IsFenced is True
    ctx.assign(1, "b1x", [("orders", 0)])
    assert ctx.heartbeat(1).response.IsFenced is True, "one replica is still MIGRATING"
    ctx.assign(1, "b1y", [("orders", 1)])
    assert ctx.heartbeat(1).response.IsFenced is False
    assert ctx.partition("orders", 0).directories[0] == ctx.dir("b1x")
    assert ctx.partition("orders", 1).directories[1] == ctx.dir("b1y")
    assert ctx.partition("orders", 0).directories[1] == MIGRATING, "broker 2 still runs in ZooKeeper mode"


def test_the_log_of_a_migration_replays_to_the_same_state() -> None:
    ctx = migrating_cluster()
    for b in (1, 2):
        ctx.heartbeat(b)
    assert ctx.replayed_from_empty().state() == ctx.core.state()
