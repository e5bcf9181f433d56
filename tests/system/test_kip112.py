"""KIP-112's three system-test scenarios, in KRaft mode and in ZooKeeper mode (as KIP-112 was
designed, and as Kafka's log_dir_failure_test runs them: once per quorum type), on real loop-device
filesystems.

As in the KIP (and Kafka's log_dir_failure_test): 3 brokers with two log dirs each, a topic of one
partition with three replicas under a producer and a consumer, then a dir made unusable. Kafka's
test makes the dir unusable with chmod, which a root-run broker ignores; here the filesystem is shut
down (every I/O fails with EIO), the failure a dying disk gives.

"Validate client/cluster state" (KIP-112):
- brokers are all running and show the expected error message;
- the topic description shows the expected leader, ISR and offline replicas;
- a producer and a consumer work on the topic without message loss or duplication.
Then the damaged broker must still serve a new topic on its good dir once the other brokers are gone.
Two more failures ride on the end of these clusters: every log dir failed, and (KRaft: a ZooKeeper-mode
broker has no metadata log) the metadata.log.dir failed; in both the broker shuts down.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.system.helpers import (
    describe,
    dir_index_of,
    log_lines,
    more_acks,
    start_traffic,
    validate_clients,
    wait_exit,
)
from tools.cluster.cluster import LocalCluster

pytestmark = [pytest.mark.system, pytest.mark.real, pytest.mark.slow]

TOPIC_1 = "test_topic_1"  # min.insync.replicas 1: the one the damaged broker serves alone
TOPIC_2 = "test_topic_2"  # min.insync.replicas 2: the one under traffic when the dir fails
WAIT_S = 60.0


@pytest.fixture(params=["kraft", "zk"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _cluster(make_cluster, mode: str, **kw: object) -> LocalCluster:  # type: ignore[no-untyped-def]
    if mode == "zk":
        kw.pop("metadata_disks", None)
        return make_cluster(brokers=3, dirs=2, zookeeper=True, **kw)
    return make_cluster(brokers=3, dirs=2, **kw)


def _serve_new_topic_alone(cluster: LocalCluster, damaged: int, bad_index: int, tmp_path: Path) -> int:
    """KIP-112's second half: a new topic, the other two brokers killed, the damaged broker serves it
    from its good dir. Returns the good dir's index."""
    cluster.create_topic(TOPIC_1, 1, 3, configs={"min.insync.replicas": "1"})
    view = cluster.view(probe=False)
    good = dir_index_of(view, TOPIC_1, 0, damaged)
    assert good != bad_index, f"new replica of broker {damaged} was placed in its failed dir {bad_index}"
    for other in (b.node_id for b in cluster.brokers if b.node_id != damaged):
        cluster.stop_broker(other, kill=True)
    cluster.wait_until(
        lambda v: (p := v.partition(TOPIC_1, 0)) is not None and p.leader == damaged and p.isr == (damaged,),
        WAIT_S,
        f"broker {damaged} to lead {TOPIC_1} alone",
    )
    alone = cluster.broker(damaged).bootstrap
    [row] = describe(cluster, TOPIC_1, bootstrap=alone)
    assert (row["leader"], row["isr"]) == (damaged, [damaged]), row
    producer = start_traffic(cluster, TOPIC_1, tmp_path / "acks-topic1.txt", bootstrap=alone)
    more_acks(producer, 100)
    assert cluster.is_running(cluster.broker(damaged).name)
    validate_clients(cluster, TOPIC_1, producer, bootstrap=alone)
    return good


def _assert_dir_failed_at_runtime(cluster: LocalCluster, broker_id: int, index: int) -> None:
    path = cluster.dir_plan(broker_id, index).path
    failures = log_lines(cluster, broker_id, "log dir failed")
    assert any(f.get("path") == path for f in failures), f"broker {broker_id} logged no failure of {path}"
    assert all(b.process == "running" for b in cluster.view(probe=False).brokers)


