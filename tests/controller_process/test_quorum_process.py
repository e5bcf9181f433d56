"""Three real controller processes as one KRaft quorum on 127.0.0.1.

One leader is elected and only it is active; a CreateTopics it acknowledged survives kill -9 of it;
a new leader is elected within the issue's 3 s; the voters' logs are byte-identical up to the high
watermark; SIGTERM hands leadership over at once (EndQuorumEpoch); bad quorum RPCs get Kafka's error
codes and change nothing.
"""

from __future__ import annotations

import asyncio
import json
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kraftpy.metalog.checkpoints import read_quorum_state
from protocol.errors import Errors
from protocol.rpc.broker_heartbeat import BrokerHeartbeatRequest
from protocol.rpc.create_topics import CreateTopicsRequest
from protocol.rpc.describe_cluster import DescribeClusterRequest
from protocol.rpc.describe_quorum import DescribeQuorumRequest
from protocol.rpc.fetch import FetchRequest
from protocol.rpc.metadata import MetadataRequest
from protocol.transport import RpcClient
from tests.support.processes import (
    ManagedProcess,
    ProcessSet,
    format_storage,
    free_port,
    random_cluster_id,
    write_broker_config,
    write_controller_config,
)
from tests.support.quorum_workload import broker_registration
from tests.support.raft_logs import committed_prefix
from tools.cluster.layout import wait_until

VOTERS = (1, 2, 3)
FAST = {
    "metadata.max.idle.interval.ms": 500,
}


@dataclass
class Voter:
    node_id: int
    port: int
    workdir: Path
    proc: ManagedProcess | None = None
    starts: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_dir(self) -> Path:
        return self.workdir / "meta" / "__cluster_metadata-0"

    def health(self) -> dict[str, Any] | None:
        try:
            with urllib.request.urlopen(f"{self.url}/healthz", timeout=2) as resp:
                return json.loads(resp.read())
        except Exception:
            return None


class Quorum:
    def __init__(self, root: Path, procs: ProcessSet) -> None:
        self.procs = procs
        self.cluster_id = random_cluster_id()
        self.voters = {i: Voter(i, free_port(), root / f"controller-{i}") for i in VOTERS}
        ports = {i: v.port for i, v in self.voters.items()}
        for v in self.voters.values():
            v.workdir.mkdir(parents=True)
            config = write_controller_config(
                v.workdir / "controller.properties",
                node_id=v.node_id,
                port=v.port,
                metadata_dir=v.workdir / "meta",
                voters=ports,
                extra=FAST,
            )
            format_storage(config, self.cluster_id)

    def start(self, node_id: int) -> None:
        v = self.voters[node_id]
        v.starts += 1
        v.proc = self.procs.start_controller(
            v.workdir / "controller.properties", name=f"controller-{node_id}-run{v.starts}"
        )

    def alive(self) -> list[Voter]:
        return [v for v in self.voters.values() if v.proc is not None and v.proc.alive]

    def wait_leader(self, timeout: float = 30.0, exclude: int | None = None) -> Voter:
        """The one voter that says it is active (and every live voter agrees who leads)."""
        deadline = time.monotonic() + timeout
        last: Any = None
        while time.monotonic() < deadline:
            healths = {v.node_id: v.health() for v in self.alive()}
            active = [i for i, h in healths.items() if h and h.get("active")]
            if len(active) == 1 and active[0] != exclude:
                leader = active[0]
                if all(h and h["raft"]["leader_id"] == leader for h in healths.values()):
                    return self.voters[leader]
            last = healths
            time.sleep(0.05)
        raise AssertionError(f"no single active controller within {timeout}s: {last}")

    def client(self, v: Voter) -> RpcClient:
        return RpcClient(v.url, timeout=10)


@pytest.fixture
def quorum(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Quorum]:
    procs = ProcessSet(tmp_path)
    request.addfinalizer(procs.stop_all)
    q = Quorum(tmp_path, procs)
    for i in VOTERS:
        q.start(i)
    yield q


@pytest.fixture
async def clients() -> AsyncIterator[list[RpcClient]]:
    opened: list[RpcClient] = []
    yield opened
    for c in opened:
        await c.close()


async def create_topic(client: RpcClient, name: str) -> int:
    req = CreateTopicsRequest(
        Topics=[CreateTopicsRequest.CreatableTopic(Name=name, NumPartitions=1, ReplicationFactor=-1)]
    )
    resp = await client.call("CreateTopics", req)
    return resp.Topics[0].ErrorCode


