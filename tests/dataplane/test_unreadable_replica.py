"""A replica whose own log holds a damaged batch (a flipped bit in the middle of a segment) is listed
offline in this broker's Metadata answer and in its failed partitions, with the offset and why, also
when it is the leader; it keeps serving the good batches, and the mark goes with the damaged batch.
"""

from __future__ import annotations

import os
from pathlib import Path

from broker.dataplane import DataPlane
from broker.dataplane.metadata_response import metadata_response
from broker.storage import PartitionLog
from protocol.record_batch import iter_batch_positions
from protocol.rpc.metadata import MetadataRequest
from tests.broker_storage.batches import value_batch
from tests.dataplane.test_metadata_response import TOPIC_ID as META_TOPIC_ID
from tests.dataplane.test_metadata_response import cluster
from tests.dataplane.test_replica_manager import Host, batch, fetch, plane, produce
from tools.client.records import read_records

__all__ = ["plane"]  # the fixture, used by name below


def flip_inside_batch(segment: Path, index: int) -> int:
    """Flip one bit in the last record of batch `index` of `segment` (only the CRC can tell);
    returns that batch's base offset."""
    data = segment.read_bytes()
    pos, h = list(iter_batch_positions(data))[index]
    fd = os.open(segment, os.O_RDWR)
    try:
        os.pwrite(fd, bytes([data[pos + h.size - 1] ^ 0x01]), pos + h.size - 1)
    finally:
        os.close(fd)
    return h.base_offset


def test_a_checked_read_remembers_the_damaged_batch_until_it_is_cut_away(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path / "orders-0")
    for i in range(3):
        log.append_as_leader(value_batch(4, tag=i), leader_epoch=1, now_ms=1_000)
    bad = flip_inside_batch(log.active_segment.path, 1)
    assert bad == 4

    plain = log.read(0, 1 << 20)
    assert log.unreadable is None  # an unchecked read (a consumer's) does not look
    checked = log.read(0, 1 << 20, verify=True)
    assert checked.records == plain.records  # returned as they are: the reader sees the damage too
    assert log.unreadable is not None and log.unreadable.offset == bad
    assert "offset 4" in log.unreadable.reason and "CRC-32C" in log.unreadable.reason
    assert log.active_segment.path.name in log.unreadable.reason

    log.read(8, 1 << 20, verify=True)  # a later read past it keeps the mark: the batch is still there
    assert log.unreadable is not None

    log.truncate_to(bad)
    assert log.unreadable is None
    log.append_as_leader(value_batch(4, tag=9), leader_epoch=2, now_ms=1_000)
    assert log.read(0, 1 << 20, verify=True).records and log.unreadable is None
    log.close()


def test_metadata_lists_the_local_unreadable_replica_offline_leader_included() -> None:
    img = cluster()
    req = MetadataRequest(Topics=None)

    def offline(local: int, unreadable: set[tuple[object, int]]) -> tuple[int, list[int], int]:
        resp = metadata_response(
            img, req, 12, listener="PLAINTEXT", cluster_id="c", local_broker_id=local, unreadable=unreadable
        )
        (p,) = resp.Topics[0].Partitions
        return p.LeaderId, p.OfflineReplicas, p.ErrorCode

    assert offline(1, set()) == (1, [], 0)
    # The leader itself (broker 1) knows: it is listed, and still leads (it serves the good batches).
    assert offline(1, {(META_TOPIC_ID, 0)}) == (1, [1], 0)
    assert offline(2, {(META_TOPIC_ID, 0)}) == (1, [2], 0)
    assert offline(2, {(META_TOPIC_ID, 1)}) == (1, [], 0)  # another partition's mark
    # A broker that holds no replica of the partition lists nobody on its account.
    assert offline(4, {(META_TOPIC_ID, 0)}) == (1, [], 0)
    # Asked by name, the same.
    named = metadata_response(
        img,
        MetadataRequest(Topics=[MetadataRequest.MetadataRequestTopic(Name="t")]),
        12,
        listener="PLAINTEXT",
        cluster_id="c",
        local_broker_id=1,
        unreadable={(META_TOPIC_ID, 0)},
    )
    assert named.Topics[0].Partitions[0].OfflineReplicas == [1]


async def test_a_leader_whose_log_is_damaged_lists_itself_offline(plane: tuple[DataPlane, Host]) -> None:
    dp, host = plane
    for i in range(3):
        assert (await produce(dp, batch([b"v%d-%d" % (i, j) for j in range(3)]), acks=1)).ErrorCode == 0
    local = host.logs[0]
    bad = flip_inside_batch(local.log.active_segment.path, 1)

    async def offline() -> dict[int, list[int]]:
        meta = await dp.api.metadata(MetadataRequest(Topics=None), 12)
        return {p.PartitionIndex: p.OfflineReplicas for p in meta.Topics[0].Partitions}

    # A consumer's read does not check CRCs (the consumer does): nothing known yet.
    await fetch(dp, 0)
    assert await offline() == {0: [], 1: []} and dp.replicas.failed_partitions() == []

    # A follower's read is checked: the leader learns its own log holds the damaged batch.
    got = await fetch(dp, 0, replica=2, epoch=0)
    assert got.ErrorCode == 0
    assert await offline() == {0: [1], 1: []}
    meta = await dp.api.metadata(MetadataRequest(Topics=None), 12)
    p0 = meta.Topics[0].Partitions[0]
    assert (p0.LeaderId, p0.ErrorCode) == (1, 0)  # still leads: the batches before it are served
    (reason,) = dp.replicas.failed_partitions()
    assert reason.startswith("t-0") and f"offset {bad}" in reason and "CRC-32C" in reason, reason
    # The followers get past the good batches before it: the high watermark still moves.
    await fetch(dp, bad, replica=2, epoch=0)
    await fetch(dp, bad, replica=3, epoch=0)
    before = await fetch(dp, 0)
    assert before.HighWatermark == bad
    assert [r.value for r in read_records("t", 0, before.Records, 0)] == [b"v0-0", b"v0-1", b"v0-2"]

    # Cut away (as a truncation by a new leader would): the mark goes with the batch.
    await local.log_dir.run(local.log.truncate_to, bad)
    assert await offline() == {0: [], 1: []} and dp.replicas.failed_partitions() == []
