"""The migration driver, scripted: what it asks for, state by state, with no ZooKeeper and no log."""

from __future__ import annotations

from controller.migration.driver import (
    ClaimController,
    CopyZkToKRaft,
    DualWrite,
    MigrationDriver,
    MigrationDriverState,
    RecoverMigrationState,
    SendFullRequests,
    SyncKRaftToZk,
)
from kraftpy.metadata import ZkMigrationState
from protocol import metadata_records as mr
from protocol.uuid import Uuid
from tests.migration.images import build, controller, migration_state, pre_migration, zk_broker

S = MigrationDriverState


def leading_driver(voters: tuple[int, ...] = (3000,)) -> MigrationDriver:
    d = MigrationDriver(3000, voters)
    d.on_leadership(True, 5)
    return d


def recovered(d: MigrationDriver, done: bool = False) -> None:
    action = d.poll(0)
    assert action == RecoverMigrationState(5)
    d.done(action, done)


def test_a_standby_does_nothing() -> None:
    d = MigrationDriver(3000, [3000])
    d.on_leadership(False, 5)
    d.on_image(pre_migration())
    assert d.poll(0) is None
    assert d.state is S.INACTIVE


def test_a_cluster_born_in_kraft_or_finalized_is_left_alone() -> None:
    for state in (ZkMigrationState.NONE, ZkMigrationState.POST_MIGRATION):
        d = leading_driver()
        d.on_image(
            build([mr.FeatureLevelRecord(Name="metadata.version", FeatureLevel=21), migration_state(state)])
        )
        assert d.poll(0) is None
        assert d.state is S.INACTIVE


def test_the_whole_way_to_dual_write() -> None:
    d = leading_driver((3000, 3001))
    image = pre_migration((3000,))
    d.on_image(image)
    d.on_zk_brokers({1, 2})
    recovered(d)
    assert d.poll(0) is None
    assert d.state is S.WAIT_FOR_CONTROLLER_QUORUM
    assert "3001" in d.waiting_for

    image = build([controller(3001)], image)
    d.on_image(image)
    assert d.poll(0) is None
    assert d.state is S.WAIT_FOR_BROKERS
    assert d.waiting_for == "No brokers are known to KRaft, waiting for brokers to register."

    image = build([zk_broker(1)], image)
    d.on_image(image)
    d.on_leadership(True, 5)  # a new term forgets what ZooKeeper said
    recovered(d)
    assert d.poll(0) is None
    assert d.state is S.WAIT_FOR_BROKERS
    assert d.waiting_for == "reading the brokers ZooKeeper knows"
    d.on_zk_brokers({1, 2})
    assert d.poll(0) is None
    assert "[2]" in d.waiting_for

    image = build([zk_broker(2)], image)
    d.on_image(image)
    claim = d.poll(0)
    assert claim == ClaimController(5)
    assert d.state is S.BECOME_CONTROLLER
    d.done(claim, 7)

    copy = d.poll(0)
    assert copy == CopyZkToKRaft(5, 7)
    d.done(copy, 42)
    assert d.state is S.KRAFT_CONTROLLER_TO_BROKER_COMM
    assert d.poll(0) is None, "nothing is sent before the copy is in the committed image"

    image = build([migration_state(ZkMigrationState.MIGRATION)], image)
    d.on_image(image)
    full = d.poll(0)
    assert isinstance(full, SendFullRequests) and full.image is image and full.zk_controller_epoch == 7
    d.done(full)
    assert d.state is S.DUAL_WRITE
    assert d.poll(0) is None

    later = build([mr.TopicRecord(Name="t", TopicId=Uuid.random())], image)
    d.on_image(later)
    assert d.write_behind_lag() == 1
    write = d.poll(0)
    assert write == DualWrite(5, 7, image, later)
    d.done(write)
    assert d.write_behind_lag() == 0
    assert d.poll(0) is None


def test_one_action_at_a_time() -> None:
    d = leading_driver()
    d.on_image(pre_migration())
    action = d.poll(0)
    assert action is not None
    assert d.poll(0) is None


def test_a_failed_step_is_retried_after_a_backoff() -> None:
    d = leading_driver()
    image = build([zk_broker(1)], pre_migration())
    d.on_image(image)
    d.on_zk_brokers({1})
    recovered(d)
    claim = d.poll(0)
    assert isinstance(claim, ClaimController)
    d.failed(claim, "ZooKeeper unreachable", now_ms=100)
    assert d.poll(500) is None
    assert "ZooKeeper unreachable" in d.waiting_for
    assert d.poll(1100) == ClaimController(5)


def test_an_answer_from_an_earlier_term_is_dropped() -> None:
    d = leading_driver()
    image = build([zk_broker(1)], pre_migration())
    d.on_image(image)
    d.on_zk_brokers({1})
    recovered(d)
    claim = d.poll(0)
    assert claim is not None
    d.on_leadership(True, 6)
    d.done(claim, 9)
    assert d.zk_controller_epoch == -1
    assert d.state is S.INACTIVE
    assert d.poll(0) == RecoverMigrationState(6)


def test_after_the_copy_a_new_leader_reconciles_instead_of_copying() -> None:
    d = leading_driver()
    image = build([zk_broker(1), migration_state(ZkMigrationState.MIGRATION)], pre_migration())
    d.on_image(image)
    d.on_zk_brokers({1, 5})  # broker 5 is gone: WAIT_FOR_BROKERS is skipped after the copy
    recovered(d, done=True)
    claim = d.poll(0)
    assert claim == ClaimController(5)
    d.done(claim, 8)
    sync = d.poll(0)
    assert sync == SyncKRaftToZk(5, 8, image)
    d.done(sync)
    assert d.state is S.KRAFT_CONTROLLER_TO_BROKER_COMM
    later = build([mr.TopicRecord(Name="t", TopicId=Uuid.random())], image)
    d.on_image(later)
    catch_up = d.poll(0)
    assert catch_up == DualWrite(5, 8, image, later), (
        "changes made meanwhile are written before the full requests"
    )
    d.done(catch_up)
    assert isinstance(d.poll(0), SendFullRequests)


def test_finalizing_stops_the_dual_write() -> None:
    d = leading_driver()
    image = build([zk_broker(1), migration_state(ZkMigrationState.MIGRATION)], pre_migration())
    d.on_image(image)
    recovered(d, done=True)
    d.done(d.poll(0), 8)  # type: ignore[arg-type]
    d.done(d.poll(0))  # type: ignore[arg-type]
    d.done(d.poll(0))  # type: ignore[arg-type]
    assert d.state is S.DUAL_WRITE
    d.on_image(build([migration_state(ZkMigrationState.POST_MIGRATION)], image))
    assert d.poll(0) is None
    assert d.state is S.INACTIVE


def test_a_copy_recorded_in_zookeeper_but_not_in_this_log_is_made_again() -> None:
    """/migration says an earlier quorum copied (then was rolled back and replaced): the new quorum
    must copy again, never reconcile ZooKeeper with its own empty image."""
    d = leading_driver()
    d.on_image(build([zk_broker(1)], pre_migration()))
    d.on_zk_brokers({1})
    recovered(d, done=True)
    claim = d.poll(0)
    assert claim == ClaimController(5)
    d.done(claim, 8)
    assert d.poll(0) == CopyZkToKRaft(5, 8)
