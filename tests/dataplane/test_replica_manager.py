"""The data plane's request handling in one process, on real partition logs and log dirs: produce
with acks 0/1/all, idempotent retries, min.insync.replicas, followers moving the high watermark,
leader-epoch checks and divergence, consumer reads below the HW, ListOffsets, DescribeLogDirs,
Metadata, and a failed dir answering KAFKA_STORAGE_ERROR.

The host is a small stand-in for the broker shell: the metadata image is built from records, and
the controller only hands out producer ids (ISR changes are refused, so the ISR stays as the
metadata says).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from broker.core.partition_state import PartitionState
from broker.dataplane import DataPlane
from broker.dataplane.host import ConfiguredLogDir, LocalLog
from broker.dataplane.leader_tail import LeaderTail
from broker.log_dir_failure import LogDirFailureChannel
from broker.storage import LogDir, PartitionLog
from kraftpy.config import KafkaConfig
from kraftpy.image import MetadataDelta, MetadataImage, TopicIdPartition
from protocol import metadata_records as mr
from protocol.errors import Errors, KafkaError
from protocol.rpc.allocate_producer_ids import AllocateProducerIdsResponse
from protocol.rpc.alter_partition import AlterPartitionResponse
from protocol.rpc.broker_fetch import FetchRequest, FetchResponse, ReplicaStateData
from protocol.rpc.describe_log_dirs import DescribeLogDirsRequest
from protocol.rpc.init_producer_id import InitProducerIdRequest
from protocol.rpc.list_offsets import ListOffsetsRequest
from protocol.rpc.metadata import MetadataRequest
from protocol.rpc.produce import ProduceRequest, ProduceResponse
from protocol.uuid import Uuid
from tools.client.records import ProducerRecord, build_batch, read_records

TOPIC_ID = Uuid.random()
DIR_A, DIR_B = Uuid.random(), Uuid.random()
FOLLOWER_DIRS = {2: Uuid.random(), 3: Uuid.random()}


class Controller:
    """Answers what a leader asks the controller here: producer id blocks; ISR changes refused."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.next_id = 1000

    async def call(self, api: str, req: Any, version: int | None = None, **_: Any) -> Any:
        self.calls.append(api)
        if api == "AllocateProducerIds":
            start, self.next_id = self.next_id, self.next_id + 10
            return AllocateProducerIdsResponse(ProducerIdStart=start, ProducerIdLen=10)
        if api == "AlterPartition":
            return AlterPartitionResponse(ErrorCode=int(Errors.NOT_CONTROLLER))
        raise KafkaError(Errors.INVALID_REQUEST, api)

    async def close(self) -> None:
        pass


class Host:
    node_id = 1
    cluster_id = "test-cluster"
    broker_epoch = 10

    def __init__(self, root: Path, image: MetadataImage) -> None:
        self.config = KafkaConfig.from_properties(
            {
                "process.roles": "broker",
                "node.id": "1",
                "controller.quorum.voters": "100@127.0.0.1:1",
                "controller.listener.names": "CONTROLLER",
                "listeners": "PLAINTEXT://127.0.0.1:9092",
                "min.insync.replicas": "2",
            }
        )
        self.image = image
        self.controller = Controller()
        self.failures = LogDirFailureChannel()
        self.dirs = {
            d: LogDir(root / name, d, on_failure=self.failures.maybe_add_offline_log_dir)
            for d, name in ((DIR_A, "a"), (DIR_B, "b"))
        }
        for ld in self.dirs.values():
            ld.path.mkdir()
        self.logs: dict[int, LocalLog] = {}

    async def local_log(self, tp: TopicIdPartition) -> LocalLog | None:
        if tp.partition not in self.logs:
            ld = self.dirs[DIR_A if tp.partition == 0 else DIR_B]
            if not ld.online:
                raise KafkaError(Errors.KAFKA_STORAGE_ERROR, "offline")
            log = await ld.run(PartitionLog.open, ld.path / f"{tp.topic_name}-{tp.partition}")
            self.logs[tp.partition] = LocalLog(log, ld)
        local = self.logs[tp.partition]
        if not local.log_dir.online:
            raise KafkaError(Errors.KAFKA_STORAGE_ERROR, "offline")
        return local

    def configured_log_dirs(self) -> list[ConfiguredLogDir]:
        return [ConfiguredLogDir(str(ld.path), d, ld) for d, ld in self.dirs.items()]


