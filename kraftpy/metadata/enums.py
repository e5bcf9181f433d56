"""Numbered values that records carry: config resource types and the ZooKeeper migration state."""

from __future__ import annotations

from enum import IntEnum


class ConfigResourceType(IntEnum):
    """Kafka's ConfigResource.Type ids as written in ConfigRecord.ResourceType."""

    UNKNOWN = 0
    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8
    CLIENT_METRICS = 16
    GROUP = 32


class ZkMigrationState(IntEnum):
    """ZkMigrationStateRecord values (3.5 and later numbering)."""

    NONE = 0
    MIGRATION = 1
    PRE_MIGRATION = 2
    POST_MIGRATION = 3
    ZK = 4