async def register_broker(client: RpcClient, cluster_id: str, broker_id: int) -> int:
    req = broker_registration(cluster_id, broker_id)
    resp = await client.call("BrokerRegistration", req)
    assert resp.ErrorCode == 0, resp
    return resp.BrokerEpoch


async def topic_names(client: RpcClient) -> set[str]:
    resp = await client.call("Metadata", MetadataRequest(Topics=None))
    return {t.Name for t in resp.Topics}


async def test_three_voters_elect_one_active_controller_that_survives_kill_9(
    quorum: Quorum, clients: list[RpcClient]
) -> None:
    leader = quorum.wait_leader()
    followers = [v for v in quorum.voters.values() if v is not leader]
    lc = quorum.client(leader)
    clients.append(lc)
    # Only the active controller serves brokers: the others send them looking for it.
    for f in followers:
        fc = quorum.client(f)
        clients.append(fc)
        resp = await fc.call("DescribeCluster", DescribeClusterRequest())
        assert resp.ErrorCode == Errors.NOT_CONTROLLER
    assert (await lc.call("DescribeCluster", DescribeClusterRequest())).ErrorCode == 0
    # DescribeQuorum: the leader knows every voter's progress (once each has fetched); the others
    # point at the leader.
    deadline = time.monotonic() + 30
    while True:
        quorum_view = await lc.call("DescribeQuorum", DescribeQuorumRequest())
        assert quorum_view.ErrorCode == 0 and quorum_view.LeaderId == leader.node_id
        assert sorted(r.ReplicaId for r in quorum_view.CurrentVoters) == list(VOTERS)
        if all(r.LogEndOffset > 0 and r.LastFetchTimestamp > 0 for r in quorum_view.CurrentVoters):
            break
        assert time.monotonic() < deadline, quorum_view
        await asyncio.sleep(0.05)
    elsewhere = await quorum.client(followers[0]).call("DescribeQuorum", DescribeQuorumRequest())
    assert elsewhere.ErrorCode == Errors.NOT_LEADER_OR_FOLLOWER and elsewhere.LeaderId == leader.node_id

    # A CreateTopics the leader acknowledged must survive its death.
    broker_epoch = await register_broker(lc, quorum.cluster_id, 100)
    deadline = time.monotonic() + 30
    while True:
        hb = await lc.call(
            "BrokerHeartbeat",
            BrokerHeartbeatRequest(BrokerId=100, BrokerEpoch=broker_epoch, CurrentMetadataOffset=1 << 40),
        )
        if not hb.IsFenced or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.05)
    assert not hb.IsFenced
    assert await create_topic(lc, "acknowledged") == 0

    before = leader.health()
    assert before is not None
    assert leader.proc is not None
    t0 = time.monotonic()
    leader.proc.kill9()
    new = quorum.wait_leader(timeout=30, exclude=leader.node_id)
    # How long it took is bench/controller_failover.py's to measure; here it is only shown.
    print(f"\nnew leader {new.node_id} active {time.monotonic() - t0:.2f}s after kill -9 of {leader.node_id}")
    assert new is not leader
    after = new.health()
    assert after is not None and after["leader_epoch"] > before["leader_epoch"]
    nc = quorum.client(new)
    clients.append(nc)
    md = await nc.call("Metadata", MetadataRequest(Topics=None))
    assert "acknowledged" in {t.Name for t in md.Topics}, (md, new.health())

    # Everything the old leader had committed is in the new leader's log, byte for byte.
    hw = before["high_watermark"]
    assert committed_prefix(new.log_dir, hw) == committed_prefix(leader.log_dir, hw)
    # The survivors agree up to the least of their high watermarks (all committed there).
    h = [v.health() for v in quorum.alive()]
    common = min(x["high_watermark"] for x in h if x)
    prefixes = {committed_prefix(v.log_dir, common) for v in quorum.alive()}
    assert len(prefixes) == 1

    # The killed voter comes back as a follower and catches up.
    quorum.start(leader.node_id)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        back = leader.health()
        if back and back["raft"]["leader_id"] == new.node_id and back["high_watermark"] >= common:
            break
        await asyncio.sleep(0.1)
    else:
        raise AssertionError(f"the restarted voter did not follow {new.node_id}: {leader.health()}")
    assert committed_prefix(leader.log_dir, common) == committed_prefix(new.log_dir, common)