def image(isr0: list[int], leader_epoch_bumps: int = 0) -> MetadataImage:
    delta = MetadataDelta(MetadataImage.EMPTY)
    recs: list[Any] = [mr.FeatureLevelRecord(Name="metadata.version", FeatureLevel=21)]
    for b in (1, 2, 3):
        dirs = [DIR_A, DIR_B] if b == 1 else [FOLLOWER_DIRS[b]]
        recs.append(
            mr.RegisterBrokerRecord(
                BrokerId=b,
                BrokerEpoch=10 * b,
                IncarnationId=Uuid.random(),
                EndPoints=[
                    mr.RegisterBrokerRecord.BrokerEndpoint(
                        Name="PLAINTEXT", Host="127.0.0.1", Port=9090 + b, SecurityProtocol=0
                    )
                ],
                Fenced=False,
                LogDirs=dirs,
            )
        )
    recs.append(mr.TopicRecord(Name="t", TopicId=TOPIC_ID))
    # t-0: leader 1, followers 2 and 3 (ISR as given), in dir A; t-1: broker 1 alone, in dir B.
    recs.append(
        mr.PartitionRecord(PartitionId=0, TopicId=TOPIC_ID, Replicas=[1, 2, 3], Isr=isr0, Leader=1, LeaderEpoch=0, PartitionEpoch=0,
                           Directories=[DIR_A, FOLLOWER_DIRS[2], FOLLOWER_DIRS[3]])
    )  # fmt: skip
    recs.append(
        mr.PartitionRecord(
            PartitionId=1,
            TopicId=TOPIC_ID,
            Replicas=[1],
            Isr=[1],
            Leader=1,
            LeaderEpoch=0,
            PartitionEpoch=0,
            Directories=[DIR_B],
        )
    )
    for _ in range(leader_epoch_bumps):
        recs.append(mr.PartitionChangeRecord(PartitionId=0, TopicId=TOPIC_ID, Leader=1))
    for i, r in enumerate(recs):
        delta.replay(r, i)
    return delta.apply()


@pytest.fixture
async def plane(tmp_path: Path) -> AsyncIterator[tuple[DataPlane, Host]]:
    host = Host(tmp_path, image([1, 2, 3]))
    dp = DataPlane(host)  # type: ignore[arg-type]
    # In the order the broker's wiring subscribes them.
    host.failures.subscribe("fetchers", dp.replicas.fetchers.on_dir_failure)
    host.failures.subscribe("replica manager", dp.replicas.on_dir_failure)
    host.failures.start()
    await dp.start()
    await dp.publish(host.image)
    try:
        yield dp, host
    finally:
        await dp.stop()
        for ld in host.dirs.values():
            ld.close()


def batch(values: list[bytes], pid: int = -1, seq: int = -1) -> bytes:
    return build_batch(
        [ProducerRecord(None, v, 1000) for v in values], producer_id=pid, producer_epoch=0, base_sequence=seq
    )


async def produce(dp: DataPlane, data: bytes | None, partition: int = 0, acks: int = -1, timeout_ms: int = 5000,
                  topic: str = "t") -> ProduceResponse.PartitionProduceResponse:  # fmt: skip
    req = ProduceRequest(
        Acks=acks,
        TimeoutMs=timeout_ms,
        TopicData=[
            ProduceRequest.TopicProduceData(
                Name=topic, PartitionData=[ProduceRequest.PartitionProduceData(Index=partition, Records=data)]
            )
        ],
    )
    resp = await dp.api.produce(req, 11)
    return resp.Responses[0].PartitionResponses[0]


async def fetch(dp: DataPlane, offset: int, *, replica: int = -1, epoch: int = -1, last_epoch: int = -1,
                partition: int = 0, wait_ms: int = 0) -> FetchResponse.PartitionData:  # fmt: skip
    req = FetchRequest(
        ReplicaState=ReplicaStateData(ReplicaId=replica, ReplicaEpoch=10 * replica) if replica >= 0 else None,
        MaxWaitMs=wait_ms,
        Topics=[FetchRequest.FetchTopic(TopicId=TOPIC_ID, Partitions=[FetchRequest.FetchPartition(
            Partition=partition, FetchOffset=offset, CurrentLeaderEpoch=epoch, LastFetchedEpoch=last_epoch)])],
    )  # fmt: skip
    resp = await dp.api.fetch(req, 17)
    return resp.Responses[0].Partitions[0]


