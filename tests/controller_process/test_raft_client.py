"""A lone voter's Raft client on a real metadata log, without a process around it.

Election across restarts, commit by fsync, Fetch long-polls woken by commits or by shutdown, and
snapshots written onto the log.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from controller.active_term import RaftWriter
from controller.log_sink import MetadataLogSink, PreparedAppend
from controller.raft_client import RaftClient
from controller.raft_handlers import RaftApis
from controller.raft_transport import HttpRaftTransport
from kraftpy.metalog.log import MetadataLog
from kraftpy.raft.config import QuorumConfig
from protocol.control_records import control_records
from protocol.framing import ApiMessageAndVersion
from protocol.metadata_records import NoOpRecord
from protocol.record_batch import iter_batches, metadata_records
from protocol.rpc.fetch import FetchRequest, FetchResponse, SnapshotIdData
from protocol.rpc.fetch_snapshot import FetchSnapshotRequest

CLUSTER = "test-cluster-0000000000"


class OneVoter:
    """A lone voter's Raft client with what the controller puts around it: the wire handlers, and a
    log sink for the claimed term."""

    def __init__(self, raft: RaftClient, commits: list[tuple[int, int]] | None) -> None:
        self.raft = raft
        self.apis = RaftApis(raft, CLUSTER)
        self.commits = commits
        self.sink: MetadataLogSink | None = None
        self.claimed = asyncio.Event()
        self.closed = False
        self.executor: ThreadPoolExecutor
        self.mlog: MetadataLog

    # RaftListener
    async def handle_commit(self, entries: Any) -> None:
        pass

    async def handle_snapshot(self, snapshot_id: Any) -> None:
        pass

    async def handle_claim(self, epoch: int) -> None:
        def on_committed(hw: int, appended: PreparedAppend) -> None:
            if self.commits is not None:
                self.commits.append((hw, appended.last_offset))

        self.sink = MetadataLogSink(
            RaftWriter(self.raft),
            epoch,
            next_offset=self.raft.next_offset,
            on_committed=on_committed,
            on_failure=lambda e: None,
        )
        self.claimed.set()

    async def handle_renounce(self, applied_offset: int) -> None:
        pass

    # what the tests read
    @property
    def leader_epoch(self) -> int:
        return self.raft.leader_epoch

    @property
    def high_watermark(self) -> int:
        return self.raft.high_watermark

    @property
    def log_end_offset(self) -> int:
        return self.raft.log_end_offset

    @property
    def latest_snapshot_end_offset(self) -> int:
        return self.raft.latest_snapshot_end_offset

    async def handle_fetch(self, req: FetchRequest, version: int) -> FetchResponse:
        return await self.apis.handlers()["Fetch"](req, version)

    async def handle_fetch_snapshot(self, req: FetchSnapshotRequest, version: int) -> Any:
        return await self.apis.handlers()["FetchSnapshot"](req, version)

    async def write_snapshot(self, records: Any, end_offset: int, timestamp_ms: int) -> Any:
        return await self.raft.write_snapshot(records, end_offset, timestamp_ms)

    def begin_shutdown(self) -> None:
        self.raft.begin_shutdown()

    async def drain(self) -> None:
        if self.sink is not None:
            await self.sink.drain()

    async def close(self) -> None:
        if not self.closed:
            self.closed = True
            await self.raft.close()
            await asyncio.get_running_loop().run_in_executor(self.executor, self.mlog.close)


OpenClient = Callable[..., Awaitable[OneVoter]]


def fetched_types(resp: FetchResponse) -> list[tuple[int, str]]:
    out = []
    for batch in iter_batches(resp.Records, verify_crc=True):
        decoded = control_records(batch) if batch.is_control else metadata_records(batch)
        for rec, amv in zip(batch.records, decoded, strict=True):
            out.append((batch.base_offset + rec.offset_delta, type(amv.message).__name__))
    return out


def noops(n: int) -> list[ApiMessageAndVersion]:
    return [ApiMessageAndVersion(NoOpRecord(), 0) for _ in range(n)]


@pytest.fixture
async def open_client(tmp_path: Path) -> AsyncIterator[OpenClient]:
    """Factory: a lone voter's Raft client over the log in tmp_path, elected; every one is closed at the end."""
    opened: list[tuple[OneVoter, ThreadPoolExecutor, MetadataLog]] = []
    failures: list[BaseException] = []

    async def make(commits: list[tuple[int, int]] | None = None) -> OneVoter:
        executor = ThreadPoolExecutor(max_workers=1)
        mlog = await asyncio.get_running_loop().run_in_executor(executor, MetadataLog.open, tmp_path / "meta")
        holder: list[OneVoter] = []

        class Forward:
            async def handle_commit(self, entries: Any) -> None:
                await holder[0].handle_commit(entries)

            async def handle_snapshot(self, sid: Any) -> None:
                await holder[0].handle_snapshot(sid)

            async def handle_claim(self, epoch: int) -> None:
                await holder[0].handle_claim(epoch)

            async def handle_renounce(self, applied: int) -> None:
                await holder[0].handle_renounce(applied)

        raft = RaftClient(
            mlog,
            executor,
            config=QuorumConfig(cluster_id=CLUSTER, voters=frozenset({1}), fetch_idle_ms=0),
            node_id=1,
            listener=Forward(),
            transport=HttpRaftTransport({1: "http://127.0.0.1:1"}, 1, CLUSTER),
            on_failure=failures.append,
        )
        voter = OneVoter(raft, commits)
        voter.executor, voter.mlog = executor, mlog
        holder.append(voter)
        opened.append((voter, executor, mlog))
        await raft.start()
        await asyncio.wait_for(voter.claimed.wait(), 10)
        return voter

    yield make
    for voter, executor, _mlog in opened:
        voter.begin_shutdown()
        await voter.drain()
        await voter.close()
        executor.shutdown(wait=True)
    assert failures == []


