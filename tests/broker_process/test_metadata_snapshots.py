"""The broker writes its own metadata snapshots and restarts from the latest one."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import gc
import json
from dataclasses import replace
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from broker.metadata_loader import LocalMetadataLog, MetadataLoader
from broker.storage.errors import LogDirOfflineError
from broker.storage.log_dir import LogDir
from kraftpy.heap import LARGE
from kraftpy.image import MetadataDelta, MetadataImage
from kraftpy.metalog import LogError, MetadataLog, MetadataLogConfig, SnapshotId
from kraftpy.metalog.files import PARTITION_DIR, parse_snapshot_file_name
from protocol.record_batch import build_metadata_batch
from protocol.rpc.create_topics import CreateTopicsRequest, CreateTopicsResponse
from protocol.transport import RpcClient
from protocol.uuid import Uuid
from tests.broker_process.cluster import Cluster, wait_until
from tests.metalog.helpers import log_with_two_snapshots, mv, topic_records
from tests.support.processes import ProcessSet

A, B = 2, 3


def own_snapshots(meta_dir: Path) -> list[SnapshotId]:
    part = meta_dir / PARTITION_DIR
    if not part.is_dir():
        return []
    ids = (parse_snapshot_file_name(p.name) for p in part.glob("*.checkpoint"))
    return sorted(sid for sid in ids if sid is not None and sid.offset > 0)


def log_lines(text: str, event: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if event in line]


def test_broker_snapshots_its_image_and_restarts_from_the_latest(tmp_path: Path, procs: ProcessSet) -> None:
    cluster = Cluster.create(tmp_path, procs)
    cluster.add_broker(B, [tmp_path / "b1"], extra={"metadata.log.max.record.bytes.between.snapshots": 2000})
    cluster.start_controller()
    cluster.start_broker(B)
    cluster.wait_running(B)
    node = cluster.brokers[B]
    for i in range(8):
        cluster.create_topic(f"t{i}", [[B]] * 4)
    wait_until("a snapshot of the broker's own", lambda: own_snapshots(node.metadata_dir))
    wait_until("placed", lambda: node.health()["replicas"].get("replicas") == 32)
    before = node.health()["metadata_offset"]
    assert cluster.stop_broker(B) == 0

    latest = own_snapshots(node.metadata_dir)[-1]
    part = node.metadata_dir / PARTITION_DIR
    with capture_logs(), MetadataLog.open(node.metadata_dir, read_only=True) as mlog:
        # Nothing before the snapshot was deleted, so a full replay is still possible to compare with.
        assert mlog.log_start_offset == 0
        from_snapshot = mlog.load_image()
        full = MetadataDelta(MetadataImage.EMPTY)
        mlog.replay_into(full, from_snapshot=False)
        total = sum(1 for _ in mlog.entries(from_snapshot=False))
    assert from_snapshot.offset == full.apply().offset
    assert replace(full.apply(), provenance=from_snapshot.provenance) == from_snapshot
    assert len(from_snapshot.topics.topics_by_name) == 8

    # A snapshot torn while being written (its temporary file) past the latest is ignored and removed.
    torn = part / f"{latest.offset + 1000:020d}-{latest.epoch:010d}-torn.checkpoint.part"
    torn.write_bytes(b"\x00\x00\x00\x00\x00\x00\x00\x00half a batch")

    cluster.start_broker(B)
    health = cluster.wait_running(B)
    assert node.proc is not None
    text = node.proc.log_text()
    loaded = log_lines(text, "metadata image loaded from the local log")
    assert loaded and loaded[-1]["snapshot_end_offset"] == latest.offset
    # Only the snapshot's records and the batches after it were replayed.
    assert loaded[-1]["records"] < total
    replayed = log_lines(text, "local metadata log replayed")
    assert replayed and replayed[-1]["metadata_offset"] >= before
    assert not list(part.glob("*.part"))
    assert health["replicas"]["replicas"] == 32 and not health["replicas"]["unplaced_replicas"]


def test_broker_cleans_its_metadata_log_by_retention_and_restarts_from_what_is_left(
    tmp_path: Path, procs: ProcessSet
) -> None:
    cluster = Cluster.create(tmp_path, procs)
    cluster.add_broker(
        B,
        [tmp_path / "b1"],
        extra={
            "metadata.log.max.record.bytes.between.snapshots": 2000,
            "metadata.log.segment.bytes": 2000,
            "metadata.max.retention.bytes": 0,
        },
    )
    cluster.start_controller()
    cluster.start_broker(B)
    cluster.wait_running(B)
    node = cluster.brokers[B]
    part = node.metadata_dir / PARTITION_DIR

    def segment_bases() -> list[int]:
        return sorted(int(p.name.split(".")[0]) for p in part.glob("*.log"))

    def cleaned() -> bool:
        assert node.proc is not None
        return (
            bool(log_lines(node.proc.log_text(), "broker metadata log cleaned"))
            and len(own_snapshots(node.metadata_dir)) == 1
            and segment_bases()[0] > 0
        )

    for i in range(16):
        cluster.create_topic(f"t{i}", [[B]] * 4)
    wait_until("placed", lambda: node.health()["replicas"].get("replicas") == 64)
    wait_until("snapshots taken and the ones before the latest cleaned", cleaned)
    before = node.health()["metadata_offset"]
    assert cluster.stop_broker(B) == 0
    assert node.proc is not None
    taken = [line["end_offset"] for line in log_lines(node.proc.log_text(), "broker metadata snapshot taken")]

    latest = own_snapshots(node.metadata_dir)[-1]
    assert len(taken) >= 2 and latest.offset >= taken[-1]
    assert taken[0] not in {sid.offset for sid in own_snapshots(node.metadata_dir)}
    with capture_logs(), MetadataLog.open(node.metadata_dir, read_only=True) as mlog:
        # Segments wholly before a cleaned snapshot are gone; what is left still loads. (The
        # controller's idle NoOps may bring one more snapshot just before the stop, not yet cleaned.)
        assert 0 < mlog.log_start_offset <= latest.offset
        assert mlog.snapshot_ids()[-1] == latest and len(mlog.snapshot_ids()) <= 2
        image = mlog.load_image()
    assert len(image.topics.topics_by_name) == 16

    cluster.start_broker(B)
    health = cluster.wait_running(B)
    assert node.proc is not None
    loaded = log_lines(node.proc.log_text(), "metadata image loaded from the local log")
    assert loaded and loaded[-1]["snapshot_end_offset"] == latest.offset
    assert health["metadata_offset"] >= before
    assert health["replicas"]["replicas"] == 64 and not health["replicas"]["unplaced_replicas"]
    # Fetching goes on from the end of the cleaned log.
    cluster.create_topic("after", [[B]] * 4)
    wait_until("the new topic placed", lambda: node.health()["replicas"].get("replicas") == 68)


def _create_topics(cluster: Cluster, names: list[str], broker: int) -> None:
    """CreateTopics straight to the controller, without reading its log back (it is being cleaned)."""
    t_ = CreateTopicsRequest
    request = t_(
        Topics=[
            t_.CreatableTopic(
                Name=name,
                NumPartitions=-1,
                ReplicationFactor=-1,
                Assignments=[
                    t_.CreatableReplicaAssignment(PartitionIndex=i, BrokerIds=[broker]) for i in range(4)
                ],
            )
            for name in names
        ]
    )

    async def call() -> CreateTopicsResponse:
        async with RpcClient(f"http://{cluster.controller_address}", timeout=30) as client:
            return await client.call("CreateTopics", request)

    resp = asyncio.run(call())
    assert [(t.Name, t.ErrorCode) for t in resp.Topics] == [(name, 0) for name in names]


def test_a_broker_behind_the_controllers_cleaned_log_loads_its_snapshot_over_its_own_cleaned_log(
    tmp_path: Path, procs: ProcessSet
) -> None:
    small = {
        "metadata.log.max.record.bytes.between.snapshots": 2000,
        "metadata.log.segment.bytes": 2000,
        "metadata.max.retention.bytes": 0,
    }
    cluster = Cluster.create(tmp_path, procs, controller_extra=small)
    cluster.add_broker(A, [tmp_path / "a1"])
    cluster.add_broker(B, [tmp_path / "b1"], extra=small)
    cluster.start_controller()
    cluster.start_broker(A)
    cluster.start_broker(B)
    cluster.wait_running(A)
    cluster.wait_running(B)
    node = cluster.brokers[B]
    _create_topics(cluster, [f"t{i}" for i in range(12)], B)
    wait_until("placed", lambda: node.health()["replicas"].get("replicas") == 48)
    wait_until("a snapshot of the broker's own", lambda: own_snapshots(node.metadata_dir))
    assert cluster.stop_broker(B) == 0
    with capture_logs(), MetadataLog.open(node.metadata_dir, read_only=True) as mlog:
        broker_end = mlog.log_end_offset
        own = mlog.snapshot_ids()

    # While the broker is down (topics go to broker A meanwhile) the controller moves its own log
    # start past the broker's log end.
    assert cluster.controller_meta is not None
    controller_part = cluster.controller_meta / PARTITION_DIR

    def controller_log_start() -> int:
        return min(int(p.name.split(".")[0]) for p in controller_part.glob("*.log"))

    def cleaned_past_the_broker() -> bool:
        return controller_log_start() > broker_end

    batch = 0
    while not cleaned_past_the_broker():
        assert batch < 40, "the controller never cleaned its log past the broker's end"
        _create_topics(cluster, [f"u{batch}-{i}" for i in range(4)], A)
        batch += 1
        # The controller snapshots and cleans on its own threads: give a busy machine a moment.
        with contextlib.suppress(AssertionError):
            wait_until("the controller's cleaning", cleaned_past_the_broker, timeout=1.0, interval=0.05)

    cluster.start_broker(B)
    cluster.wait_running(B)
    # A topic created now reaches the broker only once it has everything before it.
    _create_topics(cluster, ["late"], B)
    wait_until("the late topic placed", lambda: node.health()["replicas"].get("replicas") == 52)
    assert node.proc is not None
    text = node.proc.log_text()
    assert log_lines(text, "loading the controller's snapshot")
    assert log_lines(text, "metadata image loaded from the local log")
    assert cluster.stop_broker(B) == 0
    with capture_logs(), MetadataLog.open(node.metadata_dir, read_only=True) as mlog:
        start = mlog.log_start_offset
        kept = mlog.snapshot_ids()
    # The broker's own snapshots below the controller's went with the log they belonged to.
    assert start > broker_end
    assert all(sid.offset >= start for sid in kept) and not set(own) & set(kept)


async def _fetched(local: LocalMetadataLog, data: bytes, delta: MetadataDelta) -> None:
    """As the loader takes a fetched batch: append, then replay."""
    await local.append(data)
    await local.replay(data, delta)


def _batches(start: int, topics: range, epoch: int = 1) -> bytes:
    out, offset = [], start
    for i in topics:
        recs = topic_records(i)
        out.append(build_metadata_batch(offset, epoch, 1000 + i, recs))
        offset += len(recs)
    return b"".join(out)


async def test_snapshots_wait_for_the_high_watermark_and_reload_to_the_same_image(tmp_path: Path) -> None:
    config = MetadataLogConfig(max_bytes_between_snapshots=1, max_snapshot_interval_ms=0)
    ld = LogDir(tmp_path, Uuid.random())
    local = LocalMetadataLog(ld, config)
    try:
        delta = await local.open()
        await _fetched(local, build_metadata_batch(0, 1, 10, [mv()]) + _batches(1, range(20)), delta)
        image = delta.apply()
        snapshotter = local.snapshotter
        assert snapshotter is not None
        snapshotter.on_applied(1 << 20)
        end = image.offset + 1
        # Past the high watermark the image may still be truncated away; inside a transaction it
        # lacks the transaction's records.
        assert snapshotter.maybe_snapshot(image, end - 1, in_transaction=False) is None
        assert snapshotter.maybe_snapshot(image, end, in_transaction=True) is None
        task = snapshotter.maybe_snapshot(image, end, in_transaction=False)
        assert task is not None
        sid = await task
        assert sid is not None and sid.offset == end
        assert (tmp_path / PARTITION_DIR / sid.file_name()).exists()
        # Nothing new applied since: no second snapshot of the same offset.
        snapshotter.on_applied(1 << 20)
        assert snapshotter.maybe_snapshot(image, end, in_transaction=False) is None

        delta = delta.next_delta(image)
        await _fetched(local, _batches(end, range(20, 25)), delta)
        after = delta.apply()
    finally:
        await local.close()
        ld.close()

    reloaded, latest, _ = await _reopen(tmp_path, config)
    assert latest == sid
    assert reloaded.offset == after.offset
    assert replace(after, provenance=reloaded.provenance) == reloaded


async def _reopen(meta_dir: Path, config: MetadataLogConfig) -> tuple[MetadataImage, SnapshotId | None, int]:
    """Open the metadata log again as a restarted broker would: (its image, latest snapshot, log end)."""
    ld = LogDir(meta_dir, Uuid.random())
    local = LocalMetadataLog(ld, config)
    try:
        reloaded = (await local.open()).apply()
        assert local.log is not None
        return reloaded, local.log.latest_snapshot(), local.log_end_offset
    finally:
        await local.close()
        ld.close()


def _segment_bases(meta_dir: Path) -> list[int]:
    return sorted(int(p.name.split(".")[0]) for p in (meta_dir / PARTITION_DIR).glob("*.log"))


async def _snapshot(local: LocalMetadataLog, image: MetadataImage) -> SnapshotId:
    snapshotter = local.snapshotter
    assert snapshotter is not None
    snapshotter.on_applied(1 << 20)
    task = snapshotter.maybe_snapshot(image, image.offset + 1, in_transaction=False)
    assert task is not None
    sid = await task
    assert sid is not None
    return sid


async def _twenty_topics_and_a_snapshot(local: LocalMetadataLog, delta: MetadataDelta) -> SnapshotId:
    await _fetched(local, build_metadata_batch(0, 1, 10, [mv()]) + _batches(1, range(20)), delta)
    return await _snapshot(local, delta.apply())


CLEAN_ALL_BUT_LATEST = MetadataLogConfig(
    segment_bytes=600, retention_bytes=0, max_bytes_between_snapshots=1, max_snapshot_interval_ms=0
)
"""Tiny segments, no room kept and a snapshot after every fetch: everything before the latest
snapshot may go."""


async def test_the_broker_cleans_its_metadata_log_after_each_snapshot_and_restarts_from_what_is_left(
    tmp_path: Path,
) -> None:
    config = CLEAN_ALL_BUT_LATEST
    ld = LogDir(tmp_path, Uuid.random())
    local = LocalMetadataLog(ld, config)
    try:
        delta = await local.open()
        first = await _twenty_topics_and_a_snapshot(local, delta)
        snapshotter = local.snapshotter
        assert snapshotter is not None and local.log is not None
        assert snapshotter.cleanings == 0  # the only snapshot is the latest: nothing may go yet
        assert _segment_bases(tmp_path)[0] == 0
        delta = delta.next_delta(delta.apply())
        await _fetched(local, _batches(first.offset, range(20, 40)), delta)
        second = await _snapshot(local, delta.apply())
        assert snapshotter.cleanings == 1 and snapshotter.clean_failures == 0
        assert own_snapshots(tmp_path) == [second]
        assert local.log.log_start_offset == second.offset
        bases = _segment_bases(tmp_path)
        assert bases[0] > first.offset and bases[0] <= second.offset
        delta = delta.next_delta(delta.apply())
        await _fetched(local, _batches(second.offset, range(40, 45)), delta)
        after = delta.apply()
    finally:
        await local.close()
        ld.close()

    reloaded, latest, log_end_offset = await _reopen(tmp_path, config)
    assert latest == second
    assert log_end_offset == after.offset + 1
    assert replace(after, provenance=reloaded.provenance) == reloaded
    assert len(reloaded.topics.topics_by_name) == 45


async def test_the_broker_cleans_its_metadata_log_at_startup(tmp_path: Path) -> None:
    # Written with Kafka's default retention; opened by a broker whose limits are lower.
    with capture_logs():
        _, latest, image = log_with_two_snapshots(tmp_path)
    assert _segment_bases(tmp_path)[0] == 0
    ld = LogDir(tmp_path, Uuid.random())
    local = LocalMetadataLog(ld, MetadataLogConfig(segment_bytes=600, retention_bytes=0))
    try:
        reloaded = (await local.open()).apply()
        assert local.snapshotter is not None and local.snapshotter.cleanings == 1
    finally:
        await local.close()
        ld.close()
    assert own_snapshots(tmp_path) == [latest]
    assert 0 < _segment_bases(tmp_path)[0] <= latest.offset
    assert replace(image, provenance=reloaded.provenance) == reloaded


async def test_the_broker_cleans_its_metadata_log_once_a_minute_without_a_new_snapshot(
    tmp_path: Path,
) -> None:
    from kraftpy.raft.cleaning import LOG_CLEAN_INTERVAL_MS, CleaningTimer

    ld = LogDir(tmp_path, Uuid.random())
    local = LocalMetadataLog(ld, CLEAN_ALL_BUT_LATEST)
    try:
        delta = await local.open()
        snapshotter, mlog = local.snapshotter, local.log
        assert snapshotter is not None and mlog is not None
        now = [0]
        snapshotter.clock_ms = lambda: now[0]
        snapshotter.cleaning = CleaningTimer.starting(0)
        first = await _twenty_topics_and_a_snapshot(local, delta)
        delta = delta.next_delta(delta.apply())
        await _fetched(local, _batches(first.offset, range(20, 40)), delta)
        image = delta.apply()
        # A snapshot the snapshotter did not write (as one installed from the controller): nothing
        # cleaned after it, so the older one and its segments stay until the minute is up.
        second = mlog.write_snapshot(mlog.load_image().write(), mlog.log_end_offset, 1, 2000)
        now[0] = LOG_CLEAN_INTERVAL_MS - 1
        assert snapshotter.maybe_clean() is None
        assert own_snapshots(tmp_path) == [first, second] and snapshotter.cleanings == 0
        now[0] = LOG_CLEAN_INTERVAL_MS
        task = snapshotter.maybe_clean()
        assert task is not None
        # No snapshot starts while the log's start moves under it; the next fetch asks again.
        snapshotter.on_applied(1 << 20)
        assert snapshotter.maybe_snapshot(image, image.offset + 1, in_transaction=False) is None
        await task
        assert snapshotter.cleanings == 1 and snapshotter.clean_failures == 0
        assert own_snapshots(tmp_path) == [second] and mlog.log_start_offset == second.offset
        assert snapshotter.maybe_clean() is None  # the next one is a minute away
        assert snapshotter.cleaning.next_ms == 2 * LOG_CLEAN_INTERVAL_MS
    finally:
        await local.close()
        ld.close()


async def test_a_failed_cleaning_is_logged_and_counted_and_a_failed_disk_takes_the_dir_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    failures: list[BaseException] = []
    ld = LogDir(tmp_path, Uuid.random(), on_failure=lambda _d, e: failures.append(e))
    local = LocalMetadataLog(ld, MetadataLogConfig(retention_bytes=0, max_bytes_between_snapshots=1))
    try:
        delta = await local.open()
        await _fetched(local, build_metadata_batch(0, 1, 10, [mv()]) + _batches(1, range(5)), delta)
        snapshotter, mlog = local.snapshotter, local.log
        assert snapshotter is not None and mlog is not None

        def corrupt(now_ms: int | None = None) -> bool:
            raise LogError("a snapshot header that cannot be read")

        monkeypatch.setattr(mlog, "maybe_clean", corrupt)
        with capture_logs() as logs:
            assert await snapshotter.clean() is False
            # The snapshot is still taken (its cleaning fails after it): cleaning failing stops nothing.
            sid = await _snapshot(local, delta.apply())
        assert snapshotter.clean_failures == 2 and ld.online and not failures
        assert sid in mlog.snapshot_ids()
        assert [e for e in logs if e["event"] == "cleaning the broker's metadata log failed"]

        def eio(now_ms: int | None = None) -> bool:
            raise OSError(errno.EIO, "Input/output error")

        monkeypatch.setattr(mlog, "maybe_clean", eio)
        with capture_logs(), pytest.raises(LogDirOfflineError):
            await snapshotter.clean()
        assert snapshotter.clean_failures == 3
        # The metadata dir failing goes the way any I/O error on it goes: offline, reported once.
        assert not ld.online and len(failures) == 1 and isinstance(failures[0], OSError)
    finally:
        await local.close()
        ld.close()


async def test_fetched_batches_are_appended_without_an_fsync_and_survive_a_reopen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As Kafka's observers: what a broker fetches is committed on the quorum already, so its append
    waits for no fsync (one per fetch on the metadata dir's thread, in front of that dir's appends).
    Closing flushes; a lost tail is cut by recovery and fetched again."""
    flushes: list[int] = []
    flush = MetadataLog.flush
    monkeypatch.setattr(MetadataLog, "flush", lambda self: (flushes.append(1), flush(self))[1])
    config = MetadataLogConfig()
    ld = LogDir(tmp_path, Uuid.random())
    local = LocalMetadataLog(ld, config)
    try:
        delta = await local.open()
        before = len(flushes)
        await _fetched(local, build_metadata_batch(0, 1, 10, [mv()]) + _batches(1, range(5)), delta)
        assert len(flushes) == before
        image = delta.apply()
    finally:
        await local.close()
        ld.close()
    reloaded, _latest, _ = await _reopen(tmp_path, config)
    assert reloaded.offset == image.offset