async def test_acks_all_completes_when_every_isr_follower_has_fetched(plane: tuple[DataPlane, Host]) -> None:
    dp, _ = plane
    pending = asyncio.create_task(produce(dp, batch([b"a", b"b", b"c"])))
    await asyncio.sleep(0.05)
    assert not pending.done()
    f2 = await fetch(dp, 0, replica=2, epoch=0)
    assert f2.ErrorCode == 0 and [r.value for r in read_records("t", 0, f2.Records, 0)] == [b"a", b"b", b"c"]
    await fetch(dp, 3, replica=2, epoch=0)
    assert not pending.done()
    await fetch(dp, 3, replica=3, epoch=0)
    result = await asyncio.wait_for(pending, 5)
    assert (result.ErrorCode, result.BaseOffset) == (0, 0)
    consumer = await fetch(dp, 0)
    assert consumer.HighWatermark == 3 and len(list(read_records("t", 0, consumer.Records, 0))) == 3


async def test_acks_one_and_zero_do_not_wait_and_readers_stop_at_the_high_watermark(
    plane: tuple[DataPlane, Host],
) -> None:
    dp, _ = plane
    assert (await produce(dp, batch([b"x"]), acks=1)).BaseOffset == 0
    assert (await produce(dp, batch([b"y"]), acks=0)).ErrorCode == 0
    consumer = await fetch(dp, 0)
    assert consumer.HighWatermark == 0 and not consumer.Records  # not replicated yet
    await fetch(dp, 2, replica=2, epoch=0)
    await fetch(dp, 2, replica=3, epoch=0)
    consumer = await fetch(dp, 0)
    assert consumer.HighWatermark == 2 and [r.value for r in read_records("t", 0, consumer.Records, 0)] == [
        b"x",
        b"y",
    ]


async def test_acks_all_times_out_without_followers(plane: tuple[DataPlane, Host]) -> None:
    dp, _ = plane
    result = await produce(dp, batch([b"late"]), timeout_ms=100)
    assert result.ErrorCode == Errors.REQUEST_TIMED_OUT


async def test_idempotent_retry_gets_its_first_offsets_and_is_not_written_twice(
    plane: tuple[DataPlane, Host],
) -> None:
    dp, host = plane
    init = await dp.api.init_producer_id(InitProducerIdRequest(), 5)
    assert init.ErrorCode == 0 and init.ProducerId == 1000 and init.ProducerEpoch == 0
    pid = init.ProducerId
    first = batch([b"1", b"2"], pid, 0)
    assert (await produce(dp, first, partition=1, acks=1)).BaseOffset == 0
    assert (await produce(dp, batch([b"3"], pid, 2), partition=1, acks=1)).BaseOffset == 2
    assert (await produce(dp, first, partition=1, acks=1)).BaseOffset == 0  # the retry
    assert host.logs[1].log.log_end_offset == 3
    gap = await produce(dp, batch([b"5"], pid, 9), partition=1, acks=1)
    assert gap.ErrorCode == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert (await dp.api.init_producer_id(InitProducerIdRequest(), 5)).ProducerId == 1001
    assert host.controller.calls.count("AllocateProducerIds") == 1


async def test_min_insync_replicas(tmp_path: Path) -> None:
    host = Host(tmp_path, image([1]))
    dp = DataPlane(host)  # type: ignore[arg-type]
    # In the order the broker's wiring subscribes them.
    host.failures.subscribe("fetchers", dp.replicas.fetchers.on_dir_failure)
    host.failures.subscribe("replica manager", dp.replicas.on_dir_failure)
    host.failures.start()
    await dp.start()
    try:
        await dp.publish(host.image)
        assert (await produce(dp, batch([b"a"]))).ErrorCode == Errors.NOT_ENOUGH_REPLICAS
        assert (await produce(dp, batch([b"a"]), acks=1)).ErrorCode == 0
        assert host.logs[0].log.log_end_offset == 1  # only the acks=1 batch
    finally:
        await dp.stop()


async def test_unknown_and_not_hosted_partitions(plane: tuple[DataPlane, Host]) -> None:
    dp, _ = plane
    assert (await produce(dp, batch([b"a"]), topic="nope")).ErrorCode == Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert (await produce(dp, batch([b"a"]), partition=7)).ErrorCode == Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert (await produce(dp, None)).ErrorCode == Errors.CORRUPT_MESSAGE
    req = ProduceRequest(
        Acks=2,
        TopicData=[
            ProduceRequest.TopicProduceData(
                Name="t", PartitionData=[ProduceRequest.PartitionProduceData(Index=0, Records=batch([b"a"]))]
            )
        ],
    )
    assert (await dp.api.produce(req, 11)).Responses[0].PartitionResponses[
        0
    ].ErrorCode == Errors.INVALID_REQUIRED_ACKS


