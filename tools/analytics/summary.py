"""What a run found, as one value: written to summary.json and returned by run_analysis."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(slots=True)
class DirFailure:
    broker_id: int
    directory: str
    offset: int
    timestamp: int
    affected_partitions: int
    leaders_lost: int
    unrecovered_partitions: int
    recovery_latency_ms: int | None  # None while some affected partition never had a leader again
    back_online_timestamp: int | None


@dataclass(slots=True)
class MigrationState:
    state: str  # a ZkMigrationState name
    offset: int
    timestamp: int


@dataclass(slots=True)
class MigrationCopy:
    """One "ZK Migration" transaction: the copy of ZooKeeper's metadata, or an attempt at it."""

    begin_offset: int
    begin_timestamp: int
    outcome: str  # committed, aborted, open (at log end) or unterminated (a new Begin came first)
    end_offset: int | None
    end_timestamp: int | None
    records: int  # between the markers
    record_types: dict[str, int]
    ms: int | None
    abort_reason: str | None = None


@dataclass(slots=True)
class MigrationRegistration:
    node_id: int
    registered_as: str  # a ZooKeeper broker in migration mode, a KRaft broker, or a controller
    offset: int
    timestamp: int


@dataclass(slots=True)
class MigratingBroker:
    broker_id: int
    replicas: int  # replicas that were ever MIGRATING on this broker
    still_migrating: int
    last_placed_timestamp: int | None  # when the last one got its real directory
    last_placed_offset: int | None


@dataclass(slots=True)
class Migration:
    """A ZooKeeper → KRaft migration (KIP-866) as the log tells it."""

    states: list[MigrationState]
    copies: list[MigrationCopy]
    registrations: list[MigrationRegistration]
    brokers: list[MigratingBroker]
    final_state: str
    still_migrating: int
    verdict: str

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Migration:
        return cls(
            states=[MigrationState(**x) for x in d["states"]],
            copies=[MigrationCopy(**x) for x in d["copies"]],
            registrations=[MigrationRegistration(**x) for x in d["registrations"]],
            brokers=[MigratingBroker(**x) for x in d["brokers"]],
            final_state=d["final_state"],
            still_migrating=d["still_migrating"],
            verdict=d["verdict"],
        )


def _replicas(n: int) -> str:
    return f"{n} replica" if n == 1 else f"{n} replicas"


def _placement(brokers: list[MigratingBroker]) -> str:
    still = [b for b in brokers if b.still_migrating]
    if not still:
        return "every replica on a real directory"
    if len(still) == 1:
        return f"{_replicas(still[0].still_migrating)} on broker {still[0].broker_id} still MIGRATING"
    per = ", ".join(f"{b.still_migrating} on broker {b.broker_id}" for b in still)
    return f"{_replicas(sum(b.still_migrating for b in still))} still MIGRATING ({per})"


def migration_verdict(
    states: list[MigrationState], copies: list[MigrationCopy], brokers: list[MigratingBroker]
) -> str:
    """One line: how far the migration got, and which brokers still have replicas with no real directory."""
    final = states[-1] if states else None
    committed = [c for c in copies if c.outcome == "committed"]
    unfinished = [c for c in copies if c.outcome == "open"]
    if final is not None and final.state == "POST_MIGRATION":
        return f"migration finalized at offset {final.offset}; {_placement(brokers)}"
    if committed:
        return f"in dual write since offset {committed[-1].end_offset}; {_placement(brokers)}"
    name = final.state if final is not None else "NONE"
    if unfinished:
        return f"{name}: the copy of ZooKeeper's metadata begun at offset {unfinished[-1].begin_offset} is still open"
    return f"{name}: ZooKeeper's metadata not copied yet"


@dataclass(slots=True)
class Summary:
    log_dir: str
    out: str
    master: str
    rebuild: bool = False
    rebuild_reason: str | None = None
    files_read: list[str] = field(default_factory=list)
    ranges: int = 0
    new_records: int = 0
    records: int = 0
    first_offset: int | None = None
    last_offset: int | None = None
    first_timestamp: int | None = None
    last_timestamp: int | None = None
    base_snapshot: dict[str, Any] | None = None
    record_types: dict[str, int] = field(default_factory=dict)
    corrupt_batches: list[dict[str, Any]] = field(default_factory=list)  # all skipped so far
    corrupt_this_run: int = 0
    excluded_transactions: int = 0
    open_transaction_seq: int | None = None
    brokers: int = 0
    topics: int = 0
    partitions: int = 0
    dir_failures: list[DirFailure] = field(default_factory=list)
    leaderless_partitions: int = 0  # partitions that were ever without a leader
    leaderless_total_ms: int = 0
    still_leaderless: int = 0
    dir_balance: list[dict[str, Any]] = field(default_factory=list)
    tables: dict[str, str] = field(default_factory=dict)
    report: str | None = None
    notices: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    # None for a cluster born in KRaft that never migrated.
    migration: Migration | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Summary:
        d = dict(d)
        d["dir_failures"] = [DirFailure(**f) for f in d.get("dir_failures", [])]
        if d.get("migration") is not None:
            d["migration"] = Migration.from_dict(d["migration"])
        return cls(**d)
