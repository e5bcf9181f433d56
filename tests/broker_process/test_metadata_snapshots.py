"""The broker writes its own metadata snapshots and restarts from the latest one."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from structlog.testing import capture_logs

from broker.metadata_loader import LocalMetadataLog
from broker.storage.log_dir import LogDir
from kraftpy.image import MetadataDelta, MetadataImage
from kraftpy.metalog import MetadataLog, MetadataLogConfig, SnapshotId
from kraftpy.metalog.files import PARTITION_DIR, parse_snapshot_file_name
from protocol.record_batch import build_metadata_batch
from protocol.uuid import Uuid
from tests.broker_process.cluster import Cluster, wait_until
from tests.metalog.helpers import mv, topic_records
from tests.support.processes import ProcessSet

B = 3


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
        await local.append_and_replay(build_metadata_batch(0, 1, 10, [mv()]) + _batches(1, range(20)), delta)
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
        await local.append_and_replay(_batches(end, range(20, 25)), delta)
        after = delta.apply()
    finally:
        await local.close()
        ld.close()

    ld = LogDir(tmp_path, Uuid.random())
    local = LocalMetadataLog(ld, config)
    try:
        reloaded = (await local.open()).apply()
        assert local.log is not None and local.log.latest_snapshot() == sid
    finally:
        await local.close()
        ld.close()
    assert reloaded.offset == after.offset
    assert replace(after, provenance=reloaded.provenance) == reloaded
