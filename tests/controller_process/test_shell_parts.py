"""Small parts of the controller process that need no running process.

Deferred replies, snapshot policy and generator, metrics, the RPC handlers' edge, health.
"""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from controller.deferred import DeferredEventQueue


async def test_deferred_replies_complete_in_offset_order_once_durable() -> None:
    loop = asyncio.get_running_loop()
    q = DeferredEventQueue()
    futs = [loop.create_future() for _ in range(3)]
    q.add(4, futs[0], "a")
    q.add(4, futs[1], "b")  # an operation without records waits for the last one written
    q.add(9, futs[2], "c")
    assert q.complete_up_to(4) == 0  # offset 4 is not below the watermark yet
    assert q.complete_up_to(5) == 2
    assert [f.result() for f in futs[:2]] == ["a", "b"] and not futs[2].done()
    q.complete_up_to(3)  # a watermark never moves back
    assert q.high_watermark == 5
    assert q.complete_up_to(10) == 1 and futs[2].result() == "c"
    late = loop.create_future()
    q.add(7, late, "durable already")  # e.g. a read that needs nothing newer than the watermark
    assert late.done() and len(q) == 0


async def test_deferred_rejects_out_of_order_and_fails_all() -> None:
    loop = asyncio.get_running_loop()
    q = DeferredEventQueue()
    f = loop.create_future()
    q.add(10, f, None)
    with pytest.raises(ValueError):
        q.add(3, loop.create_future(), None)
    q.fail_all(RuntimeError("log failed"))
    with pytest.raises(RuntimeError):
        f.result()
    assert len(q) == 0


async def test_deferred_ignores_abandoned_futures() -> None:
    loop = asyncio.get_running_loop()
    q = DeferredEventQueue()
    f = loop.create_future()
    q.add(0, f, 1)
    f.cancel()
    assert q.complete_up_to(1) == 1


def test_metrics_render_cluster_gauges() -> None:
    from prometheus_client import CollectorRegistry, generate_latest

    from controller.metrics import ControllerMetrics, ControllerStats

    reg = CollectorRegistry()
    from protocol.metadata_records import NoOpRecord, PartitionChangeRecord
    from protocol.uuid import Uuid

    stats = ControllerStats(active=True, fenced_brokers=2, offline_partitions=7, preferred_imbalance=3)
    m = ControllerMetrics(reg, lambda: stats)
    t = Uuid.random()
    m.count_records(
        [
            PartitionChangeRecord(PartitionId=0, TopicId=t, Leader=2),
            # An unclean election: the new leader starts RECOVERING.
            PartitionChangeRecord(PartitionId=1, TopicId=t, Leader=2, Isr=[2], LeaderRecoveryState=1),
            NoOpRecord(),
        ]
    )
    text = generate_latest(reg).decode()
    assert "kafka_controller_kafkacontroller_preferredreplicaimbalancecount 3.0" in text
    assert "kafka_controller_controllerstats_uncleanleaderelections_total 1.0" in text
    assert "kafka_controller_kafkacontroller_activecontrollercount 1.0" in text
    assert "kafka_controller_kafkacontroller_fencedbrokercount 2.0" in text
    assert "kafka_controller_kafkacontroller_offlinepartitionscount 7.0" in text
    assert 'kraftpy_controller_records_appended_total{type="PartitionChangeRecord"} 2.0' in text


class _RaftStub:
    """The Raft client as the snapshot generator and the handlers see it."""

    def __init__(self) -> None:
        self.snapshots: list[tuple[int, int]] = []

    async def write_snapshot(self, records: list[Any], end_offset: int, timestamp_ms: int) -> Any:
        from kraftpy.metalog.files import SnapshotId

        self.snapshots.append((len(records), end_offset))
        return SnapshotId(end_offset, 1)

    async def handle_fetch(self, req: Any, version: int) -> Any:
        return None

    handle_fetch_snapshot = handle_fetch


def _committed(base: int, records: list[Any]) -> Any:
    from controller.log_sink import PreparedAppend

    return PreparedAppend(base, base + len(records) - 1, 1, 1000, records, (b"x" * 100,))


async def test_snapshot_generator_writes_committed_records_and_none_once_shutting_down() -> None:
    from controller.committed_image import CommittedImage
    from controller.snapshots import SnapshotGenerator
    from kraftpy.image import MetadataDelta, MetadataImage
    from kraftpy.metalog.snapshot_policy import SnapshotPolicy
    from protocol.framing import ApiMessageAndVersion
    from protocol.metadata_records import FeatureLevelRecord, NoOpRecord

    raft = _RaftStub()
    taken: list[int] = []
    gen = SnapshotGenerator(
        CommittedImage(MetadataDelta(MetadataImage.EMPTY), 0),
        SnapshotPolicy(max_bytes_between=150, max_interval_ms=0, last_snapshot_ms=0),
        raft,  # type: ignore[arg-type]
        clock_ms=lambda: 5,
        on_snapshot=lambda: taken.append(1),
    )
    mv = ApiMessageAndVersion(FeatureLevelRecord(Name="metadata.version", FeatureLevel=21), 0)
    gen.on_committed(_committed(0, [mv]))
    await asyncio.sleep(0)
    assert raft.snapshots == []  # 100 bytes: below the byte trigger
    gen.on_committed(_committed(1, [ApiMessageAndVersion(NoOpRecord(), 0)]))
    for _ in range(500):  # the fold and the write each run on the generator's thread
        await asyncio.sleep(0.01)
        if taken:
            break
    assert taken == [1] and raft.snapshots and raft.snapshots[0][1] == 2
    gen.begin_shutdown()
    gen.on_committed(_committed(2, [ApiMessageAndVersion(NoOpRecord(), 0)] * 3))
    gen.on_committed(_committed(5, [ApiMessageAndVersion(NoOpRecord(), 0)]))
    await gen.stop()
    assert len(raft.snapshots) == 1


