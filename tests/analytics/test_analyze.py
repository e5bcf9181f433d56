"""`kraftpy analyze` end to end on one local Spark: real Kafka logs, a dir failure, reruns, corruption."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kraftpy.image import MetadataDelta, MetadataImage
from protocol.record_batch import iter_batch_positions, iter_batches, metadata_records
from tests.analytics.conftest import assert_self_contained, table
from tools.analytics.job import DERIVED_TABLES, RECORDS, REPORT_FILE, SUMMARY_FILE
from tools.analytics.logdir import list_log_files
from tools.analytics.summary import Summary
from tools.analytics.synthetic import (
    LogWriter,
    dir_failure_batches,
    write_dir_failure_log_from_snapshot,
)
from tools.cli.main import main as kraftpy_main

pytestmark = [pytest.mark.spark, pytest.mark.real]

SAMPLES = ("flink-on-prem_cp7.6.0", "otus_kafka_HW02_d9e6ebb", "otus_kafka_main_b4c7710", "LDI-POC_16c4da1")
LDI_DIR = "XHhkr4tkSsD900pOQ8pPfg"


def analyze(*args: str) -> int:
    return kraftpy_main(["analyze", *map(str, args)])


def summary_of(out: Path) -> Summary:
    return Summary.from_dict(json.loads((out / SUMMARY_FILE).read_text()))


@pytest.fixture(scope="module")
def analyzed(spark: Any, samples_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """Each real sample analysed once (read in place), shared by the tests of this module."""
    done: dict[str, Path] = {}

    def get(name: str) -> Path:
        if name not in done:
            out = tmp_path_factory.mktemp(name.split("_")[0]) / "out"
            assert analyze(samples_dir / name, "--out", out, "--no-report") == 0
            done[name] = out
        return done[name]

    return get


def replay_with_image(log_dir: Path) -> MetadataImage:
    """The state our image code reaches from the same segments: the reference for the Spark replay."""
    delta = MetadataDelta(MetadataImage.EMPTY, strict=False)
    for seg in list_log_files(log_dir).segments:
        for batch in iter_batches(seg.path.read_bytes()):
            if batch.is_control:
                continue
            for i, rec in enumerate(metadata_records(batch)):
                delta.replay(rec, batch.base_offset + i)
    return delta.apply()


@pytest.mark.parametrize("name", SAMPLES)
def test_real_kafka_log_gives_every_table_and_the_image_state(
    name: str, analyzed: Callable[[str], Path], spark: Any, samples_dir: Path
) -> None:
    out = analyzed(name)
    for t in (RECORDS, *DERIVED_TABLES):
        assert (out / t).is_dir(), t
    s = summary_of(out)
    decoded = sum(len(b.records) for seg in list_log_files(samples_dir / name).segments
                  for b in iter_batches(seg.path.read_bytes()))
    assert s.records == decoded == table(spark, out, RECORDS).count()
    assert s.corrupt_batches == [] and s.dir_failures == []

    image = replay_with_image(samples_dir / name)
    latest = {
        (r["topic_id"], r["partition_id"]): r
        for r in table(spark, out, "partitions").filter("end_seq IS NULL AND NOT deleted").collect()
    }
    expected = {(str(tp.topic_id), tp.partition): p for tp, p in image.topics.partitions()}
    assert latest.keys() == expected.keys()
    for key, p in expected.items():
        row = latest[key]
        assert (row["replicas"], row["isr"], row["leader"]) == (list(p.replicas), list(p.isr), p.leader), key
        assert (row["leader_epoch"], row["partition_epoch"]) == (p.leader_epoch, p.partition_epoch), key
        assert row["directories"] == [str(d) for d in p.directories], key
    assert s.partitions == len(expected)
    assert s.brokers == table(spark, out, "brokers").select("broker_id").distinct().count()


def test_ldi_poc_every_replica_is_in_its_one_directory(analyzed: Callable[[str], Path], spark: Any) -> None:
    out = analyzed("LDI-POC_16c4da1")
    latest = table(spark, out, "partitions").filter("end_seq IS NULL AND NOT deleted").collect()
    assert len(latest) == 54
    assert {d for r in latest for d in r["directories"]} == {LDI_DIR}
    balance = table(spark, out, "dir_balance").collect()
    assert [(r["broker_id"], r["directory"], r["replicas"]) for r in balance] == [(1, LDI_DIR, 54)]
    current_dirs = table(spark, out, "replica_dirs").filter("current").select("directory").distinct().collect()
    assert [r["directory"] for r in current_dirs] == [LDI_DIR]


def test_dir_failure_recovery_latency_and_incremental_rerun(tmp_path: Path, spark: Any) -> None:
    phases, story = dir_failure_batches()
    log = tmp_path / "meta"
    out = tmp_path / "out"
    w = LogWriter(log / "__cluster_metadata-0")
    w.append_all(phases[0])
    w.append_all(phases[1])
    assert analyze(log, "--out", out, "--no-report") == 0
    first = summary_of(out)
    assert first.records == 26
    [f] = first.dir_failures
    assert (f.broker_id, f.directory, f.timestamp) == (1, str(story.failed_dir), story.failure_ms)
    assert (f.affected_partitions, f.leaders_lost, f.unrecovered_partitions) == (3, 2, 1)
    assert f.recovery_latency_ms is None and first.still_leaderless == 1

    w.roll()
    w.append_all(phases[2])
    assert analyze(log, "--out", out) == 0
    s = summary_of(out)
    assert (s.new_records, s.records, s.files_read) == (7, 33, ["00000000000000000026.log"])
    assert not s.rebuild
    [f] = s.dir_failures
    assert (f.affected_partitions, f.leaders_lost, f.unrecovered_partitions) == (3, 2, 0)
    assert f.recovery_latency_ms == story.recovered_ms - story.failure_ms == 31_000
    assert f.back_online_timestamp == story.back_ms

    records = table(spark, out, RECORDS)
    assert records.select("ingest").distinct().count() == 2
    assert sorted(r["offset"] for r in records.select("offset").collect()) == list(range(33))

    per_part = {r["partition_id"]: r for r in table(spark, out, "recovery_partitions").collect()}
    assert sorted(per_part) == [0, 2, 3]
    assert [per_part[p]["latency_ms"] for p in (0, 2, 3)] == [0, 0, 31_000]
    leaderless = table(spark, out, "leaderless").collect()
    assert [(r["partition_id"], r["total_ms"], r["still_leaderless"]) for r in leaderless] == [(3, 31_000, False)]

    tl = {r["timestamp"]: r for r in table(spark, out, "timeline").orderBy("seq").collect()}
    # A1 fails: three replicas offline, p3 leaderless; broker 1 re-registers fenced: all four of its
    # replicas offline; unfenced: none.
    assert (tl[story.failure_ms]["offline_replicas"], tl[story.failure_ms]["leaderless_partitions"]) == (3, 1)
    assert tl[story.back_ms]["offline_replicas"] == 4
    assert (tl[story.recovered_ms]["offline_replicas"], tl[story.recovered_ms]["leaderless_partitions"]) == (0, 0)

    moves = table(spark, out, "replica_dirs").filter("broker_id = 1").collect()
    assert all(r["current"] for r in moves) and len(moves) == 4
    states = [r["state"] for r in table(spark, out, "brokers").filter("broker_id = 1").orderBy("seq").collect()]
    assert states == ["fenced", "unfenced", "unfenced", "fenced", "unfenced"]

    html = (out / REPORT_FILE).read_text()
    assert html.count("<svg") >= 4  # failure window, whole log, balance, record mix
    assert str(story.failed_dir) in html and "31.00 s" in html
    assert_self_contained(html)  # inline plotly.js and SVG, nothing fetched


def test_corrupt_batch_fails_clearly_or_is_skipped(
    tmp_path: Path, spark: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "meta"
    story = write_dir_failure_log_from_snapshot(log)
    seg = list_log_files(log).segments[0]
    data = bytearray(seg.path.read_bytes())
    noop_batches = [(pos, h) for pos, h in iter_batch_positions(bytes(data)) if h.records_count == 1]
    pos, header = noop_batches[1]
    data[pos + 62] ^= 0xFF  # a record byte: the CRC no longer matches
    seg.path.write_bytes(bytes(data))
    out = tmp_path / "out"

    assert analyze(log, "--out", out) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert re.search(rf"{seg.name} at byte {pos} \(batch base offset {header.base_offset}\).*CRC", err)
    assert "--skip-corrupt" in err
    assert not out.exists()  # a failed first run leaves nothing behind

    assert analyze(log, "--out", out, "--skip-corrupt", "--no-report") == 0
    s = summary_of(out)
    assert s.corrupt_this_run == 1
    assert [(c["file"], c["position"]) for c in s.corrupt_batches] == [(seg.name, pos)]
    assert s.base_snapshot is not None and s.base_snapshot["end_offset"] == 17
    assert header.base_offset not in {r["offset"] for r in table(spark, out, RECORDS).collect()}
    # The state before the failure came from the snapshot alone.
    [f] = s.dir_failures
    assert (f.affected_partitions, f.leaders_lost, f.recovery_latency_ms) == (3, 2, 31_000)
    assert f.timestamp == story.failure_ms