async def test_follower_epochs_are_checked_and_divergence_is_answered(tmp_path: Path) -> None:
    host = Host(tmp_path, image([1, 2, 3], leader_epoch_bumps=2))  # leader epoch 2
    dp = DataPlane(host)  # type: ignore[arg-type]
    # In the order the broker's wiring subscribes them.
    host.failures.subscribe("fetchers", dp.replicas.fetchers.on_dir_failure)
    host.failures.subscribe("replica manager", dp.replicas.on_dir_failure)
    host.failures.start()
    await dp.start()
    try:
        await dp.publish(host.image)
        await produce(dp, batch([b"a", b"b"]), acks=1)
        assert (await fetch(dp, 0, replica=2, epoch=1)).ErrorCode == Errors.FENCED_LEADER_EPOCH
        assert (await fetch(dp, 0, replica=2, epoch=3)).ErrorCode == Errors.UNKNOWN_LEADER_EPOCH
        # A follower that claims to have offsets 0-4 of epoch 2: the leader's epoch 2 ends at 2.
        diverged = await fetch(dp, 5, replica=2, epoch=2, last_epoch=2)
        assert diverged.DivergingEpoch is not None and (
            diverged.DivergingEpoch.Epoch,
            diverged.DivergingEpoch.EndOffset,
        ) == (2, 2)
        assert not diverged.Records
        assert (await fetch(dp, 9, replica=2, epoch=2)).ErrorCode == Errors.OFFSET_OUT_OF_RANGE
        ok = await fetch(dp, 0, replica=2, epoch=2)
        assert (
            ok.ErrorCode == 0
            and ok.DivergingEpoch is None
            and len(list(read_records("t", 0, ok.Records, 0))) == 2
        )
    finally:
        await dp.stop()


async def test_long_poll_wakes_on_append(plane: tuple[DataPlane, Host]) -> None:
    dp, _ = plane
    waiting = asyncio.create_task(fetch(dp, 0, replica=2, epoch=0, wait_ms=5000))
    await asyncio.sleep(0.05)
    assert not waiting.done()
    await produce(dp, batch([b"now"]), acks=1)
    got = await asyncio.wait_for(waiting, 2)
    assert [r.value for r in read_records("t", 0, got.Records, 0)] == [b"now"]


async def test_an_append_while_the_fetch_reads_wakes_it(plane: tuple[DataPlane, Host]) -> None:
    """The append lands after the fetch read its partition and before it waits (a read is an
    executor hop, so under load it often does): the fetch answers with it at once instead of
    sleeping through its MaxWaitMs with the data there (Kafka's tryCompleteElseWatch)."""
    dp, _ = plane
    replicas = dp.api.replicas
    read = replicas.read
    appended: list[int] = []

    async def read_then_append(*args: Any, **kwargs: Any) -> Any:
        found = await read(*args, **kwargs)
        if not appended:
            appended.append((await produce(dp, batch([b"meanwhile"]), acks=1)).ErrorCode)
        return found

    replicas.read = read_then_append  # type: ignore[method-assign]
    # Without the watch taken before the read, this waits out its 60 s and the guard fails it.
    got = await asyncio.wait_for(fetch(dp, 0, replica=2, epoch=0, wait_ms=60_000), 30)
    assert appended == [0]
    assert [r.value for r in read_records("t", 0, got.Records, 0)] == [b"meanwhile"]


