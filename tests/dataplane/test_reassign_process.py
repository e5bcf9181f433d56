"""`kraftpy reassign` against a real cluster (a controller and three brokers as processes): a
partition moved to other brokers while an acks=all producer writes to it loses nothing; the
controller writes the start and completion records Kafka's does; a reassignment stuck on a paused
broker is cancelled back to its replicas; and a replica moved to another broker can be put in a
chosen log dir there.
"""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from kraftpy.metalog import MetadataLog
from protocol.metadata_records import PartitionChangeRecord
from tests.dataplane.cluster import DataCluster, wait_until
from tests.dataplane.workload import produce_with_fault, read_back, verify
from tools.cluster.launcher import run_kraftpy

pytestmark = pytest.mark.timeout(600)

TOPIC = "moves"


def create_topic(c: DataCluster) -> None:
    out = c.kraftpy(
        "topics", "create", "--bootstrap-server", c.bootstrap, "--topic", TOPIC,
        "--replica-assignment", "1:2,1:2", "--config", "min.insync.replicas=2",
    )  # fmt: skip
    assert f"Created topic {TOPIC}." in out


def describe(c: DataCluster, bootstrap: str | None = None) -> dict[int, dict[str, Any]]:
    rows = json.loads(
        c.kraftpy(
            "topics", "describe", "--bootstrap-server", bootstrap or c.bootstrap, "--topic", TOPIC, "--json"
        )
    )
    return {p["partition"]: p for p in rows[0]["partitions"]}


def plan_file(tmp_path: Path, name: str, partitions: list[dict[str, Any]]) -> str:
    path = tmp_path / name
    path.write_text(json.dumps({"version": 1, "partitions": partitions}))
    return str(path)


def reassign(c: DataCluster, *args: str, bootstrap: str | None = None) -> tuple[int, str, str]:
    proc = run_kraftpy("reassign", "--bootstrap-server", bootstrap or c.bootstrap, *args, check=False)
    return proc.returncode, proc.stdout, proc.stderr


def partition_changes(c: DataCluster, partition: int) -> list[Any]:
    """The controller's PartitionChangeRecords for one partition of TOPIC, in log order."""
    assert c.controller_meta is not None
    with capture_logs(), MetadataLog.open(c.controller_meta, read_only=True) as mlog:
        records = [
            e.record.message for e in mlog.entries(from_snapshot=False) if hasattr(e.record, "message")
        ]
    topic_id = next(r.TopicId for r in records if type(r).__name__ == "TopicRecord" and r.Name == TOPIC)
    return [
        r
        for r in records
        if isinstance(r, PartitionChangeRecord) and r.TopicId == topic_id and r.PartitionId == partition
    ]


def test_a_partition_moves_to_other_brokers_under_acks_all_load(cluster: DataCluster, tmp_path: Path) -> None:
    c = cluster
    create_topic(c)
    plan = plan_file(tmp_path, "plan.json", [{"topic": TOPIC, "partition": 0, "replicas": [2, 3]}])
    executed: dict[str, Any] = {}

    def execute() -> None:
        executed["result"] = reassign(c, "--execute", "--reassignment-json-file", plan)

    # The reassignment starts while 20,000 acks=all records are being written.
    outcome = asyncio.run(produce_with_fault(c.bootstrap, TOPIC, 20_000, fault=execute, fault_after=5_000))
    code, out, err = executed["result"]
    assert code == 0, out + err
    rollback = f'{{"version":1,"partitions":[{{"topic":"{TOPIC}","partition":0,"replicas":[1,2],"log_dirs":["any","any"]}}]}}'
    assert out.splitlines()[:5] == [
        "Current partition replica assignment",
        "",
        rollback,
        "",
        "Save this to use as the --reassignment-json-file option during rollback",
    ]
    assert f"Successfully started partition reassignment for {TOPIC}-0" in out
    assert not outcome.failed, outcome.failed

    def verified() -> str | None:
        code, out, _ = reassign(c, "--verify", "--reassignment-json-file", plan)
        return out if code == 0 else None

    out = wait_until("the reassignment to complete", verified, timeout=120)
    assert f"Reassignment of partition {TOPIC}-0 is completed." in out
    p0 = describe(c)[0]
    assert sorted(p0["replicas"]) == [2, 3] and sorted(p0["isr"]) == [2, 3] and p0["leader"] in (2, 3)

    # What the controller wrote: the start (3 added, 1 being removed, a dir for every replica),
    # then the completion that drops 1 and elects a new leader.
    changes = partition_changes(c, 0)
    start = next(r for r in changes if r.AddingReplicas)
    assert (start.Replicas, start.AddingReplicas, start.RemovingReplicas) == ([2, 3, 1], [3], [1])
    assert start.Directories is not None and len(start.Directories) == 3
    done = next(r for r in changes if r.Replicas == [2, 3])
    assert (done.AddingReplicas, done.RemovingReplicas) == ([], [])
    assert done.Leader == 2 and sorted(done.Isr) == [2, 3]
    assert done.Directories is not None and len(done.Directories) == 2

    verify(outcome, asyncio.run(read_back(c.bootstrap, TOPIC)))
    code, out, _ = reassign(c, "--list")
    assert (code, out.strip()) == (0, "No partition reassignments found.")

    # --generate proposes from the current assignment and changes nothing.
    topics = tmp_path / "topics.json"
    topics.write_text(json.dumps({"version": 1, "topics": [{"topic": TOPIC}]}))
    code, out, err = reassign(
        c, "--generate", "--topics-to-move-json-file", str(topics), "--broker-list", "1,3"
    )
    assert code == 0, out + err
    lines = out.splitlines()
    assert (
        lines[0] == "Current partition replica assignment"
        and lines[3] == "Proposed partition reassignment configuration"
    )
    proposed = json.loads(lines[4])["partitions"]
    assert [(p["partition"], sorted(p["replicas"])) for p in proposed] == [(0, [1, 3]), (1, [1, 3])]
    assert sorted(describe(c)[0]["replicas"]) == [2, 3]


