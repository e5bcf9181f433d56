"""The controller's Raft client for a single-voter quorum (a cut-down KafkaRaftClient).

This is the one place that knows the quorum has a single voter. It wins its own election (one
epoch more than any it has seen, persisted in quorum-state, announced by a LeaderChange control
batch), counts a record committed as soon as an fsync covers it (the high watermark is the flushed
end of the log), and answers Fetch and FetchSnapshot as the leader. The rest of the process sees
only what a multi-voter client offers as well: the leader epoch and high watermark, a sink to
append through, commit and failure callbacks, snapshots written onto the log, and the Raft RPCs;
a quorum of three replaces this class, not its users.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

import structlog

from controller.log_sink import MetadataLogSink, PreparedAppend
from controller.raft_fetch import (
    FetchKind,
    FetchRequestView,
    LogState,
    OffsetAndEpoch,
    decide_fetch,
    decide_fetch_snapshot,
)
from controller.raft_log import LogView, read_committed, read_snapshot_chunk, read_view, write_snapshot
from kraftpy.metalog.group_commit import GroupCommitLog
from protocol.errors import Errors
from protocol.rpc.fetch import EpochEndOffset, FetchRequest, FetchResponse, LeaderIdAndEpoch, SnapshotIdData
from protocol.rpc.fetch_snapshot import FetchSnapshotRequest, FetchSnapshotResponse

if TYPE_CHECKING:
    from kraftpy.metalog.files import SnapshotId
    from kraftpy.metalog.log import MetadataLog

log = structlog.get_logger(__name__)

T = TypeVar("T")


class SingleVoterRaftClient:
    """`await become_leader()`, append through `sink`; `begin_shutdown()`, `drain()`, then `close()`."""

    def __init__(
        self,
        mlog: MetadataLog,
        log_thread: ThreadPoolExecutor,
        *,
        node_id: int,
        cluster_id: str,
        on_committed: Callable[[int, PreparedAppend], None],
        on_failure: Callable[[BaseException], None],
    ) -> None:
        """`log_thread` is single-threaded and the only one touching `mlog`, so its calls are ordered."""
        self.node_id = node_id
        self.cluster_id = cluster_id
        self.leader_epoch = 0
        self.high_watermark = 0
        self._log_thread = log_thread
        self._gcl = GroupCommitLog(mlog, log_thread)
        self._on_committed = on_committed
        self._on_failure = on_failure
        self._sink: MetadataLogSink | None = None
        self._view = LogView()
        self._hw_changed = asyncio.Event()
        self._shutting_down = False

    async def _on_log_thread(self, fn: Callable[..., T], *args: Any) -> T:
        # Straight onto the executor, not GroupCommitLog.run: a failed read must not fail the log.
        return await asyncio.get_running_loop().run_in_executor(
            self._log_thread, functools.partial(fn, *args)
        )

    # ---- leadership and replication ------------------------------------------------------------------

    async def become_leader(self) -> None:
        """A single voter wins every election it runs: one epoch more than any it has seen."""
        mlog = self._gcl.log
        self.leader_epoch = await self._on_log_thread(_elect_self, mlog, self.node_id)
        await self._gcl.flush()
        self.high_watermark = mlog.flushed_offset
        await self._refresh_view()
        log.info("became the active controller", leader_epoch=self.leader_epoch, node_id=self.node_id)
        self._sink = MetadataLogSink(
            self._gcl, self.leader_epoch, on_committed=self._committed, on_failure=self._on_failure
        )

    @property
    def sink(self) -> MetadataLogSink:
        assert self._sink is not None, "no sink before the election"
        return self._sink

    @property
    def log_end_offset(self) -> int:
        return self._sink.next_offset if self._sink is not None else 0

    @property
    def log_start_offset(self) -> int:
        return self._view.log_start_offset

    @property
    def latest_snapshot_end_offset(self) -> int:
        snapshots = self._view.snapshots
        return snapshots[-1].offset if snapshots else -1

    def _committed(self, high_watermark: int, appended: PreparedAppend) -> None:
        # With one voter, durable on this disk is committed.
        self.high_watermark = max(self.high_watermark, high_watermark)
        self._on_committed(self.high_watermark, appended)
        # Long-poll: any commit wakes every waiting fetch to look again.
        self._hw_changed.set()
        self._hw_changed.clear()

    async def write_snapshot(self, records: list[Any], end_offset: int, timestamp_ms: int) -> SnapshotId:
        sid = await self._on_log_thread(write_snapshot, self._gcl.log, records, end_offset, timestamp_ms)
        await self._refresh_view()
        return sid

    async def _refresh_view(self) -> None:
        self._view = await self._on_log_thread(read_view, self._gcl.log)

    # ---- stop ---------------------------------------------------------------------------------------------

    def begin_shutdown(self) -> None:
        """Fetches answer at once from now on (and those waiting wake up)."""
        self._shutting_down = True
        self._hw_changed.set()

    async def drain(self) -> None:
        """Wait for every append to be durable (or to have failed)."""
        if self._sink is not None:
            await self._sink.drain()

    async def close(self) -> None:
        try:
            await self._gcl.close()
        except Exception:
            log.exception("closing the metadata log failed")

    # ---- the Raft RPCs, as the leader -------------------------------------------------------------------

    def log_state(self) -> LogState:
        return LogState(
            cluster_id=self.cluster_id,
            leader_id=self.node_id,
            leader_epoch=self.leader_epoch,
            log_start_offset=self._view.log_start_offset,
            log_end_offset=self.log_end_offset,
            high_watermark=self.high_watermark,
            epochs=self._view.epochs,
            snapshots=self._view.snapshots,
            is_leader=True,
            shutting_down=self._shutting_down,
        )

    def _current_leader(self) -> LeaderIdAndEpoch:
        return LeaderIdAndEpoch(LeaderId=self.node_id, LeaderEpoch=self.leader_epoch)

    async def handle_fetch(self, req: FetchRequest, version: int) -> FetchResponse:
        view = FetchRequestView(
            cluster_id=req.ClusterId,
            replica_id=req.ReplicaId,
            current_leader_epoch=req.CurrentLeaderEpoch,
            fetch_offset=req.FetchOffset,
            last_fetched_epoch=req.LastFetchedEpoch,
            max_wait_ms=req.MaxWaitMs,
        )
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(0, req.MaxWaitMs) / 1000
        while True:
            state = self.log_state()
            decision = decide_fetch(state, view)
            remaining = deadline - loop.time()
            if remaining <= 0 or not decision.should_wait(state, int(remaining * 1000) + 1):
                break
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._hw_changed.wait(), remaining)
        resp = FetchResponse(
            ErrorCode=int(decision.error),
            HighWatermark=state.high_watermark,
            LogStartOffset=state.log_start_offset,
            CurrentLeader=self._current_leader(),
        )
        if decision.kind is FetchKind.DIVERGING and decision.diverging is not None:
            resp.DivergingEpoch = EpochEndOffset(
                Epoch=decision.diverging.epoch, EndOffset=decision.diverging.offset
            )
        elif decision.kind is FetchKind.SNAPSHOT and decision.snapshot_id is not None:
            resp.SnapshotId = SnapshotIdData(
                EndOffset=decision.snapshot_id.offset, Epoch=decision.snapshot_id.epoch
            )
        elif decision.records_available(state):
            resp.Records = await self._on_log_thread(
                read_committed, self._gcl.log, decision.read_offset, req.MaxBytes, state.high_watermark
            )
        return resp

    async def handle_fetch_snapshot(self, req: FetchSnapshotRequest, version: int) -> FetchSnapshotResponse:
        wanted = OffsetAndEpoch(req.SnapshotId.EndOffset, req.SnapshotId.Epoch)
        chunk = decide_fetch_snapshot(
            self.log_state(),
            self._view.snapshot_sizes,
            cluster_id=req.ClusterId,
            current_leader_epoch=req.CurrentLeaderEpoch,
            snapshot_id=wanted,
            position=req.Position,
            max_bytes=req.MaxBytes,
        )
        resp = FetchSnapshotResponse(
            ErrorCode=int(chunk.error), SnapshotId=req.SnapshotId, CurrentLeader=self._current_leader()
        )
        if chunk.error is not Errors.NONE:
            return resp
        data = await self._on_log_thread(
            read_snapshot_chunk, self._gcl.log, wanted, chunk.position, chunk.length
        )
        if data is None:
            resp.ErrorCode = int(Errors.SNAPSHOT_NOT_FOUND)
            return resp
        resp.Size = chunk.size
        resp.Position = chunk.position
        resp.UnalignedRecords = data
        return resp


def _elect_self(mlog: MetadataLog, node_id: int) -> int:
    """On the log's thread: persist the vote and the leadership, then announce it in the new epoch."""
    from kraftpy.metalog.checkpoints import QuorumStateData
    from protocol.control_records import LeaderChangeMessage

    previous = mlog.read_quorum_state()
    epoch = max(previous.leader_epoch if previous is not None else 0, mlog.latest_epoch, 0) + 1
    # The vote and the leadership are on disk before anything is written in the new epoch.
    mlog.write_quorum_state(
        QuorumStateData(leader_id=node_id, leader_epoch=epoch, voted_id=node_id, current_voters=(node_id,))
    )
    me = LeaderChangeMessage.Voter(VoterId=node_id)
    mlog.append_control(
        [LeaderChangeMessage(Version=0, LeaderId=node_id, Voters=[me], GrantingVoters=[me])], epoch
    )
    return epoch