async def test_list_offsets_metadata_and_log_dirs(plane: tuple[DataPlane, Host]) -> None:
    dp, _ = plane
    await produce(dp, batch([b"a", b"b"]), partition=1, acks=1)
    req = ListOffsetsRequest(Topics=[ListOffsetsRequest.ListOffsetsTopic(Name="t", Partitions=[
        ListOffsetsRequest.ListOffsetsPartition(PartitionIndex=1, Timestamp=-2),
        ListOffsetsRequest.ListOffsetsPartition(PartitionIndex=1, Timestamp=-1),
        ListOffsetsRequest.ListOffsetsPartition(PartitionIndex=1, Timestamp=500),
    ])])  # fmt: skip
    parts = (await dp.api.list_offsets(req, 9)).Topics[0].Partitions
    assert [(p.ErrorCode, p.Offset) for p in parts] == [(0, 0), (0, 2), (0, 0)]

    meta = await dp.api.metadata(MetadataRequest(Topics=None), 12)
    assert [b.NodeId for b in meta.Brokers] == [1, 2, 3] and meta.ClusterId == "test-cluster"
    p0 = meta.Topics[0].Partitions[0]
    assert (p0.LeaderId, p0.IsrNodes, p0.OfflineReplicas, p0.ReplicaDirectories[0]) == (
        1,
        [1, 2, 3],
        [],
        DIR_A,
    )

    dirs = (await dp.api.describe_log_dirs(DescribeLogDirsRequest(Topics=None), 4)).Results
    by_id = {d.DirectoryId: d for d in dirs}
    assert by_id[DIR_B].ErrorCode == 0 and by_id[DIR_B].TotalBytes > 0 and by_id[DIR_B].UsableBytes > 0
    (topic,) = by_id[DIR_B].Topics
    assert (
        topic.Name == "t"
        and topic.Partitions[0].PartitionIndex == 1
        and topic.Partitions[0].PartitionSize > 0
    )


async def test_failed_dir_answers_kafka_storage_error(plane: tuple[DataPlane, Host]) -> None:
    dp, host = plane
    pending = asyncio.create_task(produce(dp, batch([b"a"]), timeout_ms=10_000))
    await asyncio.sleep(0.05)
    host.dirs[DIR_A].fail(OSError(5, "Input/output error"))
    assert (await asyncio.wait_for(pending, 2)).ErrorCode == Errors.KAFKA_STORAGE_ERROR
    assert (await produce(dp, batch([b"b"]))).ErrorCode == Errors.KAFKA_STORAGE_ERROR
    assert (await fetch(dp, 0)).ErrorCode == Errors.KAFKA_STORAGE_ERROR
    assert (await produce(dp, batch([b"c"]), partition=1, acks=1)).ErrorCode == 0  # the other dir serves
    dirs = (await dp.api.describe_log_dirs(DescribeLogDirsRequest(Topics=None), 4)).Results
    by_id = {d.DirectoryId: d for d in dirs}
    assert by_id[DIR_A].ErrorCode == Errors.KAFKA_STORAGE_ERROR and not by_id[DIR_A].Topics


async def test_gauges_on_the_metrics_registry(plane: tuple[DataPlane, Host]) -> None:
    from prometheus_client import generate_latest

    from protocol.transport import REGISTRY, create_app

    dp, _ = plane
    assert (await produce(dp, batch([b"a", b"b"]), acks=1)).ErrorCode == 0
    app = create_app({})
    dp.install(app)
    text = generate_latest(app[REGISTRY]).decode()
    assert "kafka_server_replicamanager_leadercount 2.0" in text
    # Kafka's Log MBeans, per replica
    assert 'kafka_log_log_logendoffset{partition="0",topic="t"} 2.0' in text
    assert 'kafka_log_log_numlogsegments{partition="0",topic="t"} 1.0' in text
    size = [
        line for line in text.splitlines() if line.startswith('kafka_log_log_size{partition="0",topic="t"}')
    ]
    assert size and float(size[0].split()[-1]) > 0
    assert "kafka_server_replicamanager_partitioncount 2.0" in text
    assert "kafka_server_replicamanager_underreplicatedpartitions 0.0" in text
    assert "kafka_server_replicamanager_underminisrpartitioncount 1.0" in text  # t-1: ISR 1 < 2
    from protocol.transport import HANDLERS

    assert {"Produce", "Fetch", "ListOffsets", "Metadata", "DescribeLogDirs", "InitProducerId"} <= set(
        app[HANDLERS]
    )


async def test_partition_states_drive_the_replica_manager_without_an_image(
    plane: tuple[DataPlane, Host],
) -> None:
    """What LeaderAndIsr / StopReplica would send: new epochs, then a stopped replica."""
    dp, _ = plane
    t0 = dp.replicas.partitions[(TOPIC_ID, 0)].applied
    assert t0 is not None and t0.leader_epoch == 0
    bumped = PartitionState(
        TOPIC_ID, "t", 0, (1, 2, 3), (1, 2, 3), leader=1, leader_epoch=5, partition_epoch=5, directory=DIR_A
    )
    await dp.replicas.apply([bumped])
    assert (await fetch(dp, 0, replica=2, epoch=0)).ErrorCode == Errors.FENCED_LEADER_EPOCH
    assert (await fetch(dp, 0, replica=2, epoch=5)).ErrorCode == 0
    await dp.replicas.apply([], [bumped.tp])
    assert (await produce(dp, batch([b"a"]), acks=1)).ErrorCode == Errors.NOT_LEADER_OR_FOLLOWER
    assert (await produce(dp, batch([b"b"]), partition=1, acks=1)).ErrorCode == 0


