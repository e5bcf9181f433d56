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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Summary:
        d = dict(d)
        d["dir_failures"] = [DirFailure(**f) for f in d.get("dir_failures", [])]
        return cls(**d)
