"""The migration's one-line verdict, from the summary's parts alone (no Spark)."""

from __future__ import annotations

from tools.analytics.summary import MigratingBroker, MigrationCopy, MigrationState, migration_verdict


def _copy(outcome: str, begin: int, end: int | None) -> MigrationCopy:
    return MigrationCopy(
        begin_offset=begin, begin_timestamp=0, outcome=outcome, end_offset=end, end_timestamp=None,
        records=0, record_types={}, ms=None,
    )


def _broker(broker_id: int, still: int) -> MigratingBroker:
    return MigratingBroker(broker_id, replicas=12, still_migrating=still, last_placed_timestamp=None,
                           last_placed_offset=None)


def test_dual_write_names_the_brokers_still_migrating() -> None:
    states = [MigrationState("PRE_MIGRATION", 1, 0), MigrationState("MIGRATION", 40, 0)]
    copies = [_copy("committed", 10, 41)]
    assert migration_verdict(states, copies, [_broker(1, 0), _broker(2, 12)]) == (
        "in dual write since offset 41; 12 replicas on broker 2 still MIGRATING"
    )
    assert migration_verdict(states, copies, [_broker(1, 1), _broker(2, 12)]) == (
        "in dual write since offset 41; 13 replicas still MIGRATING (1 on broker 1, 12 on broker 2)"
    )


def test_finalized_with_a_replica_left_migrating() -> None:
    states = [MigrationState("MIGRATION", 40, 0), MigrationState("POST_MIGRATION", 90, 0)]
    assert migration_verdict(states, [_copy("committed", 10, 41)], [_broker(3, 1)]) == (
        "migration finalized at offset 90; 1 replica on broker 3 still MIGRATING"
    )


def test_before_the_copy() -> None:
    states = [MigrationState("PRE_MIGRATION", 1, 0)]
    assert migration_verdict(states, [], []) == "PRE_MIGRATION: ZooKeeper's metadata not copied yet"
    assert migration_verdict(states, [_copy("aborted", 5, 9)], []) == (
        "PRE_MIGRATION: ZooKeeper's metadata not copied yet"
    )
    assert migration_verdict(states, [_copy("aborted", 5, 9), _copy("open", 10, None)], []) == (
        "PRE_MIGRATION: the copy of ZooKeeper's metadata begun at offset 10 is still open"
    )