async def test_broker_topic_metrics_count_what_producers_and_fetchers_move(
    plane: tuple[DataPlane, Host],
) -> None:
    from prometheus_client import generate_latest

    from protocol.transport import REGISTRY, create_app

    dp, _ = plane
    app = create_app({})
    dp.install(app)
    data = batch([b"a", b"b"])
    assert (await produce(dp, data, acks=1)).ErrorCode == 0
    assert (await produce(dp, data, acks=1, topic="made-up")).ErrorCode == Errors.UNKNOWN_TOPIC_OR_PARTITION
    replicated = await fetch(dp, 0, replica=2, epoch=0)
    await fetch(dp, 2, replica=2, epoch=0)
    await fetch(dp, 2, replica=3, epoch=0)  # the high watermark reaches 2: consumers may read
    consumed = await fetch(dp, 0)
    assert consumed.Records and replicated.Records
    text = generate_latest(app[REGISTRY]).decode()
    m = "kafka_server_brokertopicmetrics"
    for line in (
        f'{m}_bytesin_total{{topic=""}} {float(len(data))}',
        f'{m}_bytesin_total{{topic="t"}} {float(len(data))}',
        f'{m}_messagesin_total{{topic="t"}} 2.0',
        f'{m}_totalproducerequests_total{{topic=""}} 2.0',
        f'{m}_totalproducerequests_total{{topic="t"}} 1.0',
        f'{m}_failedproducerequests_total{{topic=""}} 1.0',
        f'{m}_bytesout_total{{topic="t"}} {float(len(consumed.Records))}',
        f'{m}_replicationbytesout_total{{topic="t"}} {float(len(replicated.Records))}',
        f'{m}_totalfetchrequests_total{{topic="t"}} 4.0',
    ):
        assert line in text, line
    # Names that are not topics never become series.
    assert "made-up" not in text


async def test_isr_meters_count_committed_shrinks_and_expansions_and_refusals(
    plane: tuple[DataPlane, Host],
) -> None:
    from prometheus_client import generate_latest

    from protocol.transport import REGISTRY, create_app

    dp, _ = plane
    app = create_app({})
    dp.install(app)
    rm = dp.replicas
    # What the AlterPartition manager reports back for partition t-0 (led here, ISR 1,2,3).
    rm._isr_change_done((TOPIC_ID, 0), Errors.NONE, (1, 0, 1, [1, 2]))
    rm._isr_change_done((TOPIC_ID, 0), Errors.NONE, (1, 0, 2, [1, 2, 3]))
    rm._isr_change_done((TOPIC_ID, 0), Errors.NONE, (1, 0, 1, [1]))  # older than the state: not applied
    rm._isr_change_done((TOPIC_ID, 0), Errors.INVALID_UPDATE_VERSION, None)
    text = generate_latest(app[REGISTRY]).decode()
    assert "kafka_server_replicamanager_isrshrinks_total 1.0" in text
    assert "kafka_server_replicamanager_isrexpands_total 1.0" in text
    assert "kafka_server_replicamanager_failedisrupdates_total 1.0" in text


def moved(base: MetadataImage, offset: int, **change: Any) -> MetadataImage:
    """`base` with one PartitionChangeRecord of t-0."""
    delta = MetadataDelta(base)
    delta.replay(mr.PartitionChangeRecord(PartitionId=0, TopicId=TOPIC_ID, **change), offset)
    return delta.apply()


