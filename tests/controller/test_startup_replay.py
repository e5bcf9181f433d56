"""A restart replays the snapshot and the committed log a batch at a time (replay_committed): it must
build what replaying the same records one by one builds, wherever the committed prefix ends."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from controller.core import ControllerConfig, QuorumControllerCore
from controller.startup import replay_committed, snapshot_end
from kraftpy.image import MetadataDelta, MetadataImage
from kraftpy.metalog import MetadataLog
from kraftpy.metalog.reading import decode_at
from protocol import metadata_records as mr
from protocol.control_records import LeaderChangeMessage
from protocol.framing import ApiMessageAndVersion
from tests.metalog.helpers import mv, noops, topic_records


def new_core() -> QuorumControllerCore:
    return QuorumControllerCore(ControllerConfig(node_id=1, cluster_id="replay", random_seed=1))


def committed_records(mlog: MetadataLog) -> list[tuple[int, Any, int, int]]:
    """(offset, record, epoch, timestamp) in replay order, read batch by batch straight from the
    snapshot file and the log, not through the entries under test."""
    latest = mlog.latest_snapshot()
    assert latest is not None
    contents = mlog.read_snapshot(latest)
    out = []
    for position in contents.positions:
        db = decode_at(contents.data, position, contents.path)
        h = db.header
        out += [(latest.offset - 1, r, h.partition_leader_epoch, h.max_timestamp) for r in db.records]
    for _, _, db in mlog.iter_decoded_batches(latest.offset):
        h = db.header
        if not db.is_control:
            out += [
                (h.base_offset + i, r, h.partition_leader_epoch, h.max_timestamp)
                for i, r in enumerate(db.records)
                if h.base_offset + i >= latest.offset
            ]
    return out


def one_by_one(mlog: MetadataLog, end_offset: int) -> tuple[QuorumControllerCore, MetadataDelta, int]:
    core, delta, n = new_core(), MetadataDelta(MetadataImage.EMPTY), 0
    for offset, record, epoch, timestamp_ms in committed_records(mlog):
        if offset >= end_offset:
            break
        core.replay(record, offset)
        delta.replay(record, offset, epoch=epoch, timestamp_ms=timestamp_ms)
        n += 1
    return core, delta, n


def built(core: QuorumControllerCore, delta: MetadataDelta, n: int) -> tuple[object, ...]:
    return (
        n,
        core.state(),
        core.last_replayed_offset,
        core.in_transaction,
        delta.apply(),
        delta.last_offset,
        delta.last_epoch,
        delta.last_timestamp_ms,
    )


def test_a_restart_replays_what_one_record_at_a_time_would(tmp_path: Path) -> None:
    begin = ApiMessageAndVersion(mr.BeginTransactionRecord(Name="bootstrap"), 0)
    end = ApiMessageAndVersion(mr.EndTransactionRecord(), 0)
    with MetadataLog.open(tmp_path) as mlog:
        mlog.append([mv()], 1, 10)
        for i in range(4):
            mlog.append(topic_records(i), leader_epoch=1, timestamp_ms=100 + i)
        mlog.write_snapshot(mlog.load_image().write(), mlog.log_end_offset, 1, 103)
        mlog.append(topic_records(10) + topic_records(11) + noops(2), leader_epoch=2, timestamp_ms=200)
        mlog.append([begin, *topic_records(12)], leader_epoch=2, timestamp_ms=201)
        # A new leader's LeaderChange, between two halves of the transaction.
        mlog.append_control(
            [LeaderChangeMessage(Version=0, LeaderId=1, Voters=[], GrantingVoters=[])], 3, timestamp_ms=299
        )
        mlog.append([*topic_records(13), end, *topic_records(14)], leader_epoch=3, timestamp_ms=300)
        mlog.flush()
        first = snapshot_end(mlog)
        assert first == 9
        for end_offset in range(first, mlog.log_end_offset + 1):
            core, delta = new_core(), MetadataDelta(MetadataImage.EMPTY)
            n = replay_committed(mlog, core, delta, end_offset)
            assert built(core, delta, n) == built(*one_by_one(mlog, end_offset)), end_offset
        # The image the process keeps beside the core holds the core's own registrations (but for
        # the records of a transaction, which the delta holds back until its end).
        image = delta.apply()
        for topic_id, topic in core.m.replication.topics.items():
            if topic.name in ("t12", "t13"):
                continue
            for pid, registration in topic.partitions.items():
                assert image.topics.get_partition(topic_id, pid) is registration
        # The whole log: the snapshot's records, then every record after it but the LeaderChange.
        assert n == len(committed_records(mlog)) == 10 + mlog.log_end_offset - first - 1
