"""What a run found, as one value: written to summary.json and returned by run_analysis."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(slots=True)
class DirFailure:
    """One dir going offline in the metadata (a BrokerRegistrationChangeRecord without it), and what it did.

    Leaders are counted from the partition states before the failure's record group (its batch): the
    controller writes the PartitionChangeRecords that move leadership off the dir before the
    registration change, in the same batch."""

    broker_id: int
    directory: str
    offset: int
    timestamp: int  # the failure record's: its batch's append time on the controller
    affected_partitions: int  # partitions with a replica in the dir
    leaders_lost: int  # of those, led by the failed replica before the failure's batch
    unrecovered_partitions: int
    recovery_latency_ms: int | None  # until all had a leader again; None while one never did
    back_online_timestamp: int | None
    group_start_offset: int | None = None  # first offset of the failure's batch (its record group)
    partitions_with_new_leader: int = 0  # affected partitions that got another leader
    leader_moves: int = 0
    last_leader_move_ms: int | None = None  # from the failure record
    isr_shrunk: int = 0  # affected partitions whose ISR lost the failed replica
    not_in_sync: int = 0  # of those, not in sync again at log end
    back_in_sync_ms: int | None = None  # until the last leader move or ISR restoration it caused
    min_isr_known: bool = False
    under_min_isr_partitions: int = 0
    under_min_isr_ms: int | None = None  # the longest one partition stayed under; None when unknown
    detected_timestamp: int | None = None  # the broker's "log dir failed" line, when its log was found
    path: str | None = None  # the dir's path and label, when known (see Summary.dir_names_source)
    label: str | None = None
    leaders_per_broker: dict[str, dict[str, int]] = field(default_factory=dict)  # point -> broker -> n
    events: list[dict[str, Any]] = field(default_factory=list)  # the timeline, in order


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
    leaderless_partitions: int = 0  # partitions that were ever without a leader (creation waits aside)
    leaderless_total_ms: int = 0
    still_leaderless: int = 0
    # Partitions created without a leader (waiting for their first); only a wait over the grace
    # counts in leaderless_partitions too.
    waiting_for_first_leader: int = 0
    first_leader_longest_ms: int | None = None
    first_leader_grace_ms: int = 0
    broker_restarts: list[dict[str, Any]] = field(default_factory=list)
    # directory id -> {"path", "label", "broker"}: from --dirs or the cluster's work dir (the metadata
    # log knows ids only); dir_names_source says where they came from.
    dirs: dict[str, dict[str, Any]] = field(default_factory=dict)
    dir_names_source: str | None = None
    min_isr_source: str | None = None
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
