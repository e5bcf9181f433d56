"""The records a brand-new cluster's first active controller writes (Kafka's ActivationRecordsGenerator).

The bootstrap records (from bootstrap.checkpoint: the metadata.version FeatureLevelRecord and any
others) go in a metadata transaction when the version supports transactions, followed by
ZkMigrationStateRecord(NONE) when it knows migrations; all in one atomic batch.
"""

from __future__ import annotations

from collections.abc import Sequence

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


def abort_transaction_record(reason: str) -> ApiMessageAndVersion:
    return ApiMessageAndVersion(AbortTransactionRecord(Reason=reason), 0)