async def test_sigterm_of_the_leader_hands_over_at_once(quorum: Quorum) -> None:
    leader = quorum.wait_leader()
    assert leader.proc is not None
    t0 = time.monotonic()
    leader.proc.terminate()
    new = quorum.wait_leader(timeout=30, exclude=leader.node_id)
    # EndQuorumEpoch names the successors, so nobody waits out an election timeout (1-2 s).
    print(f"\nnew leader {new.node_id} active {time.monotonic() - t0:.2f}s after SIGTERM of {leader.node_id}")
    assert new is not leader
    proc = leader.proc
    # The old leader may still be writing its last lines when the new one answers.
    wait_until(
        "the old leader to log its resignation",
        lambda: "resigned as the active controller" in proc.log_text(),
    )


async def test_bad_quorum_requests_get_kafka_errors_and_change_nothing(
    quorum: Quorum, clients: list[RpcClient]
) -> None:
    leader = quorum.wait_leader()
    follower = next(v for v in quorum.voters.values() if v is not leader)
    c = quorum.client(follower)
    clients.append(c)
    state_before = read_quorum_state(follower.log_dir / "quorum-state")
    health = follower.health()
    assert health is not None
    epoch = health["leader_epoch"]

    from protocol.rpc.begin_quorum_epoch import BeginQuorumEpochRequest
    from protocol.rpc.vote import VoteRequest

    cases: list[tuple[str, Any, Errors]] = [
        (
            "Vote",
            VoteRequest(
                ClusterId="wrong-cluster-id-00000",
                CandidateEpoch=epoch + 5,
                CandidateId=leader.node_id,
                LastOffsetEpoch=epoch,
                LastOffset=10**9,
            ),
            Errors.INCONSISTENT_CLUSTER_ID,
        ),
        (
            "Vote",
            VoteRequest(
                ClusterId=quorum.cluster_id,
                CandidateEpoch=epoch + 5,
                CandidateId=99,
                LastOffsetEpoch=epoch,
                LastOffset=10**9,
            ),
            Errors.INCONSISTENT_VOTER_SET,
        ),
        (
            "Vote",
            VoteRequest(
                ClusterId=quorum.cluster_id,
                CandidateEpoch=epoch + 5,
                CandidateId=leader.node_id,
                LastOffsetEpoch=epoch,
                LastOffset=-1,
            ),
            Errors.INVALID_REQUEST,
        ),
        (
            "BeginQuorumEpoch",
            BeginQuorumEpochRequest(
                ClusterId=quorum.cluster_id, LeaderId=leader.node_id, LeaderEpoch=epoch - 1
            ),
            Errors.FENCED_LEADER_EPOCH,
        ),
        (
            "Fetch",
            FetchRequest(
                ClusterId=quorum.cluster_id,
                ReplicaId=leader.node_id,
                CurrentLeaderEpoch=epoch,
                FetchOffset=-5,
                LastFetchedEpoch=0,
            ),
            Errors.NOT_LEADER_OR_FOLLOWER,
        ),
    ]
    for api, req, expected in cases:
        resp = await c.call(api, req)
        assert _error_of(resp) == expected, (api, req, resp)
    # To the leader: a negative offset and a future epoch.
    lc = quorum.client(leader)
    clients.append(lc)
    bad = await lc.call(
        "Fetch",
        FetchRequest(
            ClusterId=quorum.cluster_id,
            ReplicaId=follower.node_id,
            CurrentLeaderEpoch=epoch,
            FetchOffset=-5,
            LastFetchedEpoch=0,
        ),
    )
    assert bad.ErrorCode == Errors.INVALID_REQUEST
    future = await lc.call(
        "Fetch",
        FetchRequest(
            ClusterId=quorum.cluster_id,
            ReplicaId=follower.node_id,
            CurrentLeaderEpoch=epoch + 7,
            FetchOffset=0,
            LastFetchedEpoch=0,
        ),
    )
    assert future.ErrorCode == Errors.UNKNOWN_LEADER_EPOCH
    assert future.CurrentLeader is not None and future.CurrentLeader.LeaderId == leader.node_id
    assert read_quorum_state(follower.log_dir / "quorum-state") == state_before
    assert quorum.wait_leader() is leader