def test_broker_bootstraps_with_a_bad_log_dir(make_cluster, mode: str, tmp_path: Path) -> None:
    """KIP-112 scenario 1: the leader is killed, its dir goes bad while it is down, it starts again."""
    cluster = _cluster(make_cluster, mode)
    cluster.create_topic(TOPIC_2, 1, 3, configs={"min.insync.replicas": "2"})
    producer = start_traffic(cluster, TOPIC_2, tmp_path / "acks-topic2.txt")
    view = cluster.view(probe=False)
    leader = view.partition(TOPIC_2, 0).leader
    bad = dir_index_of(view, TOPIC_2, 0, leader)

    cluster.stop_broker(leader, kill=True)
    cluster.wait_until(
        lambda v: v.partition(TOPIC_2, 0).leader not in (-1, leader), WAIT_S, "a new leader after the kill"
    )
    more_acks(producer)
    cluster.fail_dir(leader, bad)  # dead disk under a stopped broker
    cluster.start_broker(leader)
    view = cluster.wait_until(
        lambda v: v.broker(leader).state == "unfenced", WAIT_S, f"broker {leader} unfenced with one dir"
    )

    # KRaft: the broker is unfenced only once its replica there is reported LOST. ZooKeeper mode has
    # no such gate: the controller learns it from the broker's answer to the LeaderAndIsr it sends
    # the broker that came back.
    view = cluster.wait_until(
        lambda v: v.partition(TOPIC_2, 0).offline == (leader,), WAIT_S, f"broker {leader}'s replica offline"
    )
    bad_path = cluster.dir_plan(leader, bad).path
    startup = log_lines(cluster, leader, "log dir unusable at startup")
    assert any(s.get("path") == bad_path for s in startup), f"no startup error for {bad_path}"
    assert view.broker(leader).online_dirs == 1
    assert all(b.process == "running" for b in view.brokers)
    [row] = describe(cluster, TOPIC_2)
    assert row["leader"] != leader and leader not in row["isr"] and row["offline"] == [leader], row
    # The replica on the bad dir is not re-created on the good one (IsNew=false / LOST in KRaft).
    good_path = cluster.dir_plan(leader, 1 - bad).path
    assert not os.path.exists(os.path.join(good_path, f"{TOPIC_2}-0"))
    more_acks(producer)
    validate_clients(cluster, TOPIC_2, producer)

    _serve_new_topic_alone(cluster, leader, bad, tmp_path)


def test_leader_dir_fails_at_runtime(make_cluster, mode: str, tmp_path: Path) -> None:
    """KIP-112 scenario 2, then every dir of that broker failed: it shuts down."""
    cluster = _cluster(make_cluster, mode)
    cluster.create_topic(TOPIC_2, 1, 3, configs={"min.insync.replicas": "2"})
    producer = start_traffic(cluster, TOPIC_2, tmp_path / "acks-topic2.txt")
    view = cluster.view(probe=False)
    leader = view.partition(TOPIC_2, 0).leader
    bad = dir_index_of(view, TOPIC_2, 0, leader)

    cluster.fail_dir(leader, bad)
    cluster.wait_until(
        lambda v: (
            (p := v.partition(TOPIC_2, 0)).leader not in (-1, leader)
            and leader not in p.isr
            and p.offline == (leader,)
        ),
        WAIT_S,
        "leadership and ISR to leave the failed dir",
    )
    more_acks(producer)
    _assert_dir_failed_at_runtime(cluster, leader, bad)
    [row] = describe(cluster, TOPIC_2)
    assert row["leader"] != leader and leader not in row["isr"] and row["offline"] == [leader], row
    validate_clients(cluster, TOPIC_2, producer)

    good = _serve_new_topic_alone(cluster, leader, bad, tmp_path)

    cluster.fail_dir(leader, good)
    wait_exit(cluster, leader)
    reasons = [d.get("reason", "") for d in log_lines(cluster, leader, "broker shutting down")]
    assert any("all log dirs are offline" in r for r in reasons), reasons


def test_follower_dir_fails_at_runtime(make_cluster, mode: str, tmp_path: Path) -> None:
    """KIP-112 scenario 3, then (KRaft) that broker's metadata.log.dir fails: it shuts down."""
    cluster = _cluster(make_cluster, mode, metadata_disks=True)
    cluster.create_topic(TOPIC_2, 1, 3, configs={"min.insync.replicas": "2"})
    producer = start_traffic(cluster, TOPIC_2, tmp_path / "acks-topic2.txt")
    view = cluster.view(probe=False)
    p = view.partition(TOPIC_2, 0)
    leader = p.leader
    follower = next(b for b in p.replicas if b != leader)
    bad = dir_index_of(view, TOPIC_2, 0, follower)

    cluster.fail_dir(follower, bad)
    cluster.wait_until(
        lambda v: (q := v.partition(TOPIC_2, 0)).offline == (follower,) and follower not in q.isr,
        WAIT_S,
        "the follower's replica to leave the ISR",
    )
    more_acks(producer)
    _assert_dir_failed_at_runtime(cluster, follower, bad)
    [row] = describe(cluster, TOPIC_2)
    assert row["leader"] == leader and follower not in row["isr"] and row["offline"] == [follower], row
    assert sorted(row["isr"]) == sorted(b for b in p.replicas if b != follower)
    validate_clients(cluster, TOPIC_2, producer)

    _serve_new_topic_alone(cluster, follower, bad, tmp_path)

    if mode == "zk":
        return
    cluster.fail_metadata_dir(follower)
    wait_exit(cluster, follower)
    reasons = [d.get("reason", "") for d in log_lines(cluster, follower, "broker shutting down")]
    assert any("metadata.log.dir" in r for r in reasons), reasons
