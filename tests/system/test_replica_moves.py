"""Moving replicas between a broker's disks (AlterReplicaLogDirs, KIP-113 with KIP-858's ordering)
on real loop-device filesystems, under a continuous acks=all producer: the plain move of a leader
and a follower, a destination that dies mid-copy, a source that dies mid-copy, and a broker killed
at each step of a move. Every acknowledged message is read back exactly once at the end."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from protocol.errors import Errors
from tests.support.processes import run_kraftpy
from tests.system.helpers import (
    all_in_sync,
    broker_log,
    describe,
    dir_index_of,
    log_lines,
    more_acks,
    start_traffic,
    validate_clients,
)
from tools.client import Admin
from tools.cluster.cluster import LocalCluster

pytestmark = [pytest.mark.system, pytest.mark.real, pytest.mark.slow]

TOPIC = "moves"
WAIT_S = 60.0


def _all_in_sync(v) -> bool:  # type: ignore[no-untyped-def]
    return all_in_sync(v, TOPIC)


def _alter(cluster: LocalCluster, broker: int, partition: int, path: str) -> Errors:
    async def go() -> Errors:
        async with Admin(cluster.bootstrap_servers()) as admin:
            got = await admin.alter_replica_log_dirs(broker, {(TOPIC, partition): path})
        return got[(TOPIC, partition)]

    return asyncio.run(go())


def _log_dirs(cluster: LocalCluster, broker: int) -> dict[str, list[dict]]:
    """DescribeLogDirs of one broker: {dir path: its partitions (name, size, lag, isFuture)}."""

    async def go() -> dict[str, list[dict]]:
        async with Admin(cluster.bootstrap_servers()) as admin:
            [r] = await admin.describe_log_dirs([broker], {TOPIC: [0, 1, 2, 3]})
        assert r.response is not None, r.error
        return {
            d.LogDir: [
                {
                    "partition": p.PartitionIndex,
                    "size": p.PartitionSize,
                    "lag": p.OffsetLag,
                    "future": p.IsFutureKey,
                }
                for t in d.Topics
                for p in t.Partitions
            ]
            for d in r.response.Results
        }

    return asyncio.run(go())


def _verified(bootstrap: str, plan: Path, line: str):  # type: ignore[no-untyped-def]
    """A wait_until predicate: `kraftpy reassign --verify` exits 0 and prints `line`."""

    def check(_view) -> bool:  # type: ignore[no-untyped-def]
        r = run_kraftpy(
            "reassign", "--bootstrap-server", bootstrap, "--verify", "--reassignment-json-file", str(plan),
            check=False,
        )  # fmt: skip
        return r.returncode == 0 and line in r.stdout

    return check


def _events(cluster: LocalCluster, broker: int, partition: int) -> list[str]:
    """The move's milestones in the broker's log, in the order they were written."""
    names = ("replica move started", "controller accepted the replica's new dir", "replica moved")
    out = []
    for line in broker_log(cluster, broker).splitlines():
        if not line.startswith("{"):
            continue
        d = json.loads(line)
        if d.get("event") in names and str(d.get("partition", "")).endswith(f"{TOPIC}-{partition}"):
            out.append(d["event"])
    return out


def test_moving_a_leader_and_a_follower_between_disks_under_production(make_cluster, tmp_path: Path) -> None:
    cluster = make_cluster(brokers=3, dirs=2)
    cluster.create_topic(TOPIC, 2, 3, configs={"min.insync.replicas": "2"})
    producer = start_traffic(cluster, TOPIC, tmp_path / "acks.txt", min_acks=300)

    view = cluster.view(probe=False)
    p0, p1 = view.partition(TOPIC, 0), view.partition(TOPIC, 1)
    leader = p0.leader
    follower = next(b for b in p1.replicas if b != p1.leader)
    moves = []
    for broker, partition in ((leader, 0), (follower, 1)):
        src = dir_index_of(view, TOPIC, partition, broker)
        dst = 1 - src
        path = cluster.dir_plan(broker, dst).path
        assert _alter(cluster, broker, partition, path) is Errors.NONE
        moves.append((broker, partition, dst, path))

    def moved(v) -> bool:  # type: ignore[no-untyped-def]
        return all(dir_index_of(v, TOPIC, p, b) == dst for b, p, dst, _ in moves) and _all_in_sync(v)

    cluster.wait_until(moved, WAIT_S, "both replicas to be in their new dirs, in sync")
    more_acks(producer, 200)

    for broker, partition, _dst, path in moves:
        dirs = _log_dirs(cluster, broker)
        here = [p for p in dirs[path] if p["partition"] == partition]
        assert here and not any(p["future"] for p in here), dirs
        others = [p for d, ps in dirs.items() if d != path for p in ps if p["partition"] == partition]
        assert others == [], dirs
        assert _events(cluster, broker, partition) == [
            "replica move started",
            "controller accepted the replica's new dir",
            "replica moved",
        ]
        # The controller's PartitionChangeRecord names the new dir only once the copy caught up.
        dir_id = cluster.state.directory_ids[path]
        [row] = [r for r in describe(cluster, TOPIC) if r["partition"] == partition]
        assert row["directories"][str(broker)] == dir_id, row
        [moved_line] = [
            line for line in log_lines(cluster, broker, "replica moved") if line.get("destination") == path
        ]
        assert moved_line["bytes"] > 0
    validate_clients(cluster, TOPIC, producer)


def test_destination_disk_dies_mid_copy_and_the_replica_stays(make_cluster, tmp_path: Path) -> None:
    # A slow copy (64 KiB/s) keeps the move in flight long enough to kill the destination under it.
    cluster = make_cluster(
        brokers=3, dirs=2, broker_config={"replica.alter.log.dirs.io.max.bytes.per.second": "65536"}
    )
    cluster.create_topic(TOPIC, 1, 3, configs={"min.insync.replicas": "2", "segment.bytes": "1048576"})
    producer = start_traffic(cluster, TOPIC, tmp_path / "acks.txt", min_acks=2000)
    view = cluster.view(probe=False)
    leader = view.partition(TOPIC, 0).leader
    src = dir_index_of(view, TOPIC, 0, leader)
    dst = 1 - src
    path = cluster.dir_plan(leader, dst).path
    assert _alter(cluster, leader, 0, path) is Errors.NONE
    cluster.wait_until(
        lambda v: any(p["future"] for p in _log_dirs(cluster, leader).get(path, [])),
        WAIT_S,
        "the future log to appear in the destination",
    )
    cluster.fail_dir(leader, dst)
    cluster.wait_until(
        lambda v: bool(log_lines(cluster, leader, "replica move cancelled; the replica stays in its dir")),
        WAIT_S,
        "the move to be cancelled",
    )
    more_acks(producer, 200)
    view = cluster.view(probe=False)
    p = view.partition(TOPIC, 0)
    assert p.leader == leader and dir_index_of(view, TOPIC, 0, leader) == src and not p.offline
    validate_clients(cluster, TOPIC, producer)


def test_source_disk_dies_mid_copy_and_the_replica_goes_offline(make_cluster, tmp_path: Path) -> None:
    cluster = make_cluster(
        brokers=3, dirs=2, broker_config={"replica.alter.log.dirs.io.max.bytes.per.second": "65536"}
    )
    cluster.create_topic(TOPIC, 1, 3, configs={"min.insync.replicas": "2"})
    producer = start_traffic(cluster, TOPIC, tmp_path / "acks.txt", min_acks=2000)
    view = cluster.view(probe=False)
    p = view.partition(TOPIC, 0)
    follower = next(b for b in p.replicas if b != p.leader)
    src = dir_index_of(view, TOPIC, 0, follower)
    path = cluster.dir_plan(follower, 1 - src).path
    assert _alter(cluster, follower, 0, path) is Errors.NONE
    cluster.wait_until(
        lambda v: any(p["future"] for p in _log_dirs(cluster, follower).get(path, [])),
        WAIT_S,
        "the future log to appear in the destination",
    )
    cluster.fail_dir(follower, src)
    cluster.wait_until(
        lambda v: v.partition(TOPIC, 0).offline == (follower,), WAIT_S, "the moving replica to be offline"
    )
    assert log_lines(cluster, follower, "replica move stopped: its source log dir failed")
    more_acks(producer, 200)
    validate_clients(cluster, TOPIC, producer)


@pytest.mark.parametrize("when", ["copying", "accepted"])
def test_broker_killed_during_a_move_loses_nothing(make_cluster, tmp_path: Path, when: str) -> None:
    """Killed while copying: the restarted broker resumes the copy. Killed after the controller
    accepted the new dir but before the swap (held back by a slow copy of the last rounds): it
    catches the future log up from the current one before promoting it."""
    cluster = make_cluster(
        brokers=3, dirs=2, broker_config={"replica.alter.log.dirs.io.max.bytes.per.second": "65536"}
    )
    cluster.create_topic(TOPIC, 1, 3, configs={"min.insync.replicas": "2"})
    producer = start_traffic(cluster, TOPIC, tmp_path / "acks.txt", min_acks=1500)
    view = cluster.view(probe=False)
    leader = view.partition(TOPIC, 0).leader
    src = dir_index_of(view, TOPIC, 0, leader)
    dst = 1 - src
    path = cluster.dir_plan(leader, dst).path
    assert _alter(cluster, leader, 0, path) is Errors.NONE
    if when == "copying":
        cluster.wait_until(
            lambda v: any(p["future"] and p["size"] > 0 for p in _log_dirs(cluster, leader).get(path, [])),
            WAIT_S,
            "the copy to be under way",
        )
    else:
        cluster.wait_until(
            lambda v: dir_index_of(v, TOPIC, 0, leader) == dst, WAIT_S, "the controller to accept the new dir"
        )
    cluster.stop_broker(leader, kill=True)
    more_acks(producer, 100)
    cluster.start_broker(leader)
    src_root = Path(cluster.dir_plan(leader, src).path)
    cluster.wait_until(
        lambda v: (
            dir_index_of(v, TOPIC, 0, leader) == dst
            and _all_in_sync(v)
            and not (src_root / f"{TOPIC}-0").exists()
        ),
        WAIT_S * 2,
        "the moved replica in its new dir, the old one gone, and back in sync",
    )
    assert not [n for n in src_root.iterdir() if n.name.startswith(f"{TOPIC}-0.")]
    more_acks(producer, 100)
    validate_clients(cluster, TOPIC, producer)
    print(json.dumps({"events": [line.get("event") for line in log_lines(cluster, leader, "replica move")]}))


def test_log_dirs_balance_evens_out_a_brokers_disks(make_cluster, tmp_path: Path) -> None:
    """`kraftpy log-dirs balance`: every replica of a broker crowded into one disk, then spread again."""
    cluster = make_cluster(brokers=3, dirs=2)
    cluster.create_topic(TOPIC, 4, 3, configs={"min.insync.replicas": "2"})
    producer = start_traffic(cluster, TOPIC, tmp_path / "acks.txt", min_acks=800)
    broker = 2
    crowded = cluster.dir_plan(broker, 0).path
    for partition in range(4):
        assert _alter(cluster, broker, partition, crowded) is Errors.NONE
    cluster.wait_until(
        lambda v: all(dir_index_of(v, TOPIC, p, broker) == 0 for p in range(4)),
        WAIT_S,
        f"every replica of broker {broker} in its first dir",
    )
    plan = run_kraftpy(
        "log-dirs", "balance", "--broker", str(broker), "--dry-run", "--min-move-mb", "0",
        "--bootstrap-server", cluster.bootstrap_servers(),
    ).stdout  # fmt: skip
    assert "Dry run:" in plan and f"from {crowded} to" in plan, plan
    assert all(dir_index_of(cluster.view(probe=False), TOPIC, p, broker) == 0 for p in range(4))
    done = run_kraftpy(
        "log-dirs", "balance", "--broker", str(broker), "--wait", "--min-move-mb", "0",
        "--bootstrap-server", cluster.bootstrap_servers(),
    ).stdout  # fmt: skip
    assert "completed" in done, done
    view = cluster.wait_until(_all_in_sync, WAIT_S, "every replica in sync after the balance")
    assert {dir_index_of(view, TOPIC, p, broker) for p in range(4)} == {0, 1}
    sizes = {d: sum(p["size"] for p in ps if not p["future"]) for d, ps in _log_dirs(cluster, broker).items()}
    assert min(sizes.values()) > 0, sizes
    more_acks(producer, 100)
    validate_clients(cluster, TOPIC, producer)


def test_kraftpy_reassign_moves_a_replica_between_disks_with_a_log_dirs_file(
    make_cluster, tmp_path: Path
) -> None:
    """kafka-reassign-partitions.sh's JSON with `log_dirs`: the same replicas, one of them into its
    broker's other disk; --verify reports it complete; the controller's record names the new dir."""
    cluster = make_cluster(brokers=3, dirs=2)
    cluster.create_topic(TOPIC, 1, 3, configs={"min.insync.replicas": "2"})
    producer = start_traffic(cluster, TOPIC, tmp_path / "acks.txt", min_acks=500)
    view = cluster.view(probe=False)
    p = view.partition(TOPIC, 0)
    broker = p.leader
    dst = 1 - dir_index_of(view, TOPIC, 0, broker)
    path = cluster.dir_plan(broker, dst).path
    log_dirs = [path if b == broker else "any" for b in p.replicas]
    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps(
            {
                "version": 1,
                "partitions": [
                    {"topic": TOPIC, "partition": 0, "replicas": list(p.replicas), "log_dirs": log_dirs}
                ],
            }
        )
    )
    bootstrap = cluster.bootstrap_servers()
    out = run_kraftpy(
        "reassign", "--bootstrap-server", bootstrap, "--execute", "--reassignment-json-file", str(plan)
    ).stdout
    assert (
        f"Successfully started moving log directory to {path} for replica {TOPIC}-0 with broker {broker}"
        in out
    ), out

    done = f"Reassignment of replica {TOPIC}-0-{broker} completed successfully."
    verified = _verified(bootstrap, plan, done)
    cluster.wait_until(verified, WAIT_S, "kraftpy reassign --verify to report the move complete")
    [row] = [r for r in describe(cluster, TOPIC) if r["partition"] == 0]
    assert row["directories"][str(broker)] == cluster.state.directory_ids[path], row
    more_acks(producer, 100)
    validate_clients(cluster, TOPIC, producer)


def test_reassignment_onto_a_broker_with_a_dead_disk_lands_on_its_live_one(
    make_cluster, tmp_path: Path
) -> None:
    """KIP-112: reassignment takes offline dirs into account. The new replica goes to the target
    broker's surviving disk, catches up, and the reassignment completes; nothing acknowledged is lost."""
    cluster = make_cluster(brokers=3, dirs=2)
    cluster.create_topic(TOPIC, 1, 2, assignment={0: [1, 2]}, configs={"min.insync.replicas": "1"})
    producer = start_traffic(cluster, TOPIC, tmp_path / "acks.txt", min_acks=500)
    cluster.fail_dir(3, 0)
    cluster.wait_until(
        lambda v: any(d.broker_id == 3 and d.index == 0 and d.status == "offline" for d in v.dirs),
        WAIT_S,
        "the controller to know broker 3's first disk is offline",
    )
    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps({"version": 1, "partitions": [{"topic": TOPIC, "partition": 0, "replicas": [1, 3]}]})
    )
    bootstrap = cluster.bootstrap_servers()
    run_kraftpy(
        "reassign", "--bootstrap-server", bootstrap, "--execute", "--reassignment-json-file", str(plan)
    )

    completed = _verified(bootstrap, plan, f"Reassignment of partition {TOPIC}-0 is completed.")
    cluster.wait_until(completed, WAIT_S * 2, "the reassignment onto broker 3 to complete")
    view = cluster.wait_until(_all_in_sync, WAIT_S, "the new replica in sync")
    p = view.partition(TOPIC, 0)
    assert sorted(p.replicas) == [1, 3] and not p.offline
    assert dir_index_of(view, TOPIC, 0, 3) == 1  # the live disk
    more_acks(producer, 100)
    validate_clients(cluster, TOPIC, producer)