def test_committed_image_folds_on_a_thread_while_commits_arrive_in_order() -> None:
    """The snapshot's fold runs on a thread while the loop keeps adding: every commit is folded
    once, in offset order, and the folded end covers control batches skipped over."""
    import threading

    from controller.committed_image import CommittedImage
    from kraftpy.image import MetadataDelta, MetadataImage
    from protocol.metadata_records import FeatureLevelRecord, TopicRecord
    from protocol.uuid import Uuid

    committed = CommittedImage(MetadataDelta(MetadataImage.EMPTY), 0)
    committed.add(0, [FeatureLevelRecord(Name="metadata.version", FeatureLevel=21)], 1, 0)
    committed.skip_to(3)  # a LeaderChange batch at 1..2
    first = committed.fold()
    assert first.end_offset == 3 and not first.in_transaction
    ids = [Uuid.random() for _ in range(3000)]
    done = threading.Event()
    ends: list[int] = []

    def fold_meanwhile() -> None:
        while not done.is_set():
            ends.append(committed.fold().end_offset)

    folder = threading.Thread(target=fold_meanwhile)
    folder.start()
    try:
        for i, tid in enumerate(ids):
            committed.add(3 + i, [TopicRecord(Name=f"t{i}", TopicId=tid)], 1, 0)
    finally:
        done.set()
        folder.join()
    last = committed.fold()
    assert last.end_offset == committed.end_offset == 3 + len(ids)
    assert ends == sorted(ends)  # the folded end only moves forward
    assert [last.image.topics.get_topic(f"t{i}").id for i in range(len(ids))] == ids


async def test_handlers_answer_not_controller_once_the_queue_is_closed() -> None:
    from prometheus_client import CollectorRegistry

    from controller.event_queue import ControllerEventQueue
    from controller.handlers import ControllerApis
    from controller.metrics import ControllerMetrics, ControllerStats
    from protocol.errors import Errors, KafkaError
    from protocol.rpc.create_topics import CreateTopicsRequest
    from protocol.rpc.describe_cluster import DescribeClusterRequest

    class NoSink:
        next_offset = 0

    queue = ControllerEventQueue(replay=lambda r, o: None, sink=NoSink(), on_fatal=lambda m, e: None)  # type: ignore[arg-type]
    queue.start()
    await queue.close()
    metrics = ControllerMetrics(CollectorRegistry(), ControllerStats)
    term: Any = SimpleNamespace(core=object(), queue=queue)
    apis = ControllerApis(
        lambda: term,
        _RaftStub(),  # type: ignore[arg-type]
        metrics,
        heartbeat_deadline_s=1.0,
        clock_ms=lambda: 0,
        cluster_id="c",
    )
    handlers = apis.handlers()
    assert {"BrokerRegistration", "BrokerHeartbeat", "Fetch", "FetchSnapshot", "Metadata"} <= set(handlers)
    for api, req in (("CreateTopics", CreateTopicsRequest()), ("DescribeCluster", DescribeClusterRequest())):
        with pytest.raises(KafkaError) as ei:
            await handlers[api](req, 0)
        assert ei.value.code is Errors.NOT_CONTROLLER
    # A controller that is not the active one answers the same, so brokers look for the leader.
    term = None
    for api, req in (("CreateTopics", CreateTopicsRequest()), ("DescribeCluster", DescribeClusterRequest())):
        with pytest.raises(KafkaError) as ei:
            await handlers[api](req, 0)
        assert ei.value.code is Errors.NOT_CONTROLLER


def test_health_and_stats_of_a_controller_not_started() -> None:
    from controller.health import controller_stats, health
    from controller.metrics import ControllerStats

    assert health(stopping=True, active=False, node_id=3, cluster_id="c", raft=None) == {
        "status": "stopping",
        "role": "controller",
        "node_id": 3,
        "cluster_id": "c",
        "active": False,
        "leader_epoch": 0,
        "high_watermark": 0,
        "log_end_offset": 0,
        "raft": {
            "role": "unattached",
            "leader_id": -1,
            "leader_epoch": 0,
            "high_watermark": 0,
            "log_end_offset": 0,
            "voters": [],
        },
    }
    assert controller_stats(active=True, core=None, raft=None, queue=None) == ControllerStats()


def test_the_raft_store_applies_retention_when_the_core_says_the_minute_is_up(tmp_path: Any) -> None:
    from controller.raft_store import RaftLogStore
    from kraftpy.metalog import MetadataLog, MetadataLogConfig
    from kraftpy.raft.ready import Ready
    from tests.metalog.helpers import log_with_two_snapshots

    # Two snapshots, no cleaning since the second (a controller that wrote it before a restart
    # with lower limits, or one whose retention.ms has passed since): only the minute cleans.
    first, latest, _ = log_with_two_snapshots(tmp_path)
    with MetadataLog.open(tmp_path, MetadataLogConfig(segment_bytes=600, retention_bytes=0)) as mlog:
        store = RaftLogStore(mlog, frozenset({1}))
        store.persist(Ready())
        assert mlog.snapshot_ids() == [first, latest] and mlog.log_start_offset == 0
        store.persist(Ready(clean_log=True))
        store.flush()
        assert mlog.snapshot_ids() == [latest]
        assert 0 < mlog.log_start_offset <= latest.offset
    with MetadataLog.open(tmp_path) as mlog:
        assert mlog.snapshot_ids() == [latest]  # durable: the deletions were flushed