def _error_of(resp: Any) -> int:
    code = getattr(resp, "ErrorCode", 0)
    if code:
        return code
    for topic in getattr(resp, "Topics", None) or []:
        for p in getattr(topic, "Partitions", None) or []:
            if p.ErrorCode:
                return p.ErrorCode
    return 0


# ---- brokers on a quorum --------------------------------------------------------------------------


class Broker:
    def __init__(self, quorum: Quorum, node_id: int, root: Path) -> None:
        self.node_id = node_id
        self.port = free_port()
        self.workdir = root / f"broker-{node_id}"
        self.dirs = [self.workdir / "d0", self.workdir / "d1"]
        ports = {i: v.port for i, v in quorum.voters.items()}
        self.config = write_broker_config(
            self.workdir / "broker.properties",
            node_id=node_id,
            port=self.port,
            log_dirs=self.dirs,
            voters=ports,
            metadata_dir=self.workdir / "meta",
            extra={"broker.heartbeat.interval.ms": 500, "log.dir.probe.interval.ms": 200},
        )
        format_storage(self.config, quorum.cluster_id)
        self.proc = quorum.procs.start_broker(self.config, name=f"broker-{node_id}")

    def health(self) -> dict[str, Any] | None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz", timeout=2) as resp:
                return json.loads(resp.read())
        except Exception:
            return None


async def test_brokers_follow_the_active_controller_through_kill_9_and_report_a_dir_failure_to_it(
    quorum: Quorum, tmp_path: Path, clients: list[RpcClient]
) -> None:
    leader = quorum.wait_leader()
    brokers = [Broker(quorum, 10 + i, tmp_path) for i in range(2)]
    for b in brokers:
        wait_until(
            f"broker {b.node_id} unfenced",
            lambda b=b: (h := b.health()) and h.get("broker_state") == "RUNNING",
            60,
        )
    lc = quorum.client(leader)
    clients.append(lc)
    req = CreateTopicsRequest(
        Topics=[CreateTopicsRequest.CreatableTopic(Name="orders", NumPartitions=4, ReplicationFactor=2)]
    )
    assert (await lc.call("CreateTopics", req)).Topics[0].ErrorCode == 0

    victim = brokers[0]
    health = wait_until(
        "the victim's replicas placed",
        lambda: (
            (h := victim.health())
            and h["replicas"]["replicas"] == 4
            and h["replicas"]["unplaced_replicas"] == 0
            and h
        ),
    )
    # The leader dies and, while the quorum elects another, a broker loses a dir.
    assert leader.proc is not None
    leader.proc.kill9()
    busy = max(health["replicas"]["replicas_by_dir"].items(), key=lambda kv: kv[1])[0]
    dead = Path(next(path for path, d in health["dirs"]["online"].items() if d == busy))
    dead.rename(dead.with_name(dead.name + ".gone"))
    dead.write_text("not a dir any more")  # every path under it fails with ENOTDIR
    new = quorum.wait_leader(timeout=30, exclude=leader.node_id)
    t0 = time.monotonic()
    for b in brokers:
        wait_until(
            f"broker {b.node_id} on controller {new.node_id}",
            lambda b=b: (
                (h := b.health())
                and h["controller"]["leader_id"] == new.node_id
                and h["broker_state"] == "RUNNING"
            ),
            30,
        )
    print(f"\nbrokers on controller {new.node_id} {time.monotonic() - t0:.2f}s after it became active")
    # The heartbeat carrying OfflineLogDirs reached the new leader: it moved the dir's partitions.
    wait_until(
        "the offline dir acknowledged",
        lambda: (
            (h := victim.health())
            and h["offline_log_dirs_acknowledged"]
            and all(h["offline_log_dirs_acknowledged"].values())
        ),
        30,
    )
    nc = quorum.client(new)
    clients.append(nc)
    # Replicas placed (AssignReplicasToDirs may have been refused during the election and resent to the
    # new leader), every partition led, none from the dead dir.
    deadline = time.monotonic() + 30
    while True:
        md = await nc.call("Metadata", MetadataRequest(Topics=None))
        orders = next((t for t in md.Topics if t.Name == "orders"), None)
        offline = [p for p in orders.Partitions if victim.node_id in p.OfflineReplicas] if orders else []
        if orders and offline and all(p.LeaderId >= 0 for p in orders.Partitions):
            break
        assert time.monotonic() < deadline, (repr(md), json.dumps(victim.health()))
        await asyncio.sleep(0.1)
    assert all(p.LeaderId != victim.node_id for p in offline)