async def test_a_produce_parked_on_a_failed_dir_is_sent_to_the_new_leader(
    plane: tuple[DataPlane, Host],
) -> None:
    """KIP-951 after a dir failure: a produce waits for the metadata to move its partition, then
    answers NOT_LEADER_OR_FOLLOWER naming the new leader and its endpoint, instead of
    KAFKA_STORAGE_ERROR, which sends the producer through a backoff and a Metadata request first."""
    dp, host = plane
    pending = asyncio.create_task(produce(dp, batch([b"a"]), timeout_ms=10_000))
    await asyncio.sleep(0.05)
    host.dirs[DIR_A].fail(OSError(5, "Input/output error"))
    await asyncio.sleep(0.05)
    assert not pending.done()
    late = asyncio.create_task(produce(dp, batch([b"b"]), timeout_ms=10_000))
    await asyncio.sleep(0.01)
    await dp.publish(moved(host.image, 100, Leader=2, Isr=[2, 3]))
    for answer in await asyncio.wait_for(asyncio.gather(pending, late), 5):
        assert answer.ErrorCode == Errors.NOT_LEADER_OR_FOLLOWER
        assert answer.CurrentLeader is not None
        assert (answer.CurrentLeader.LeaderId, answer.CurrentLeader.LeaderEpoch) == (2, 1)
    req = ProduceRequest(
        Acks=-1,
        TimeoutMs=1000,
        TopicData=[
            ProduceRequest.TopicProduceData(
                Name="t", PartitionData=[ProduceRequest.PartitionProduceData(Index=0, Records=batch([b"c"]))]
            )
        ],
    )
    resp = await dp.api.produce(req, 11)
    assert resp.Responses[0].PartitionResponses[0].ErrorCode == Errors.NOT_LEADER_OR_FOLLOWER
    assert [(e.NodeId, e.Port) for e in resp.NodeEndpoints] == [(2, 9092)]


async def test_produces_and_reads_wait_for_a_transition_to_leader_under_way(tmp_path: Path) -> None:
    """The image names this broker leader before its log has the new epoch (one job on the dir's
    thread): a produce or a follower's fetch at the new epoch arriving meanwhile waits for it
    rather than bouncing off NOT_LEADER_OR_FOLLOWER or UNKNOWN_LEADER_EPOCH."""
    import threading

    follower = moved(image([1, 2, 3]), 100, Leader=2)  # t-0: broker 2 leads at epoch 1
    host = Host(tmp_path, follower)
    dp = DataPlane(host)  # type: ignore[arg-type]
    await dp.start()
    release = threading.Event()
    try:
        await dp.publish(follower)
        await dp.replicas.fetchers.stop()  # no leader 2 to fetch from here
        blocked = asyncio.ensure_future(host.dirs[DIR_A].run(release.wait, 10))
        leader = moved(follower, 101, Leader=1)  # back to broker 1, epoch 2
        publishing = asyncio.create_task(dp.publish(leader))
        await asyncio.sleep(0.05)
        assert not publishing.done()
        appended = asyncio.create_task(produce(dp, batch([b"a"]), acks=1))
        fetched = asyncio.create_task(fetch(dp, 0, replica=2, epoch=2))
        await asyncio.sleep(0.05)
        assert not appended.done() and not fetched.done()
        release.set()
        await asyncio.wait_for(asyncio.gather(blocked, publishing), 5)
        assert (await asyncio.wait_for(appended, 5)).ErrorCode == 0
        assert (await asyncio.wait_for(fetched, 5)).ErrorCode == 0
    finally:
        release.set()
        await dp.stop()


async def test_a_not_leader_answer_names_the_leader_its_check_saw(tmp_path: Path) -> None:
    """KIP-951's CurrentLeader comes from the metadata that decided the answer. Read when the response
    is built, after the image moved on to name this broker, it contradicted the error ("not the
    leader; the leader is me") and gave the producer nothing to go on."""
    follower = moved(image([1, 2, 3]), 100, Leader=2)  # t-0: broker 2 leads at epoch 1
    host = Host(tmp_path, follower)
    dp = DataPlane(host)  # type: ignore[arg-type]
    await dp.start()
    try:
        await dp.publish(follower)
        await dp.replicas.fetchers.stop()  # no leader 2 to fetch from here
        append = dp.replicas.append

        async def append_then_move(*args: Any) -> Any:
            outcome = await append(*args)
            dp.replicas.update_metadata(moved(follower, 101, Leader=1))  # now broker 1, epoch 2
            return outcome

        dp.replicas.append = append_then_move  # type: ignore[method-assign]
        answer = await asyncio.wait_for(produce(dp, batch([b"a"]), acks=1), 10)
        assert answer.ErrorCode == Errors.NOT_LEADER_OR_FOLLOWER
        assert answer.CurrentLeader is not None
        assert (answer.CurrentLeader.LeaderId, answer.CurrentLeader.LeaderEpoch) == (2, 1)
    finally:
        await dp.stop()


