"""The records a brand-new cluster's first active controller writes (Kafka's ActivationRecordsGenerator).

The bootstrap records (from bootstrap.checkpoint: the metadata.version FeatureLevelRecord and any
others) go in a metadata transaction when the version supports transactions, followed by
ZkMigrationStateRecord(NONE) when it knows migrations; all in one atomic batch.
"""

from __future__ import annotations

from collections.abc import Sequence

import structlog

from controller.core.metadata_version import FEATURE_NAME, MV_3_3_IV0, MV_3_4_IV0, MV_3_6_IV1
from controller.core.result import ControllerResult
from kraftpy.metadata import ZkMigrationState
from protocol.framing import ApiMessageAndVersion
from protocol.metadata_records import (
    AbortTransactionRecord,
    BeginTransactionRecord,
    EndTransactionRecord,
    FeatureLevelRecord,
    ZkMigrationStateRecord,
)

log = structlog.get_logger(__name__)

BOOTSTRAP_TRANSACTION_NAME = "Bootstrap records"


def bootstrap_records(
    bootstrap: Sequence[ApiMessageAndVersion], metadata_version: int, *, zk_migration_enabled: bool = False
) -> ControllerResult[None]:
    if metadata_version < MV_3_3_IV0:
        raise ValueError(
            f"metadata.version {metadata_version} is below the lowest bootstrap level {MV_3_3_IV0}"
        )
    body = list(bootstrap)
    has_mv = any(isinstance(r.message, FeatureLevelRecord) and r.message.Name == FEATURE_NAME for r in body)
    if not has_mv:
        body.insert(
            0, ApiMessageAndVersion(FeatureLevelRecord(Name=FEATURE_NAME, FeatureLevel=metadata_version), 0)
        )
    if metadata_version >= MV_3_4_IV0:
        state = ZkMigrationState.PRE_MIGRATION if zk_migration_enabled else ZkMigrationState.NONE
        body.append(ApiMessageAndVersion(ZkMigrationStateRecord(ZkMigrationState=int(state)), 0))
    if metadata_version >= MV_3_6_IV1:
        body.insert(0, ApiMessageAndVersion(BeginTransactionRecord(Name=BOOTSTRAP_TRANSACTION_NAME), 0))
        body.append(ApiMessageAndVersion(EndTransactionRecord(), 0))
    return ControllerResult.atomic_of(body, None)


class MigrationConfigError(Exception):
    """The migration setting contradicts the log: the controller must not take office (Kafka halts)."""


def migration_activation_records(
    state: ZkMigrationState, zk_migration_enabled: bool, metadata_version: int
) -> list[ApiMessageAndVersion]:
    """What a controller activating on a non-empty log writes for the migration (Kafka 3.9's
    ActivationRecordsGenerator): finalizing is taking the migration setting away."""
    if metadata_version < MV_3_4_IV0:
        if zk_migration_enabled:
            raise MigrationConfigError(
                f"Should not have ZK migrations enabled on a cluster running metadata.version {metadata_version}"
            )
        return []
    if state == ZkMigrationState.NONE and zk_migration_enabled:
        raise MigrationConfigError(
            "Should not have ZK migrations enabled on a cluster that was created in KRaft mode."
        )
    if state == ZkMigrationState.MIGRATION and not zk_migration_enabled:
        log.info(
            "Completing the ZK migration since this controller was configured with "
            "'zookeeper.metadata.migration.enable' set to 'false'."
        )
        return [
            ApiMessageAndVersion(
                ZkMigrationStateRecord(ZkMigrationState=int(ZkMigrationState.POST_MIGRATION)), 0
            )
        ]
    if state == ZkMigrationState.POST_MIGRATION and zk_migration_enabled:
        log.info(
            "Ignoring 'zookeeper.metadata.migration.enable' since ZK migration has already been completed."
        )
    return []


def abort_transaction_record(reason: str) -> ApiMessageAndVersion:
    return ApiMessageAndVersion(AbortTransactionRecord(Reason=reason), 0)
