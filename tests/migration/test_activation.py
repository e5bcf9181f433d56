"""What a controller writes for the migration when it takes office on a log that has records."""

from __future__ import annotations

import pytest

from controller.core import ControllerConfig, QuorumControllerCore
from controller.core.bootstrap import MigrationConfigError
from controller.core.metadata_version import MV_3_9_IV0
from kraftpy.metadata import ZkMigrationState
from protocol import metadata_records as mr
from protocol.framing import ApiMessageAndVersion
from tests.migration.images import controller


def core(enabled: bool) -> QuorumControllerCore:
    return QuorumControllerCore(ControllerConfig(node_id=3000, cluster_id="c", zk_migration_enabled=enabled))


def booted(enabled_at_birth: bool, enabled_now: bool) -> tuple[QuorumControllerCore, int]:
    first = core(enabled_at_birth)
    records = first.bootstrap_records([], MV_3_9_IV0).records
    c = core(enabled_now)
    return c, c.replay_all(records, 0)


def state_record(state: ZkMigrationState) -> ApiMessageAndVersion:
    return ApiMessageAndVersion(mr.ZkMigrationStateRecord(ZkMigrationState=int(state)), 0)


def names(c: QuorumControllerCore) -> list[str]:
    return [type(r.message).__name__ for r in c.activation_records([], MV_3_9_IV0).records]


def test_an_empty_log_with_migration_enabled_starts_in_pre_migration() -> None:
    c, _ = booted(True, True)
    assert c.m.features.zk_migration_state == ZkMigrationState.PRE_MIGRATION


def test_migration_on_a_cluster_born_in_kraft_is_refused_with_kafkas_message() -> None:
    c, _ = booted(False, True)
    with pytest.raises(MigrationConfigError) as refused:
        c.activation_records([], MV_3_9_IV0)
    assert (
        str(refused.value)
        == "Should not have ZK migrations enabled on a cluster that was created in KRaft mode."
    )


def test_taking_the_setting_away_finalizes() -> None:
    c, offset = booted(True, False)
    c.replay_all([state_record(ZkMigrationState.MIGRATION)], offset)
    result = c.activation_records([], MV_3_9_IV0)
    assert [r.message.ZkMigrationState for r in result.records] == [int(ZkMigrationState.POST_MIGRATION)]
    assert result.is_atomic


def test_staying_in_migration_or_after_it_writes_nothing() -> None:
    c, offset = booted(True, True)
    assert names(c) == []
    c.replay_all([state_record(ZkMigrationState.MIGRATION)], offset)
    assert names(c) == []
    c.replay_all([state_record(ZkMigrationState.POST_MIGRATION)], offset + 1)
    assert names(c) == []


def test_a_copy_cut_by_a_failover_is_aborted_and_not_finalized() -> None:
    """The copy's own MIGRATION record was replayed, but its transaction never ended: the abort
    takes the cluster back to PRE_MIGRATION, so nothing is finalized even with the setting gone."""
    c, offset = booted(True, False)
    c.replay_all(
        [
            ApiMessageAndVersion(mr.BeginTransactionRecord(Name="ZK Migration"), 0),
            ApiMessageAndVersion(controller(3001), 0),
            state_record(ZkMigrationState.MIGRATION),
        ],
        offset,
    )
    assert names(c) == ["AbortTransactionRecord"]