async def test_each_start_wins_a_new_epoch_announced_in_the_log(open_client: OpenClient) -> None:
    first = await open_client()
    assert first.leader_epoch == 1 and first.high_watermark == first.log_end_offset == 1
    await first.drain()
    first.begin_shutdown()
    await first.close()
    second = await open_client()
    assert second.leader_epoch == 2 and second.high_watermark == 2
    resp = await second.handle_fetch(
        FetchRequest(ClusterId=CLUSTER, CurrentLeaderEpoch=2, FetchOffset=0, LastFetchedEpoch=0), 13
    )
    assert fetched_types(resp) == [(0, "LeaderChangeMessage"), (1, "LeaderChangeMessage")]
    assert resp.CurrentLeader is not None and resp.CurrentLeader.LeaderEpoch == 2


async def test_commits_are_reported_and_wake_a_waiting_fetch(open_client: OpenClient) -> None:
    commits: list[tuple[int, int]] = []
    raft = await open_client(commits)
    poll = asyncio.ensure_future(
        raft.handle_fetch(
            FetchRequest(
                ClusterId=CLUSTER, CurrentLeaderEpoch=1, FetchOffset=1, LastFetchedEpoch=1, MaxWaitMs=30_000
            ),
            13,
        )
    )
    await asyncio.sleep(0.1)
    assert not poll.done()
    sink = raft.sink
    assert sink is not None
    assert sink.schedule(sink.prepare(noops(3), atomic=True)) == 3
    woken = await asyncio.wait_for(poll, 10)
    assert fetched_types(woken) == [(1, "NoOpRecord"), (2, "NoOpRecord"), (3, "NoOpRecord")]
    assert commits == [(4, 3)] and raft.high_watermark == woken.HighWatermark == 4


async def test_shutdown_answers_a_waiting_fetch_at_once(open_client: OpenClient) -> None:
    raft = await open_client()
    poll = asyncio.ensure_future(
        raft.handle_fetch(
            FetchRequest(
                ClusterId=CLUSTER, CurrentLeaderEpoch=1, FetchOffset=1, LastFetchedEpoch=1, MaxWaitMs=30_000
            ),
            13,
        )
    )
    await asyncio.sleep(0.1)
    raft.begin_shutdown()
    resp = await asyncio.wait_for(poll, 5)
    assert resp.Records == b""


async def test_a_fetch_that_times_out_leaves_no_waiter_behind(open_client: OpenClient) -> None:
    raft = await open_client()
    for _ in range(3):
        resp = await raft.handle_fetch(
            FetchRequest(
                ClusterId=CLUSTER, CurrentLeaderEpoch=1, FetchOffset=1, LastFetchedEpoch=1, MaxWaitMs=50
            ),
            13,
        )
        assert resp.Records == b""
    # Nothing was committed meanwhile, so no commit came to sweep the long polls' waiters away.
    assert raft.high_watermark == 1
    await asyncio.sleep(0)  # a cancelled future runs its done callbacks on the loop's next turn
    assert raft.raft._parked == set()


async def test_a_snapshot_written_through_the_client_is_offered_to_fetchers(
    open_client: OpenClient,
) -> None:
    raft = await open_client()
    sink = raft.sink
    assert sink is not None
    sink.schedule(sink.prepare(noops(4), atomic=True))
    await raft.drain()
    assert raft.latest_snapshot_end_offset == -1
    sid = await raft.write_snapshot(noops(1), 5, 0)
    assert (sid.offset, sid.epoch) == (5, 1) and raft.latest_snapshot_end_offset == 5
    req = FetchSnapshotRequest(
        ClusterId=CLUSTER, CurrentLeaderEpoch=1, SnapshotId=SnapshotIdData(EndOffset=5, Epoch=1)
    )
    chunk = await raft.handle_fetch_snapshot(req, 0)
    assert chunk.ErrorCode == 0 and chunk.Size > 0 and chunk.UnalignedRecords
