"""The Spark job on a ZooKeeper → KRaft migration: states, the copy, and MIGRATING replicas placed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.analytics.conftest import table
from tools.analytics.job import MIGRATION_TABLES, REPORT_FILE, SUMMARY_FILE
from tools.analytics.synthetic import (
    LogWriter,
    migration_batches,
    write_dir_failure_log_from_snapshot,
    write_migration_log,
)
from tools.analytics.tables import CONTROLLER_READY, KRAFT_BROKER, MIGRATING, ZK_BROKER
from tools.cli.main import main as kraftpy_main

pytestmark = [pytest.mark.spark, pytest.mark.real]


def _analyze(tmp_path: Path, *extra: str) -> tuple[Path, dict[str, Any]]:
    out = tmp_path / "out"
    assert kraftpy_main(["analyze", str(tmp_path / "meta"), "--out", str(out), *extra]) == 0
    return out, json.loads((out / SUMMARY_FILE).read_text())["migration"]


def _write_until(tmp_path: Path, last_ms: int) -> Any:
    """The story's log as it stood at `last_ms`."""
    batches, story = migration_batches()
    LogWriter(tmp_path / "meta" / "__cluster_metadata-0").append_all(
        [(ts, recs) for ts, recs in batches if ts <= story.t0 + last_ms]
    )
    return story


def _migrating_counts(spark: Any, out: Path) -> dict[int, list[tuple[int, int]]]:
    counts: dict[int, list[tuple[int, int]]] = {}
    for r in table(spark, out, "migrating_timeline").orderBy("broker_id", "seq").collect():
        counts.setdefault(r["broker_id"], []).append((r["offset"], r["migrating"]))
    return counts


def test_a_migration_in_the_log(spark: Any, tmp_path: Path) -> None:
    story = write_migration_log(tmp_path / "meta")
    out, m = _analyze(tmp_path)
    assert [s["state"] for s in m["states"]] == ["PRE_MIGRATION", "MIGRATION", "POST_MIGRATION"]
    aborted, committed = m["copies"]
    assert (aborted["outcome"], aborted["abort_reason"]) == ("aborted", "Controller failover")
    assert aborted["record_types"] == story.aborted_record_types
    assert committed["outcome"] == "committed"
    assert (committed["begin_offset"], committed["end_offset"]) == (story.copy_begin_offset, story.copy_end_offset)
    assert committed["records"] == story.copy_records
    assert committed["record_types"] == story.copy_record_types
    assert committed["ms"] == committed["end_timestamp"] - committed["begin_timestamp"] == 3
    assert [(r["node_id"], r["registered_as"]) for r in m["registrations"]] == [
        (story.controller_id, CONTROLLER_READY), (1, ZK_BROKER), (2, ZK_BROKER), (1, KRAFT_BROKER), (2, KRAFT_BROKER),
    ]
    brokers = {b["broker_id"]: b for b in m["brokers"]}
    assert {b: (x["replicas"], x["still_migrating"]) for b, x in brokers.items()} == {1: (3, 0), 2: (3, 0)}
    assert {b: x["last_placed_timestamp"] for b, x in brokers.items()} == story.placed_ms
    assert m["verdict"] == f"migration finalized at offset {m['states'][-1]['offset']}; every replica on a real directory"

    # Up to 3 as the copy creates them, each broker's count falls to 0 only when that broker places its own.
    counts = _migrating_counts(spark, out)
    for broker, steps in counts.items():
        assert max(n for _, n in steps) == 3
        assert steps[-1] == (brokers[broker]["last_placed_offset"], 0)
    assert counts[1][-1][0] < counts[2][-1][0]
    assert table(spark, out, "migration").filter("event = 'state'").count() == 3
    assert table(spark, out, "dir_balance").filter(f"directory = '{MIGRATING}'").count() == 0
    report = (out / REPORT_FILE).read_text()
    section = report[report.index("<h2>ZooKeeper migration</h2>"):]
    section = section[: section.index("<h2>", 4)]
    assert m["verdict"] in section and "committed" in section and "aborted (Controller failover)" in section
    assert "ProducerIdsRecord 1" in section and "MIGRATING replicas per broker" in section and "<svg" in section


def test_in_dual_write_the_zookeeper_brokers_migrating_replicas_are_online(spark: Any, tmp_path: Path) -> None:
    """The log as it stands before any broker restarted in KRaft mode: every replica is MIGRATING on
    multi-dir brokers, and online, since they are ZooKeeper brokers in migration (one rule)."""
    story = _write_until(tmp_path, 2003)
    out, m = _analyze(tmp_path, "--no-report")
    assert m["verdict"] == (
        f"in dual write since offset {story.copy_end_offset}; 6 replicas still MIGRATING (3 on broker 1, 3 on broker 2)"
    )
    assert {b: steps[-1][1] for b, steps in _migrating_counts(spark, out).items()} == {1: 3, 2: 3}
    rows = table(spark, out, "dir_balance").collect()
    assert {(r["broker_id"], r["directory"], r["online"]) for r in rows} == {
        (1, MIGRATING, True),
        (2, MIGRATING, True),
    }


def test_a_copy_still_open_at_log_end_is_held_back(spark: Any, tmp_path: Path) -> None:
    story = _write_until(tmp_path, 2002)
    out, m = _analyze(tmp_path, "--no-report")
    assert [c["outcome"] for c in m["copies"]] == ["aborted", "open"]
    assert m["copies"][1]["end_offset"] is None and m["copies"][1]["records"] == story.copy_records - 1
    assert [s["state"] for s in m["states"]] == ["PRE_MIGRATION"]
    assert m["brokers"] == [] and table(spark, out, "migrating_timeline").count() == 0
    assert m["verdict"] == (
        f"PRE_MIGRATION: the copy of ZooKeeper's metadata begun at offset {story.copy_begin_offset} is still open"
    )


def test_a_cluster_born_in_kraft_has_no_migration_section(spark: Any, tmp_path: Path) -> None:
    write_dir_failure_log_from_snapshot(tmp_path / "meta")
    out, m = _analyze(tmp_path)
    assert m is None
    assert "ZooKeeper migration" not in (out / REPORT_FILE).read_text()
    assert not any((out / t).exists() for t in MIGRATION_TABLES)