def test_a_reassignment_stuck_on_a_paused_broker_is_cancelled(cluster: DataCluster, tmp_path: Path) -> None:
    c = cluster
    create_topic(c)
    outcome = asyncio.run(produce_with_fault(c.bootstrap, TOPIC, 2_000))
    assert not outcome.failed
    one = c.brokers[1].address  # never the paused broker: a request to it would hang
    plan = plan_file(tmp_path, "plan.json", [{"topic": TOPIC, "partition": 1, "replicas": [1, 3]}])
    broker3 = c.brokers[3].proc
    assert broker3 is not None
    # Paused, broker 3 cannot fetch: the reassignment cannot complete, whatever the timing. The
    # command runs well inside the session timeout, while 3 still counts as alive.
    broker3.signal_group(signal.SIGSTOP)
    try:
        code, out, err = reassign(c, "--execute", "--reassignment-json-file", plan, bootstrap=one)
        assert code == 0, out + err
        code, out, _ = reassign(c, "--verify", "--reassignment-json-file", plan, bootstrap=one)
        assert code == 1 and f"Reassignment of partition {TOPIC}-1 is still in progress." in out
        code, out, _ = reassign(c, "--list", bootstrap=one)
        assert f"{TOPIC}-1: replicas: 1,3,2. adding: 3. removing: 2." in out
        code, out, err = reassign(c, "--cancel", "--reassignment-json-file", plan, bootstrap=one)
        assert code == 0, out + err
        assert f"Successfully cancelled partition reassignment for: {TOPIC}-1" in out
        p1 = describe(c, one)[1]
        assert sorted(p1["replicas"]) == [1, 2] and 3 not in p1["isr"]
        code, out, _ = reassign(c, "--verify", "--reassignment-json-file", plan, bootstrap=one)
        assert code == 1
        assert (
            f"There is no active reassignment of partition {TOPIC}-1, but replica set is 1,2 rather than 1,3."
            in out
        )
        code, out, _ = reassign(c, "--cancel", "--reassignment-json-file", plan, bootstrap=one)
        assert "None of the specified partition reassignments are active." in out
    finally:
        broker3.signal_group(signal.SIGCONT)
    assert any(
        (r.Replicas, r.AddingReplicas, r.RemovingReplicas) == ([1, 2], [], [])
        for r in partition_changes(c, 1)
    ), "the cancel's record"
    verify(outcome, asyncio.run(read_back(c.bootstrap, TOPIC)))


def test_a_replica_moved_to_another_broker_lands_in_the_log_dir_asked_for(
    cluster: DataCluster, tmp_path: Path
) -> None:

    c = cluster
    create_topic(c)
    outcome = asyncio.run(produce_with_fault(c.bootstrap, TOPIC, 2_000))
    target_dir = c.brokers[3].log_dirs[1]
    plan = plan_file(
        tmp_path,
        "plan.json",
        [{"topic": TOPIC, "partition": 0, "replicas": [2, 3], "log_dirs": ["any", str(target_dir)]}],
    )
    code, out, err = reassign(c, "--execute", "--reassignment-json-file", plan)
    assert code == 0, out + err
    assert (
        f"Successfully started moving log directory to {target_dir} for replica {TOPIC}-0 with broker 3"
        in out
    )

    def verified() -> str | None:
        code, out, _ = reassign(c, "--verify", "--reassignment-json-file", plan)
        return out if code == 0 else None

    out = wait_until("the reassignment and the dir move to complete", verified, timeout=120)
    assert f"Reassignment of replica {TOPIC}-0-3 completed successfully." in out
    p0 = describe(c)[0]
    assert p0["directories"]["3"] == str(c.brokers[3].dir_id(1))
    verify(outcome, asyncio.run(read_back(c.bootstrap, TOPIC)))
