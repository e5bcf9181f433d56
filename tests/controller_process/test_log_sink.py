"""The event queue's sink on a real metadata log: offsets known up front, commits reported in order."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from controller.committed_image import CommittedImage
from controller.log_sink import MAX_RECORDS_PER_BATCH, MetadataLogSink, PreparedAppend
from kraftpy.image import MetadataDelta, MetadataImage
from kraftpy.metalog.group_commit import GroupCommitLog
from kraftpy.metalog.log import MetadataLog
from protocol.errors import Errors, KafkaError
from protocol.framing import ApiMessageAndVersion
from protocol.metadata_records import FeatureLevelRecord, NoOpRecord, RegisterBrokerRecord
from protocol.uuid import Uuid


def noops(n: int) -> list[ApiMessageAndVersion]:
    return [ApiMessageAndVersion(NoOpRecord(), 0) for _ in range(n)]


@pytest.fixture
async def gcl(tmp_path: Path):
    log = await GroupCommitLog.open(tmp_path / "meta")
    yield log
    await log.close()


async def test_appends_commit_in_offset_order_with_shared_fsyncs(gcl: GroupCommitLog) -> None:
    reported: list[tuple[int, int, int]] = []
    failures: list[BaseException] = []
    sink = MetadataLogSink(
        gcl,
        3,
        on_committed=lambda hw, p: reported.append((hw, p.base_offset, p.last_offset)),
        on_failure=failures.append,
    )
    lasts = [sink.schedule(sink.prepare(noops(n), atomic=False)) for n in (1, 5, 2, 1)]
    assert lasts == [0, 5, 7, 8] and sink.next_offset == 9
    await sink.drain()
    assert failures == []
    assert [(b, last) for _, b, last in reported] == [(0, 0), (1, 5), (6, 7), (8, 8)]
    assert all(hw > last for hw, _, last in reported)
    assert gcl.durable_end_offset == 9
    assert gcl.log.flush_count < 4  # group commit: fewer fsyncs than appends
    assert [e.epoch for e in gcl.log.epoch_entries()] == [3]


async def test_large_non_atomic_results_are_split_and_atomic_ones_refused(gcl: GroupCommitLog) -> None:
    sink = MetadataLogSink(
        gcl, 1, on_committed=lambda hw, p: None, on_failure=lambda e: None, max_batch_bytes=4096
    )
    prepared = sink.prepare(noops(MAX_RECORDS_PER_BATCH + 5), atomic=False)
    assert len(prepared.batches) > 1 and all(len(b) <= 4096 for b in prepared.batches)
    with pytest.raises(KafkaError) as ei:
        sink.prepare(noops(2000), atomic=True)
    assert ei.value.code is Errors.RECORD_LIST_TOO_LARGE
    assert sink.next_offset == 0  # a refusal takes no offsets
    sink.schedule(prepared)
    await sink.drain()
    assert gcl.log.log_end_offset == MAX_RECORDS_PER_BATCH + 5


async def test_committed_image_follows_commits(gcl: GroupCommitLog) -> None:
    image = CommittedImage(MetadataDelta(MetadataImage.EMPTY), 0)

    def committed(hw: int, p: PreparedAppend) -> None:
        image.add(p.base_offset, p.records, p.epoch, p.timestamp_ms)

    sink = MetadataLogSink(gcl, 1, on_committed=committed, on_failure=lambda e: None)
    mv = ApiMessageAndVersion(FeatureLevelRecord(Name="metadata.version", FeatureLevel=21), 0)
    reg = ApiMessageAndVersion(
        RegisterBrokerRecord(BrokerId=4, BrokerEpoch=1, IncarnationId=Uuid.random(), LogDirs=[Uuid.random()]),
        3,
    )
    for records in ([mv], [reg], noops(3)):
        sink.schedule(sink.prepare(records, atomic=True))
    await sink.drain()
    assert image.end_offset == 5
    img = image.image()
    assert img.metadata_version == 21 and 4 in img.cluster.brokers and img.offset == 4
    with pytest.raises(ValueError, match="BUG"):
        image.add(2, noops(1), 1, 0)


async def test_write_failure_is_reported_once(tmp_path: Path) -> None:
    log = MetadataLog.open(tmp_path / "meta")
    gcl = GroupCommitLog(log)
    failures: list[BaseException] = []
    sink = MetadataLogSink(gcl, 1, on_committed=lambda hw, p: None, on_failure=failures.append)
    log.close()  # every write after this fails
    sink.schedule(sink.prepare(noops(1), atomic=True))
    sink.schedule(sink.prepare(noops(1), atomic=True))
    await sink.drain()
    assert len(failures) == 1
    with pytest.raises(KafkaError):
        sink.prepare(noops(1), atomic=True)
    await asyncio.sleep(0)