def test_the_leader_tail_holds_whole_batches_up_to_its_limit() -> None:
    tail = LeaderTail(epoch=3, start=10, end=10, log_start_offset=0)
    tail.add(10, b"a" * 40, 12, 0, limit=100)
    tail.add(12, b"b" * 40, 15, 0, limit=100)
    assert tail.read(10, 1000) == b"a" * 40 + b"b" * 40
    assert tail.read(10, 50) == b"a" * 40  # whole batches only, the first one at least
    assert tail.read(12, 1) == b"b" * 40
    assert tail.read(15, 1000) == b""  # the log end
    assert tail.read(11, 1000) is None and tail.read(9, 1000) is None and tail.read(16, 1000) is None
    tail.add(15, b"c" * 40, 16, 0, limit=100)  # over the limit: the oldest batch goes
    assert (tail.start, tail.size) == (12, 80) and tail.read(10, 1000) is None


async def test_follower_fetches_at_the_log_end_read_what_the_log_holds(plane: tuple[DataPlane, Host]) -> None:
    """A follower fetching at the end of the leader's log, at the leader's epoch, is answered from
    the batches the leader just appended, and gets the same bytes and high watermark as from disk."""
    dp, host = plane
    first = asyncio.create_task(produce(dp, batch([b"a", b"b"])))
    hp = dp.replicas.partitions[(TOPIC_ID, 0)]
    async with asyncio.timeout(10):  # the append runs on the dir's thread: a busy machine may take a while
        while hp.tail is None:
            await asyncio.sleep(0.01)
    tail = hp.tail
    assert tail is not None and (tail.start, tail.end) == (0, 2)
    from_memory = await fetch(dp, 0, replica=2, epoch=0, last_epoch=0)
    on_disk = host.logs[0].log.read(0, 1 << 20).records
    assert from_memory.ErrorCode == 0 and from_memory.Records == on_disk
    await fetch(dp, 2, replica=2, epoch=0, last_epoch=0)
    await fetch(dp, 2, replica=3, epoch=0, last_epoch=0)
    assert (await asyncio.wait_for(first, 5)).ErrorCode == 0
    second = asyncio.create_task(produce(dp, batch([b"c"])))
    waiting = await fetch(dp, 2, replica=2, epoch=0, last_epoch=0, wait_ms=5000)  # woken by the append
    assert [r.value for r in read_records("t", 0, waiting.Records, 2)] == [b"c"]
    assert waiting.Records == host.logs[0].log.read(2, 1 << 20).records
    await fetch(dp, 3, replica=2, epoch=0, last_epoch=0)
    done = await fetch(dp, 3, replica=3, epoch=0, last_epoch=0)
    assert (await asyncio.wait_for(second, 5)).ErrorCode == 0 and done.HighWatermark == 3
    stale = await fetch(dp, 0, replica=3, epoch=0, last_epoch=-1)  # from the log itself
    assert stale.Records == host.logs[0].log.read(0, 1 << 20).records


def test_leader_tails_share_one_budget_and_the_oldest_lose_theirs_first() -> None:
    from broker.dataplane.leader_tail import LeaderTails

    @dataclass
    class Hosted:
        n: int
        tail: LeaderTail | None = None

        @property
        def key(self) -> tuple[Uuid, int]:
            return (TOPIC_ID, self.n)

    tails = LeaderTails(budget=100, per_partition=60)
    a, b, c = Hosted(0), Hosted(1), Hosted(2)
    tails.keep(a, 1, 0, b"a" * 40, 1, 0)
    tails.keep(b, 1, 0, b"b" * 40, 1, 0)
    assert tails.size == 80 and a.tail is not None and b.tail is not None
    tails.keep(a, 1, 1, b"A" * 10, 2, 0)  # a is now the newest appended to
    tails.keep(c, 1, 0, b"c" * 40, 1, 0)  # 130 > 100: b, appended to longest ago, loses its tail
    assert b.tail is None and a.tail is not None and c.tail is not None
    assert tails.size == 90 == a.tail.size + c.tail.size and len(tails) == 2
    tails.keep(c, 1, 1, b"C" * 200, 2, 0)  # over the budget alone: it keeps its newest batch, a goes
    assert a.tail is None and c.tail is not None and c.tail.read(1, 1000) == b"C" * 200
    assert tails.size == 200 and len(tails) == 1
    tails.keep(c, 2, 2, b"x" * 10, 3, 0)  # a new epoch starts a new tail, counted afresh
    assert c.tail is not None and (c.tail.epoch, c.tail.start) == (2, 2) and tails.size == 10
    tails.drop(c)
    tails.drop(b)  # no tail: nothing to do
    assert c.tail is None and tails.size == 0 and len(tails) == 0
    off = LeaderTails(budget=0, per_partition=60)
    off.keep(a, 1, 0, b"a", 1, 0)
    assert a.tail is None and off.size == 0
