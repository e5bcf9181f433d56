"""Finalized feature levels (metadata.version and the others) and the ZooKeeper migration state.

Like Kafka's FeaturesImage, the migration state lives here because both come from the
bootstrap records and both gate what the controller may write.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar

from kraftpy.metadata import MetadataReplayError, ZkMigrationState

METADATA_VERSION = "metadata.version"
KRAFT_VERSION = "kraft.version"

# metadata.version feature levels that change what an image writes (reference section 6)
MV_MIGRATION = 8  # 3.4-IV0: ZkMigrationStateRecord
MV_CONTROLLER_REGISTRATION = 15  # 3.7-IV0: RegisterControllerRecord
MV_DIRECTORY_ASSIGNMENT = 17  # 3.7-IV2: JBOD, Directories and LogDirs


def _frozen(d: Mapping[str, int]) -> Mapping[str, int]:
    return MappingProxyType(dict(sorted(d.items())))


@dataclass(frozen=True)
class FeaturesImage:
    """`finalized_versions` holds every feature but metadata.version, which has its own field."""

    metadata_version: int | None = None
    finalized_versions: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    zk_migration_state: ZkMigrationState = ZkMigrationState.NONE

    EMPTY: ClassVar[FeaturesImage]

    def is_empty(self) -> bool:
        return (
            self.metadata_version is None
            and not self.finalized_versions
            and self.zk_migration_state == ZkMigrationState.NONE
        )

    def level(self, name: str) -> int:
        """A feature's finalized level; 0 when it was never set."""
        if name == METADATA_VERSION:
            return self.metadata_version or 0
        return self.finalized_versions.get(name, 0)


FeaturesImage.EMPTY = FeaturesImage()


class FeaturesDelta:
    def __init__(self, image: FeaturesImage) -> None:
        self.image = image
        self.metadata_version_change: int | None = None
        self.changes: dict[str, int | None] = {}
        self.zk_migration_state_change: ZkMigrationState | None = None

    def replay_feature_level(self, rec: Any) -> None:
        if rec.Name == METADATA_VERSION:
            self.metadata_version_change = rec.FeatureLevel
        else:
            # level 0 removes the feature
            self.changes[rec.Name] = rec.FeatureLevel or None

    def replay_zk_migration_state(self, rec: Any) -> None:
        try:
            self.zk_migration_state_change = ZkMigrationState(rec.ZkMigrationState)
        except ValueError:
            raise MetadataReplayError(f"invalid ZkMigrationState {rec.ZkMigrationState}") from None

    def apply(self) -> FeaturesImage:
        versions = dict(self.image.finalized_versions)
        for name, level in self.changes.items():
            if level is None:
                versions.pop(name, None)
            else:
                versions[name] = level
        mv = (
            self.image.metadata_version
            if self.metadata_version_change is None
            else self.metadata_version_change
        )
        zk = self.image.zk_migration_state
        if self.zk_migration_state_change is not None:
            zk = self.zk_migration_state_change
        return FeaturesImage(metadata_version=mv, finalized_versions=_frozen(versions), zk_migration_state=zk)
