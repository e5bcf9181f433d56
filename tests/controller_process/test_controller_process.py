"""`kraftpy-controller` as a real process: registration, heartbeats, offline dirs, Fetch, crash and restart.

Each test starts the controller on 127.0.0.1 with a free port, talks msgpack to it over HTTP, and
reads its metadata log back with the `kraftpy metadata dump|image` tools.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from protocol.control_records import control_records
from protocol.errors import Errors
from protocol.record_batch import iter_batches, metadata_records
from protocol.rpc.alter_partition import AlterPartitionRequest
from protocol.rpc.assign_replicas_to_dirs import AssignReplicasToDirsRequest
from protocol.rpc.broker_heartbeat import BrokerHeartbeatRequest, BrokerHeartbeatResponse
from protocol.rpc.broker_registration import BrokerRegistrationRequest, BrokerRegistrationResponse
from protocol.rpc.create_topics import CreateTopicsRequest
from protocol.rpc.describe_cluster import DescribeClusterRequest
from protocol.rpc.fetch import FetchRequest, FetchResponse
from protocol.rpc.fetch_snapshot import FetchSnapshotRequest
from protocol.rpc.metadata import MetadataRequest
from protocol.transport import RpcClient
from protocol.uuid import Uuid
from tests.controller_process.conftest import ControllerNode
from tests.support.processes import controller_command, get_json, run_kraftpy

pytestmark = pytest.mark.slow

QUIET = {"metadata.max.idle.interval.ms": 0}  # no NoOpRecords: the log moves only when asked


def dirs(n: int) -> list[Uuid]:
    return sorted(Uuid.random() for _ in range(n))


async def register(
    client: RpcClient, node: ControllerNode, broker_id: int, log_dirs: list[Uuid], *, port: int = 9092
) -> BrokerRegistrationResponse:
    req = BrokerRegistrationRequest(
        BrokerId=broker_id,
        ClusterId=node.cluster_id,
        IncarnationId=Uuid.random(),
        Listeners=[
            BrokerRegistrationRequest.Listener(Name="PLAINTEXT", Host="127.0.0.1", Port=port + broker_id)
        ],
        Features=[
            BrokerRegistrationRequest.Feature(
                Name="metadata.version", MinSupportedVersion=1, MaxSupportedVersion=22
            )
        ],
        LogDirs=log_dirs,
    )
    return await client.call("BrokerRegistration", req)


async def heartbeat(
    client: RpcClient, broker_id: int, epoch: int, offset: int, **kw: Any
) -> BrokerHeartbeatResponse:
    req = BrokerHeartbeatRequest(BrokerId=broker_id, BrokerEpoch=epoch, CurrentMetadataOffset=offset, **kw)
    return await client.call("BrokerHeartbeat", req)


async def unfence(client: RpcClient, broker_id: int, epoch: int) -> BrokerHeartbeatResponse:
    """Heartbeat as a caught-up broker until the controller unfences it (a bounded number of times)."""
    resp = await heartbeat(client, broker_id, epoch, 1 << 40)
    for _ in range(20):
        if not resp.IsFenced:
            break
        resp = await heartbeat(client, broker_id, epoch, 1 << 40)
    return resp


async def current_epoch(client: RpcClient, node: ControllerNode) -> int:
    probe = await client.call("Fetch", FetchRequest(ClusterId=node.cluster_id, CurrentLeaderEpoch=0))
    assert probe.CurrentLeader is not None
    return probe.CurrentLeader.LeaderEpoch


def decode_fetched(resp: FetchResponse) -> list[tuple[int, str]]:
    """(offset, record type) of every record in the fetched bytes; CRCs checked."""
    out = []
    for batch in iter_batches(resp.Records, verify_crc=True):
        decoded = control_records(batch) if batch.is_control else metadata_records(batch)
        for rec, amv in zip(batch.records, decoded, strict=True):
            out.append((batch.base_offset + rec.offset_delta, type(amv.message).__name__))
    return out


@pytest.fixture
async def client_for() -> Any:
    clients: list[RpcClient] = []

    def make(node: ControllerNode) -> RpcClient:
        c = node.client()
        clients.append(c)
        return c

    yield make
    for c in clients:
        await c.close()


async def test_registration_with_two_dirs_is_in_the_log(
    controller_node: Callable[..., ControllerNode], client_for: Any
) -> None:
    node = controller_node(QUIET)
    client = client_for(node)
    a_b = dirs(2)
    resp = await register(client, node, 2, a_b)
    assert resp.ErrorCode == 0 and resp.BrokerEpoch >= 0

    recs = [r for r in node.records("RegisterBrokerRecord") if r["data"]["BrokerId"] == 2]
    assert len(recs) == 1
    assert recs[0]["data"]["LogDirs"] == [str(d) for d in a_b]
    assert recs[0]["offset"] == resp.BrokerEpoch  # the broker epoch is the record's offset
    assert recs[0]["version"] == 3

    # The controller registered itself, and DescribeCluster names the controllers.
    assert [r["data"]["ControllerId"] for r in node.records("RegisterControllerRecord")] == [1]
    controllers = await client.call("DescribeCluster", DescribeClusterRequest(EndpointType=2))
    assert controllers.ControllerId == 1
    assert [(c.BrokerId, c.Port) for c in controllers.Brokers] == [(1, node.port)]


async def test_registration_without_dirs_is_refused_and_writes_nothing(
    controller_node: Callable[..., ControllerNode], client_for: Any
) -> None:
    node = controller_node(QUIET)
    client = client_for(node)
    before = node.dump()
    resp = await register(client, node, 3, [])
    assert resp.ErrorCode != 0
    assert resp.ErrorCode == Errors.INVALID_REGISTRATION
    # The refusal was answered only after everything before it was durable: nothing new may appear.
    assert node.dump() == before


async def test_heartbeats_unfence_a_broker(
    controller_node: Callable[..., ControllerNode], client_for: Any
) -> None:
    node = controller_node(QUIET)
    client = client_for(node)
    reg = await register(client, node, 2, dirs(1))
    first = await heartbeat(client, 2, reg.BrokerEpoch, 0, WantFence=True)
    assert first.IsFenced
    hb = await unfence(client, 2, reg.BrokerEpoch)
    assert hb.ErrorCode == 0 and not hb.IsFenced and hb.IsCaughtUp
    changes = [
        r["data"] for r in node.records("BrokerRegistrationChangeRecord") if r["data"]["BrokerId"] == 2
    ]
    assert changes and changes[-1]["Fenced"] == -1
    described = await client.call("DescribeCluster", DescribeClusterRequest())
    assert [b.BrokerId for b in described.Brokers] == [2]
    stale = await heartbeat(client, 2, reg.BrokerEpoch + 1, 0)
    assert stale.ErrorCode == Errors.STALE_BROKER_EPOCH


async def test_session_expiry_fences_a_silent_broker_and_noops_keep_coming(
    controller_node: Callable[..., ControllerNode], client_for: Any
) -> None:
    node = controller_node({"broker.session.timeout.ms": 1500, "metadata.max.idle.interval.ms": 200})
    client = client_for(node)
    talking = await register(client, node, 2, dirs(1))
    silent = await register(client, node, 3, dirs(1))
    assert not (await unfence(client, 2, talking.BrokerEpoch)).IsFenced
    assert not (await unfence(client, 3, silent.BrokerEpoch)).IsFenced
    live: list[int] = []
    for _ in range(100):  # broker 3 stops heartbeating; broker 2 keeps going
        await heartbeat(client, 2, talking.BrokerEpoch, 1 << 40)
        live = [b.BrokerId for b in (await client.call("DescribeCluster", DescribeClusterRequest())).Brokers]
        if live == [2]:
            break
        await asyncio.sleep(0.2)
    assert live == [2]
    fences = [
        r["data"]
        for r in node.records("BrokerRegistrationChangeRecord")
        if r["data"]["BrokerId"] == 3 and r["data"]["Fenced"] == 1
    ]
    assert len(fences) == 1
    assert len(node.records("NoOpRecord")) >= 2


async def test_offline_dir_moves_exactly_its_partitions(
    controller_node: Callable[..., ControllerNode], client_for: Any
) -> None:
    node = controller_node(QUIET)
    client = client_for(node)
    a, b = dirs(2)
    reg = await register(client, node, 2, [a, b])
    assert (await unfence(client, 2, reg.BrokerEpoch)).IsFenced is False

    created = await client.call(
        "CreateTopics",
        CreateTopicsRequest(
            Topics=[CreateTopicsRequest.CreatableTopic(Name="events", NumPartitions=4, ReplicationFactor=1)]
        ),
    )
    topic = created.Topics[0]
    assert topic.ErrorCode == 0, topic
    placed = {a: [0, 1], b: [2, 3]}
    assigned = await client.call(
        "AssignReplicasToDirs",
        AssignReplicasToDirsRequest(
            BrokerId=2,
            BrokerEpoch=reg.BrokerEpoch,
            Directories=[
                AssignReplicasToDirsRequest.DirectoryData(
                    Id=d,
                    Topics=[
                        AssignReplicasToDirsRequest.TopicData(
                            TopicId=topic.TopicId,
                            Partitions=[
                                AssignReplicasToDirsRequest.PartitionData(PartitionIndex=p) for p in ps
                            ],
                        )
                    ],
                )
                for d, ps in placed.items()
            ],
        ),
    )
    assert assigned.ErrorCode == 0
    assert all(p.ErrorCode == 0 for d in assigned.Directories for t in d.Topics for p in t.Partitions)

    mark = node.dump()[-1]["offset"] + 1
    hb = await heartbeat(client, 2, reg.BrokerEpoch, 1 << 40, OfflineLogDirs=[a])
    assert hb.ErrorCode == 0

    after = node.dump(mark)
    changes = [r["data"] for r in after if r["type"] == "BrokerRegistrationChangeRecord"]
    assert len(changes) == 1 and changes[0]["BrokerId"] == 2 and changes[0]["LogDirs"] == [str(b)]
    moved = {
        (r["data"]["TopicId"], r["data"]["PartitionId"])
        for r in after
        if r["type"] == "PartitionChangeRecord"
    }
    assert moved == {(str(topic.TopicId), 0), (str(topic.TopicId), 1)}

    md = await client.call("Metadata", MetadataRequest(Topics=None))
    parts = {p.PartitionIndex: p for p in md.Topics[0].Partitions}
    assert parts[0].OfflineReplicas == [2] and parts[1].OfflineReplicas == [2]
    assert parts[2].OfflineReplicas == [] and parts[2].LeaderId == 2
    assert parts[2].ReplicaDirectories == [b]


async def test_fetch_serves_committed_batches_and_long_polls(
    controller_node: Callable[..., ControllerNode], client_for: Any
) -> None:
    node = controller_node(QUIET)
    client = client_for(node)
    epoch = await current_epoch(client, node)

    resp = await client.call(
        "Fetch",
        FetchRequest(
            ClusterId=node.cluster_id,
            ReplicaId=2,
            CurrentLeaderEpoch=epoch,
            FetchOffset=0,
            LastFetchedEpoch=0,
        ),
    )
    assert resp.ErrorCode == 0 and resp.DivergingEpoch is None and resp.SnapshotId is None
    fetched = decode_fetched(resp)
    assert fetched[0] == (0, "LeaderChangeMessage")
    assert "FeatureLevelRecord" in {t for _, t in fetched}
    assert fetched[-1][0] == resp.HighWatermark - 1  # everything committed, nothing beyond
    assert [o for o, _ in fetched] == list(range(resp.HighWatermark))

    # Caught up: the fetch waits until something is committed.
    hw = resp.HighWatermark
    poll = asyncio.ensure_future(
        client.call(
            "Fetch",
            FetchRequest(
                ClusterId=node.cluster_id,
                CurrentLeaderEpoch=epoch,
                FetchOffset=hw,
                LastFetchedEpoch=epoch,
                MaxWaitMs=30000,
            ),
        )
    )
    await asyncio.sleep(0.3)
    assert not poll.done()
    await register(client, node, 2, dirs(2))
    woken = await poll
    assert ("RegisterBrokerRecord" in {t for _, t in decode_fetched(woken)}) and woken.HighWatermark > hw

    # A caught-up fetch with no wait answers at once, empty.
    empty = await client.call(
        "Fetch",
        FetchRequest(
            ClusterId=node.cluster_id,
            CurrentLeaderEpoch=epoch,
            FetchOffset=woken.HighWatermark,
            LastFetchedEpoch=epoch,
        ),
    )
    assert empty.ErrorCode == 0 and empty.Records == b""

    fenced = await client.call(
        "Fetch",
        FetchRequest(
            ClusterId=node.cluster_id, CurrentLeaderEpoch=epoch - 1, FetchOffset=0, LastFetchedEpoch=0
        ),
    )
    assert fenced.ErrorCode == Errors.FENCED_LEADER_EPOCH and fenced.CurrentLeader.LeaderEpoch == epoch
    unknown = await client.call(
        "Fetch",
        FetchRequest(
            ClusterId=node.cluster_id, CurrentLeaderEpoch=epoch + 1, FetchOffset=0, LastFetchedEpoch=0
        ),
    )
    assert unknown.ErrorCode == Errors.UNKNOWN_LEADER_EPOCH
    other = await client.call(
        "Fetch",
        FetchRequest(
            ClusterId="not-this-cluster", CurrentLeaderEpoch=epoch, FetchOffset=0, LastFetchedEpoch=0
        ),
    )
    assert other.ErrorCode == Errors.INCONSISTENT_CLUSTER_ID


async def test_fetch_reports_divergence_after_a_new_epoch(
    controller_node: Callable[..., ControllerNode], client_for: Any
) -> None:
    node = controller_node(QUIET)
    assert node.stop() == 0
    node.start()  # a restart is a new election: epoch 2 starts with its own LeaderChange
    client = client_for(node)
    epoch = await current_epoch(client, node)
    assert epoch == 2
    leader_changes = [r["offset"] for r in node.records("LeaderChangeMessage")]
    epoch2_start = leader_changes[-1]
    # A follower that kept writing in epoch 1 past where epoch 1 ended must truncate to it.
    resp = await client.call(
        "Fetch",
        FetchRequest(
            ClusterId=node.cluster_id,
            CurrentLeaderEpoch=epoch,
            FetchOffset=epoch2_start + 1,
            LastFetchedEpoch=1,
        ),
    )
    assert resp.ErrorCode == 0 and resp.Records == b""
    assert resp.DivergingEpoch is not None
    assert (resp.DivergingEpoch.Epoch, resp.DivergingEpoch.EndOffset) == (1, epoch2_start)
    # Within epoch 1's range the same follower is fine.
    ok = await client.call(
        "Fetch",
        FetchRequest(
            ClusterId=node.cluster_id, CurrentLeaderEpoch=epoch, FetchOffset=epoch2_start, LastFetchedEpoch=1
        ),
    )
    assert ok.DivergingEpoch is None and decode_fetched(ok)[0] == (epoch2_start, "LeaderChangeMessage")


async def test_fetch_points_at_the_snapshot_and_fetch_snapshot_returns_it(
    controller_node: Callable[..., ControllerNode], client_for: Any
) -> None:
    from kraftpy.metalog.snapshots import parse_snapshot

    node = controller_node({**QUIET, "metadata.log.max.record.bytes.between.snapshots": 1})
    client = client_for(node)
    reg = await register(client, node, 2, dirs(2))
    assert reg.ErrorCode == 0
    epoch = await current_epoch(client, node)
    resp = None
    for _ in range(100):  # the snapshot is written in the background after the commit
        resp = await client.call(
            "Fetch",
            FetchRequest(
                ClusterId=node.cluster_id, CurrentLeaderEpoch=epoch, FetchOffset=0, LastFetchedEpoch=0
            ),
        )
        if resp.SnapshotId is not None and resp.SnapshotId.EndOffset > reg.BrokerEpoch:
            break
        await asyncio.sleep(0.1)
    assert resp is not None and resp.SnapshotId is not None, "no snapshot offered"
    assert resp.Records == b""
    sid = resp.SnapshotId
    assert sid.Epoch == epoch and sid.EndOffset > reg.BrokerEpoch

    chunks, position, size = [], 0, None
    while size is None or position < size:
        part = await client.call(
            "FetchSnapshot",
            FetchSnapshotRequest(
                ClusterId=node.cluster_id,
                CurrentLeaderEpoch=epoch,
                SnapshotId=sid,
                Position=position,
                MaxBytes=100,
            ),
        )
        assert part.ErrorCode == 0 and part.Position == position
        chunks.append(part.UnalignedRecords)
        position += len(part.UnalignedRecords)
        size = part.Size
    contents = parse_snapshot(b"".join(chunks), Path("fetched.checkpoint"))
    names = [type(amv.message).__name__ for amv in contents.records()]
    assert names[0] == "FeatureLevelRecord" and "RegisterBrokerRecord" in names
    # The snapshot is the committed image: it describes the same cluster as the whole log does.
    snap_file = (
        node.metadata_dir / "__cluster_metadata-0" / f"{sid.EndOffset:020d}-{sid.Epoch:010d}.checkpoint"
    )
    assert snap_file.read_bytes() == b"".join(chunks)
    from_snapshot = json.loads(run_kraftpy("metadata", "image", "--json", str(snap_file)).stdout)
    assert _cluster(from_snapshot) == _cluster(node.image())

    past = await client.call(
        "FetchSnapshot",
        FetchSnapshotRequest(
            ClusterId=node.cluster_id, CurrentLeaderEpoch=epoch, SnapshotId=sid, Position=size, MaxBytes=100
        ),
    )
    assert past.ErrorCode == Errors.POSITION_OUT_OF_RANGE
    missing = await client.call(
        "FetchSnapshot",
        FetchSnapshotRequest(
            ClusterId=node.cluster_id,
            CurrentLeaderEpoch=epoch,
            SnapshotId={"EndOffset": 1, "Epoch": epoch},
            Position=0,
            MaxBytes=100,
        ),
    )
    assert missing.ErrorCode == Errors.SNAPSHOT_NOT_FOUND


def _cluster(image: dict[str, Any]) -> dict[str, Any]:
    # Where the log ends differs between two readings; what the cluster is must not.
    skip = ("offset", "epoch", "lastContainedLogTimestamp", "sources", "tornTailBytes")
    out = {k: v for k, v in image.items() if k not in skip}
    # A controller registers itself anew, with a new incarnation, every time it starts.
    out["controllers"] = [
        {k: v for k, v in c.items() if k != "incarnationId"} for c in image.get("controllers", [])
    ]
    return out


async def test_kill_9_and_restart_keep_every_committed_record(
    controller_node: Callable[..., ControllerNode], client_for: Any
) -> None:
    node = controller_node({"broker.session.timeout.ms": 600_000})
    client = client_for(node)
    epochs = {}
    for broker_id, n_dirs in ((1, 2), (2, 2), (3, 1)):
        reg = await register(client, node, broker_id, dirs(n_dirs))
        assert reg.ErrorCode == 0
        epochs[broker_id] = reg.BrokerEpoch
        assert not (await unfence(client, broker_id, reg.BrokerEpoch)).IsFenced
    created = await client.call(
        "CreateTopics",
        CreateTopicsRequest(
            Topics=[
                CreateTopicsRequest.CreatableTopic(Name=f"t{i}", NumPartitions=3, ReplicationFactor=2)
                for i in range(3)
            ]
        ),
    )
    assert all(t.ErrorCode == 0 for t in created.Topics)
    before = node.image()

    assert node.kill9() == -9
    node.start()
    after = node.image()
    assert _cluster(after) == _cluster(before)
    assert {b["brokerId"]: b["brokerEpoch"] for b in after["brokers"]} == epochs
    assert {t["name"] for t in after["topics"]} == {"t0", "t1", "t2"}
    verify = run_kraftpy("metadata", "verify", str(node.metadata_dir), check=False)
    assert verify.returncode == 0, verify.stdout + verify.stderr


async def test_sigterm_stops_cleanly(controller_node: Callable[..., ControllerNode], client_for: Any) -> None:
    node = controller_node()
    client = client_for(node)
    await register(client, node, 2, dirs(1))
    assert node.stop() == 0
    assert "controller stopped" in node.proc.log_text()
    assert "Traceback" not in node.proc.log_text()


async def test_metrics_page(controller_node: Callable[..., ControllerNode], client_for: Any) -> None:
    node = controller_node(QUIET)
    client = client_for(node)
    reg = await register(client, node, 2, dirs(2))
    await heartbeat(client, 2, reg.BrokerEpoch, 0, WantFence=True)
    status, text = get_json(f"{node.url}/metrics")
    assert status == 200 and isinstance(text, str)
    assert "kafka_controller_kafkacontroller_activecontrollercount 1.0" in text
    assert "kafka_controller_kafkacontroller_fencedbrokercount 1.0" in text
    assert 'kraftpy_controller_records_appended_total{type="RegisterBrokerRecord"} 1.0' in text
    assert "kafka_controller_controllereventmanager_eventqueuetimems_bucket" in text
    assert "kraftpy_controller_high_watermark" in text


# ---- startup errors ---------------------------------------------------------------------------------


def _run_controller(config: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        controller_command(config), capture_output=True, text=True, timeout=120, check=False
    )


def _assert_one_clear_line(proc: subprocess.CompletedProcess[str], *needles: str) -> None:
    """Non-zero exit, no traceback, and exactly one line for a person (JSON log lines aside)."""
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip() and not line.startswith("{")]
    assert len(lines) == 1, proc.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_garbage_config_is_one_clear_error(tmp_path: Path) -> None:
    cfg = tmp_path / "bad.properties"
    cfg.write_text("process.roles=controller\nnode.id=one\n\x00\x01 garbage here\n")
    _assert_one_clear_line(_run_controller(cfg), "node.id")


def test_missing_config_file(tmp_path: Path) -> None:
    _assert_one_clear_line(_run_controller(tmp_path / "nope.properties"), "nope.properties")


def test_broker_role_is_refused(tmp_path: Path) -> None:
    cfg = tmp_path / "broker.properties"
    cfg.write_text(
        "process.roles=broker\nnode.id=2\ncontroller.listener.names=CONTROLLER\n"
        "controller.quorum.voters=1@127.0.0.1:9093\nlisteners=PLAINTEXT://127.0.0.1:9092\n"
        f"log.dirs={tmp_path / 'd'}\n"
    )
    _assert_one_clear_line(_run_controller(cfg), "controller role")


def test_unformatted_storage_is_one_clear_error(tmp_path: Path) -> None:
    from tests.support.processes import free_port, write_controller_config

    cfg = write_controller_config(
        tmp_path / "c.properties", node_id=1, port=free_port(), metadata_dir=tmp_path / "never-formatted"
    )
    proc = _run_controller(cfg)
    _assert_one_clear_line(proc, "storage format")


async def test_a_lone_voter_does_not_start_without_a_damaged_last_batch(
    controller_node: Callable[..., ControllerNode], client_for: Any
) -> None:
    """Issue 17: its records may have been acknowledged, and no other voter holds them."""
    from kraftpy.metalog.files import PARTITION_DIR
    from kraftpy.metalog.log import DAMAGE_MARKER
    from protocol.record_batch import iter_batch_positions

    node = controller_node()
    client = client_for(node)
    assert (await register(client, node, 2, dirs(1))).ErrorCode == 0
    assert node.stop() == 0
    seg = sorted((node.metadata_dir / PARTITION_DIR).glob("*.log"))[-1]
    data = bytearray(seg.read_bytes())
    pos, header = list(iter_batch_positions(bytes(data)))[-1]
    data[pos + header.size - 1] ^= 0x01  # one bit of the last record: the batch is whole, its CRC fails
    seg.write_bytes(bytes(data))

    for _ in range(2):  # the cut is made at the first start; the second must refuse all the same
        proc = _run_controller(node.config)
        _assert_one_clear_line(proc, "only voter", DAMAGE_MARKER, "backup")
    (node.metadata_dir / PARTITION_DIR / DAMAGE_MARKER).unlink()
    node.start()
    verify = run_kraftpy("metadata", "verify", str(node.metadata_dir), check=False)
    assert verify.returncode == 0, verify.stdout + verify.stderr


async def test_leadership_returns_to_the_preferred_replica(
    controller_node: Callable[..., ControllerNode], client_for: Any
) -> None:
    """auto.leader.rebalance.enable: a preferred replica that was fenced at creation leads once it can."""
    node = controller_node({**QUIET, "leader.imbalance.check.interval.seconds": 1})
    client = client_for(node)
    two = await register(client, node, 2, dirs(1))
    three = await register(client, node, 3, dirs(1))
    assert not (await unfence(client, 2, two.BrokerEpoch)).IsFenced
    created = await client.call(
        "CreateTopics",
        CreateTopicsRequest(
            Topics=[
                CreateTopicsRequest.CreatableTopic(
                    Name="drift",
                    NumPartitions=-1,
                    ReplicationFactor=-1,
                    Assignments=[
                        CreateTopicsRequest.CreatableReplicaAssignment(PartitionIndex=0, BrokerIds=[3, 2])
                    ],
                )
            ]
        ),
    )
    assert created.Topics[0].ErrorCode == 0, created.Topics[0]

    async def leader() -> int:
        md = await client.call("Metadata", MetadataRequest(Topics=None))
        return md.Topics[0].Partitions[0].LeaderId

    assert await leader() == 2  # broker 3 was fenced when the topic was made
    assert not (await unfence(client, 3, three.BrokerEpoch)).IsFenced
    # Broker 3 caught up: the leader brings it into the ISR, as its data plane would.
    expanded = await client.call(
        "AlterPartition",
        AlterPartitionRequest(
            BrokerId=2,
            BrokerEpoch=two.BrokerEpoch,
            Topics=[
                AlterPartitionRequest.TopicData(
                    TopicId=created.Topics[0].TopicId,
                    Partitions=[
                        AlterPartitionRequest.PartitionData(
                            PartitionIndex=0,
                            LeaderEpoch=0,
                            PartitionEpoch=0,
                            NewIsrWithEpochs=[
                                AlterPartitionRequest.BrokerState(BrokerId=2, BrokerEpoch=two.BrokerEpoch),
                                AlterPartitionRequest.BrokerState(BrokerId=3, BrokerEpoch=three.BrokerEpoch),
                            ],
                        )
                    ],
                )
            ],
        ),
    )
    assert expanded.ErrorCode == 0 and expanded.Topics[0].Partitions[0].ErrorCode == 0, expanded
    current = await leader()
    for _ in range(100):
        if current == 3:
            break
        await asyncio.sleep(0.1)
        await heartbeat(client, 2, two.BrokerEpoch, 1 << 40)
        await heartbeat(client, 3, three.BrokerEpoch, 1 << 40)
        current = await leader()
    assert current == 3
