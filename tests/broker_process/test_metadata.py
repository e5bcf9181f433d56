"""The broker's copy of __cluster_metadata: loading the controller's snapshot, resuming after a restart."""

from __future__ import annotations

import json
from pathlib import Path

from tests.broker_process.cluster import Cluster, wait_until
from tests.support.processes import ProcessSet

A, B = 2, 3


def checkpoints(meta_dir: Path) -> list[str]:
    part = meta_dir / "__cluster_metadata-0"
    return sorted(p.name for p in part.glob("*.checkpoint")) if part.is_dir() else []


def test_new_broker_loads_the_controller_snapshot_then_follows_the_log(
    tmp_path: Path, procs: ProcessSet
) -> None:
    cluster = Cluster.create(
        tmp_path, procs, controller_extra={"metadata.log.max.record.bytes.between.snapshots": 2000}
    )
    cluster.add_broker(A, [tmp_path / "a1"])
    cluster.add_broker(B, [tmp_path / "b1", tmp_path / "b2"])
    cluster.start_controller()
    cluster.start_broker(A)
    cluster.wait_running(A)
    for i in range(5):
        cluster.create_topic(f"early-{i}", [[A]] * 4)
    assert cluster.controller_meta is not None
    wait_until(
        "a controller snapshot",
        lambda: [c for c in checkpoints(cluster.controller_meta) if not c.startswith("0" * 20)],
    )

    cluster.start_broker(B)
    health = cluster.wait_running(B)
    node = cluster.brokers[B]
    assert checkpoints(node.metadata_dir), "the broker installed the controller's snapshot"
    # It follows the log after the snapshot: a topic created now reaches it and is placed in its dirs.
    cluster.create_topic("late", [[B]] * 2)
    health = wait_until(
        "late topic hosted and placed",
        lambda: (
            h
            if (h := node.health())["replicas"].get("replicas") == 2
            and not h["replicas"]["unplaced_replicas"]
            else None
        ),
    )
    assert sum(health["replicas"]["replicas_by_dir"].values()) == 2


def test_restart_replays_the_local_log_and_resumes_fetching(tmp_path: Path, procs: ProcessSet) -> None:
    cluster = Cluster.create(tmp_path, procs)
    cluster.add_broker(B, [tmp_path / "b1", tmp_path / "b2"])
    cluster.start_controller()
    cluster.start_broker(B)
    cluster.wait_running(B)
    cluster.create_topic("t", [[B]] * 4)
    node = cluster.brokers[B]
    wait_until(
        "placed",
        lambda: (
            (h := node.health())["replicas"].get("replicas") == 4 and not h["replicas"]["unplaced_replicas"]
        ),
    )
    before = node.health()["metadata_offset"]
    assert cluster.stop_broker(B) == 0
    cluster.start_broker(B)
    health = cluster.wait_running(B)
    assert node.proc is not None
    replayed = [
        json.loads(line)
        for line in node.proc.log_text().splitlines()
        if "local metadata log replayed" in line
    ]
    # Replayed from its own disk up to where it stopped, then fetched on from there.
    assert replayed and replayed[-1]["metadata_offset"] >= before
    assert health["metadata_offset"] > replayed[-1]["metadata_offset"]
    assert health["replicas"]["replicas"] == 4 and not health["replicas"]["unplaced_replicas"]
