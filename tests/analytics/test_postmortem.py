"""The report as a post-mortem of a dir failure: leaders lost counted from before the failure's batch,
the time until back in sync, creation waits apart from leaderless time, dirs by path and label,
the timeline with the broker's restart, min ISR, and one file that needs no network."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.analytics.conftest import assert_self_contained, table
from tools.analytics.analyses import FIRST_LEADER_GRACE_MS
from tools.analytics.clusterdir import discover, find_work_dir, load_dirs_file
from tools.analytics.errors import AnalysisError
from tools.analytics.job import REPORT_FILE, SUMMARY_FILE
from tools.analytics.summary import Summary
from tools.analytics.synthetic import (
    FailoverStory,
    failover_batches,
    uuid_of,
    write_cluster_work_dir,
    write_dir_failure_log,
)
from tools.cli.main import main as kraftpy_main


def summary_of(out: Path) -> Summary:
    return Summary.from_dict(json.loads((out / SUMMARY_FILE).read_text()))


@pytest.fixture(scope="module")
def failover(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[FailoverStory, Path, Path]:
    """The failover story in a `kraftpy cluster` work dir after `cluster down` (configs and brokers' logs
    beside the controller's metadata dir, no cluster.json), analysed once."""
    root = tmp_path_factory.mktemp("failover")
    _, story = failover_batches()
    meta = write_cluster_work_dir(root / "cluster", story)
    out = root / "out"
    assert kraftpy_main(["analyze", str(meta), "--out", str(out)]) == 0
    return story, root / "cluster", out


@pytest.mark.spark
@pytest.mark.real
def test_leaders_lost_in_the_failure_batch_and_time_back_in_sync(
    failover: tuple[FailoverStory, Path, Path], spark: Any
) -> None:
    story, _, out = failover
    s = summary_of(out)
    [f] = s.dir_failures
    assert (f.broker_id, f.directory, f.offset) == (1, str(story.failed_dir), story.failure_offset)
    assert f.group_start_offset == story.batch_offset < f.offset  # the PartitionChangeRecords come first
    # p0 was led from b1/d0 before the batch moved its leadership to 2; p1 only lost a follower.
    assert (f.affected_partitions, f.leaders_lost, f.partitions_with_new_leader) == (2, 1, 1)
    assert f.recovery_latency_ms == 0  # every partition hit had a leader in that batch
    assert f.leader_moves == 2 and f.last_leader_move_ms == story.second_move_ms - story.failure_ms == 500
    assert (f.isr_shrunk, f.not_in_sync) == (2, 0)
    assert f.back_in_sync_ms == story.in_sync_ms - story.failure_ms == 6_000
    # min.insync.replicas=2 from the topic's ConfigRecord: p1 (RF 2) had one in-sync replica for 6 s.
    assert f.min_isr_known and (f.under_min_isr_partitions, f.under_min_isr_ms) == (1, 6_000)
    assert s.min_isr_source is not None and "topic configs (ConfigRecord) of orders" in s.min_isr_source
    assert f.leaders_per_broker == {
        "before": {"-1": 1, "1": 1, "2": 1, "3": 1},
        "after": {"-1": 1, "2": 2, "3": 1},
        "recovered": {"-1": 1, "2": 1, "3": 2},
    }

    per_part = {r["partition_id"]: r for r in table(spark, out, "recovery_partitions").collect()}
    assert sorted(per_part) == [0, 1]
    assert (per_part[0]["leader_at_failure"], per_part[0]["leader_after_failure"]) == (1, 2)
    assert [per_part[p]["lost_leader"] for p in (0, 1)] == [True, False]
    assert [per_part[p]["back_in_sync_ms"] for p in (0, 1)] == [6_000, 6_000]


@pytest.mark.spark
@pytest.mark.real
def test_the_timeline_names_each_step_and_the_restart(failover: tuple[FailoverStory, Path, Path]) -> None:
    story, _, out = failover
    [f] = summary_of(out).dir_failures
    assert f.detected_timestamp == story.failure_ms - 40  # broker 1's "log dir failed" line
    kinds = [e["kind"] for e in f.events]
    assert kinds[:3] == ["broker noticed", "controller committed", "ISR shrink"]
    first = {k: next(e for e in f.events if e["kind"] == k) for k in kinds}
    assert first["broker noticed"]["source"] == "broker log" and first["broker noticed"]["ms"] == -40
    assert first["dir offline"]["offset"] == story.failure_offset and first["dir offline"]["ms"] == 0
    assert first["controller committed"]["offset"] == story.batch_offset
    assert first["leader moved"]["detail"] == "orders-0: leader 1 -> 2" and first["leader moved"]["ms"] == 0
    assert [e["detail"] for e in f.events if e["kind"] == "ISR shrink"] == [
        "orders-0: ISR [1,2,3] -> [2,3]",
        "orders-1: ISR [2,1] -> [2]",
    ]
    assert first["broker controlled shutdown"]["ms"] == 3_000
    assert first["broker fenced"]["ms"] == 3_500
    restart = first["broker restarted"]
    assert restart["timestamp"] == story.restart_ms
    assert restart["detail"] == "broker 1 registered again: epoch 11 -> 50, new incarnation (a restart)"
    assert first["dir back"]["timestamp"] == story.restart_ms
    assert [e["ms"] for e in f.events if e["kind"] == "ISR restored"] == [6_000, 6_000]
    assert kinds[-1] == "back in sync" and f.events[-1]["ms"] == 6_000
    assert [e["ms"] for e in f.events] == sorted(e["ms"] for e in f.events)

    [r] = summary_of(out).broker_restarts
    assert (r["broker_id"], r["previous_epoch"], r["epoch"], r["new_incarnation"]) == (1, 11, 50, True)
    assert r["state_before"] == "fenced" and r["dirs_added"] == [str(story.failed_dir)]


@pytest.mark.spark
@pytest.mark.real
def test_topic_creation_is_not_leaderless_time(
    failover: tuple[FailoverStory, Path, Path], spark: Any
) -> None:
    story, _, out = failover
    s = summary_of(out)
    # orders' three partitions waited 124 ms for their first leader: not leaderless. "stuck"'s one never
    # got a leader: past the grace, it counts.
    assert s.waiting_for_first_leader == 4 and s.first_leader_grace_ms == FIRST_LEADER_GRACE_MS
    assert (s.leaderless_partitions, s.still_leaderless) == (1, 1)
    assert [(r["topic"], r["partition_id"]) for r in table(spark, out, "leaderless").collect()] == [
        ("stuck", 0)
    ]
    waits = {(r["topic"], r["partition_id"]): r for r in table(spark, out, "first_leader_waits").collect()}
    assert {k: (r["wait_ms"], r["counted_leaderless"]) for k, r in waits.items() if k[0] == "orders"} == {
        ("orders", p): (story.creation_wait_ms, False) for p in range(3)
    }
    assert waits[("stuck", 0)]["still_waiting"] and waits[("stuck", 0)]["counted_leaderless"]
    # The whole-log timeline never shows orders' creation as leaderless partitions.
    created = story.t0 + 2000
    tl = table(spark, out, "timeline").filter(f"timestamp <= {created + 500}").collect()
    assert max((r["leaderless_partitions"] for r in tl), default=0) == 0


@pytest.mark.spark
@pytest.mark.real
def test_the_report_names_dirs_and_is_one_file(failover: tuple[FailoverStory, Path, Path]) -> None:
    story, work, out = failover
    s = summary_of(out)
    assert s.dir_names_source is not None and str(work) in s.dir_names_source
    assert {d["label"] for d in s.dirs.values()} == {f"b{b}/d{i}" for b in (1, 2, 3) for i in (0, 1)}
    [f] = s.dir_failures
    path = str(work / "broker-1" / "logs-0")
    assert (f.label, f.path) == ("b1/d0", path)
    page = (out / REPORT_FILE).read_text()
    assert_self_contained(page)
    assert [p.name for p in out.iterdir() if p.suffix == ".html"] == [REPORT_FILE]
    for text in (
        "Broker 1, dir b1/d0 at offset",
        path,
        str(story.failed_dir),
        "broker restarted",
        "registered again: epoch 11 -&gt; 50",
        "back in sync",
        "6.00 s",
        "waiting for first leader",
        "Leaders per broker",
        "1 partition, longest 6.00 s",  # under min ISR
        "broker 2 / b2/d1",  # the balance plot's labels
        "plotly-graph-div",
        "fig-static",  # the SVG a viewer without scripts shows
    ):
        assert text in page, text


@pytest.mark.spark
@pytest.mark.real
def test_a_dirs_file_names_dirs_and_a_bare_log_shows_ids(spark: Any, tmp_path: Path) -> None:
    story = write_dir_failure_log(tmp_path / "meta")
    names = tmp_path / "dirs.json"
    names.write_text(json.dumps({str(story.failed_dir): {"path": "/data/disk-a", "label": "disk A of 1"}}))
    out = tmp_path / "out"
    assert kraftpy_main(["analyze", str(tmp_path / "meta"), "--out", str(out), "--dirs", str(names)]) == 0
    s = summary_of(out)
    assert s.dir_names_source == f"--dirs {names}"
    [f] = s.dir_failures
    assert (f.label, f.path, f.leaders_lost, f.detected_timestamp) == ("disk A of 1", "/data/disk-a", 2, None)
    # No ConfigRecord, no cluster work dir: min ISR unknown, and said so.
    assert not f.min_isr_known and f.under_min_isr_ms is None and s.min_isr_source is None
    # p2 never gets broker 1 back in its ISR in this story: not back in sync at log end.
    assert f.back_in_sync_ms is None and f.not_in_sync == 1
    page = (out / REPORT_FILE).read_text()
    assert_self_contained(page)
    assert "disk A of 1" in page and "/data/disk-a" in page and str(story.failed_dir) in page
    assert "min.insync.replicas: unknown" in page and "not back in sync at log end" in page
    # A dir the file does not name is shown by its id.
    assert f"broker 2 / {uuid_of('A2')}" in page


# ---------------------------------------------------------------------------------------------- no Spark


def test_names_from_cluster_json(tmp_path: Path) -> None:
    """A running cluster's work dir: cluster.json has the planned dirs and the ids format wrote."""
    work = tmp_path / "cluster"
    meta = work / "controller-3001" / "meta" / "__cluster_metadata-0"
    meta.mkdir(parents=True)
    state = {
        "version": 1,
        "directory_ids": {f"{work}/broker-2/disk-1/data": "ID-21", f"{work}/broker-2/disk-0/data": "ID-20"},
        "nodes": [
            {"role": "controller", "node_id": 3001, "log_dirs": []},
            {
                "role": "broker",
                "node_id": 2,
                "log_dirs": [
                    {"path": f"{work}/broker-2/disk-0/data", "index": 0},
                    {"path": f"{work}/broker-2/disk-1/data", "index": 1},
                ],
            },
        ],
    }
    (work / "cluster.json").write_text(json.dumps(state))
    assert find_work_dir(meta) == work
    ctx = discover(meta)
    assert {k: (v.label, v.path, v.broker) for k, v in ctx.dirs.items()} == {
        "ID-20": ("b2/d0", f"{work}/broker-2/disk-0/data", 2),
        "ID-21": ("b2/d1", f"{work}/broker-2/disk-1/data", 2),
    }
    assert ctx.source == f"the cluster work dir {work} (cluster.json)"
    # A --dirs file wins over what the work dir says, entry by entry.
    f = tmp_path / "dirs.json"
    f.write_text(json.dumps({"ID-21": {"label": "fast disk"}, "ID-99": "spare"}))
    ctx = discover(meta, f)
    assert (ctx.dirs["ID-21"].label, ctx.dirs["ID-21"].path) == ("fast disk", f"{work}/broker-2/disk-1/data")
    assert ctx.dirs["ID-99"].label == "spare" and ctx.dirs["ID-20"].label == "b2/d0"
    assert ctx.source is not None and ctx.source.startswith(f"--dirs {f} and the cluster work dir")


def test_names_from_the_brokers_logs_and_configs(tmp_path: Path) -> None:
    _, story = failover_batches()
    meta = write_cluster_work_dir(tmp_path / "cluster", story, noticed_before_ms=7)
    ctx = discover(meta)
    assert ctx.dirs[str(story.dirs[3][1])].label == "b3/d1"
    assert ctx.static_min_isr == 2
    assert ctx.detected(1, str(story.failed_dir), story.failure_ms) == story.failure_ms - 7
    assert ctx.detected(2, str(story.failed_dir), story.failure_ms) is None
    assert ctx.detected(1, str(story.failed_dir), story.failure_ms + 3_600_000) is None  # another failure


def test_a_real_kafka_log_dir_has_no_names(tmp_path: Path) -> None:
    (tmp_path / "kafka" / "meta" / "__cluster_metadata-0").mkdir(parents=True)
    ctx = discover(tmp_path / "kafka" / "meta" / "__cluster_metadata-0")
    assert (ctx.dirs, ctx.source, ctx.detections, ctx.static_min_isr) == ({}, None, [], None)


@pytest.mark.parametrize(
    ("content", "message"),
    [("not json", "is not JSON"), ("[1, 2]", "expected an object"), ('{"x": 3}', "neither a label nor")],
)
def test_a_bad_dirs_file_is_a_clear_error(tmp_path: Path, content: str, message: str) -> None:
    f = tmp_path / "dirs.json"
    f.write_text(content)
    with pytest.raises(AnalysisError, match=message):
        load_dirs_file(f)
    with pytest.raises(AnalysisError, match="cannot read"):
        load_dirs_file(tmp_path / "missing.json")
