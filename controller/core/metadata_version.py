"""metadata.version feature levels the controller cares about, and the record versions they select.

Levels are Kafka's (MetadataVersion.java); reference section 6 and 2.1.
"""

from __future__ import annotations

FEATURE_NAME = "metadata.version"

MV_3_0_IV1 = 1  # the lowest KRaft level; assumed for a broker that sends no metadata.version range
MV_3_2_IV0 = 3  # LeaderRecoveryState
MV_3_3_IV0 = 4  # the lowest level bootstrap accepts
MV_3_3_IV1 = 5  # NoOpRecord
MV_3_3_IV2 = 6  # BrokerRegistrationChangeRecord replaces Fence/UnfenceBrokerRecord
MV_3_3_IV3 = 7  # InControlledShutdown
MV_3_4_IV0 = 8  # ZooKeeper migration
MV_3_5_IV2 = 11  # SCRAM credentials in the metadata log (KIP-554 under KRaft)
MV_3_6_IV0 = 12  # an ISR shrink no longer bumps the leader epoch
MV_3_6_IV1 = 13  # metadata transactions
MV_3_7_IV0 = 15  # controller registration
MV_3_7_IV2 = 17  # directory assignment (JBOD, KIP-858)
MV_3_9_IV0 = 21  # the latest production level in 3.9
MV_4_0_IV0 = 22  # eligible leader replicas

LATEST_PRODUCTION = MV_3_9_IV0


def is_directory_assignment_supported(level: int) -> bool:
    return level >= MV_3_7_IV2


def is_scram_supported(level: int) -> bool:
    return level >= MV_3_5_IV2


def register_broker_record_version(level: int) -> int:
    if level >= MV_3_7_IV2:
        return 3
    if level >= MV_3_4_IV0:
        return 2
    if level >= MV_3_3_IV3:
        return 1
    return 0


def partition_record_version(level: int) -> int:
    """PartitionRecord and PartitionChangeRecord share their version rule."""
    if level >= MV_4_0_IV0:
        return 2
    if level >= MV_3_7_IV2:
        return 1
    return 0