async def test_no_collection_runs_between_a_fetched_batch_replay_and_its_freeze(tmp_path: Path) -> None:
    """The objects a large fetched batch's replay makes are frozen when its image is applied; a
    collector back on in between would walk every one of them first. (The append before the replay
    makes short-lived objects only; the collector may run then.)"""
    config = MetadataLogConfig()
    ld = LogDir(tmp_path, Uuid.random())
    local = LocalMetadataLog(ld, config)
    passes: list[int] = []
    replaying = False
    replay = local.replay

    async def replay_seen(data: bytes, delta: MetadataDelta) -> int:
        nonlocal replaying
        replaying = True
        return await replay(data, delta)

    def seen(phase: str, info: dict) -> None:
        if phase == "start" and replaying:
            passes.append(info["generation"])

    local.replay = replay_seen  # type: ignore[method-assign]
    try:
        loader = MetadataLoader(local, None, "cluster", 1, lambda image, delta: None)  # type: ignore[arg-type]
        loader.start_from(await local.open())
        gc.collect()
        gc.callbacks.append(seen)
        try:
            await loader._append(build_metadata_batch(0, 1, 10, [mv()]) + _batches(1, range(LARGE)))
        finally:
            gc.callbacks.remove(seen)
        assert loader.image.offset >= LARGE
        assert passes == []
    finally:
        await local.close()
        ld.close()
