"""Finalized features (metadata.version above all) and the ZooKeeper migration state."""

from __future__ import annotations

from typing import Any

from controller.core.metadata_version import FEATURE_NAME, MV_3_0_IV1
from kraftpy.metadata import ZkMigrationState


class FeatureControlManager:
    def __init__(self) -> None:
        self.finalized: dict[str, int] = {}
        self.zk_migration_state = ZkMigrationState.NONE

    @property
    def metadata_version(self) -> int:
        # Before the bootstrap records are replayed Kafka assumes the lowest KRaft level.
        return self.finalized.get(FEATURE_NAME, MV_3_0_IV1)

    @property
    def metadata_version_known(self) -> bool:
        return FEATURE_NAME in self.finalized

    def replay_feature_level(self, record: Any) -> None:
        if record.FeatureLevel == 0:
            if record.Name == FEATURE_NAME:
                raise ValueError("metadata.version cannot be set to 0")
            self.finalized.pop(record.Name, None)
        else:
            self.finalized[record.Name] = record.FeatureLevel

    def replay_zk_migration_state(self, record: Any) -> None:
        self.zk_migration_state = ZkMigrationState(record.ZkMigrationState)

    def state(self) -> tuple[object, ...]:
        return (dict(self.finalized), self.zk_migration_state)

    def snapshot(self) -> tuple[dict[str, int], ZkMigrationState]:
        return dict(self.finalized), self.zk_migration_state

    def restore(self, snapshot: tuple[dict[str, int], ZkMigrationState]) -> None:
        self.finalized, self.zk_migration_state = snapshot
