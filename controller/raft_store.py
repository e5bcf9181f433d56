"""The Raft core's log on disk: the metadata log read as batches and written from each `Ready`.

Everything here blocks and runs on the metadata log's one thread, never on the event loop. The core
sees one `Entry` per record batch (offset, epoch, raw bytes, record count), so the batches a leader
writes are the batches every voter stores: the voters' logs are byte-identical wherever they agree.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from kraftpy.log.errors import OffsetOutOfRangeError
from kraftpy.metalog.checkpoints import QuorumStateData
from kraftpy.metalog.files import SnapshotId as FileSnapshotId
from kraftpy.raft.log_view import LogView
from kraftpy.raft.messages import Entry, Snapshot, SnapshotId
from kraftpy.raft.ready import Ready
from kraftpy.raft.state import QuorumState
from protocol.control_records import LeaderChangeMessage
from protocol.record_batch import build_control_batch, read_batch_header

if TYPE_CHECKING:
    from kraftpy.metalog.log import MetadataLog

# How much one read hands the core (a Fetch answer, or a step of committed records to apply).
READ_MAX_BYTES = 1 << 20


def entries_of(data: bytes) -> list[Entry]:
    """Whole batches in `data` as entries, their bytes kept as they are."""
    out = []
    pos = 0
    while pos < len(data):
        h = read_batch_header(data, pos)
        out.append(
            Entry(
                h.base_offset,
                h.partition_leader_epoch,
                bytes(data[pos : pos + h.size]),
                h.is_control,
                h.next_offset - h.base_offset,
            )
        )
        pos += h.size
    return out


class RaftLogStore:
    """The core's `LogReader` over a MetadataLog, and the writer of every `Ready` it returns."""

    def __init__(self, mlog: MetadataLog, voters: frozenset[int]) -> None:
        self.log = mlog
        self.voters = voters
        self._dirty = False

    # ---- what the core reads --------------------------------------------------------------------

    def read(self, start: int, max_count: int) -> tuple[Entry, ...]:
        try:
            data = self.log.read(start, READ_MAX_BYTES)
        except OffsetOutOfRangeError:
            return ()
        entries = [e for e in entries_of(data) if e.offset >= start]
        return tuple(entries[:max_count])

    def latest_snapshot(self) -> Snapshot | None:
        # Snapshots go out in chunks straight from their files (the client's FetchSnapshot path).
        return None

    def latest_snapshot_id(self) -> SnapshotId | None:
        sid = self.log.latest_snapshot()
        if sid is None or sid.offset == 0:
            return None  # the bootstrap snapshot (0, 0) holds no log
        return SnapshotId(sid.offset, sid.epoch)

    def view(self) -> LogView:
        """The core's view of the log as it is on disk: it starts at the latest snapshot, whose state
        the controller loads, even when retention still keeps older segments."""
        mlog = self.log
        view = LogView(
            log_start=mlog.log_start_offset,
            end_offset=mlog.log_end_offset,
            epochs=[(e.epoch, e.start_offset) for e in mlog.epoch_entries()],
        )
        snapshot = self.latest_snapshot_id()
        if snapshot is not None:
            if snapshot.EndOffset > view.log_start:
                view.delete_before(snapshot)
            view.snapshot_id = snapshot
        return view

    def quorum_state(self) -> QuorumState:
        stored = self.log.read_quorum_state()
        if stored is None:
            return QuorumState(voters=self.voters)
        return QuorumState(
            leader_id=stored.leader_id,
            leader_epoch=stored.leader_epoch,
            voted_id=stored.voted_id,
            voters=self.voters,
        )

    def leader_change(self, offset: int, epoch: int, leader_id: int, granting: frozenset[int]) -> bytes:
        """The LeaderChange control batch a new leader writes first (Kafka's LeaderChangeMessage v0)."""
        message = LeaderChangeMessage(
            Version=0,
            LeaderId=leader_id,
            Voters=[LeaderChangeMessage.Voter(VoterId=v) for v in sorted(self.voters)],
            GrantingVoters=[LeaderChangeMessage.Voter(VoterId=v) for v in sorted(granting)],
        )
        return build_control_batch(offset, epoch, time.time_ns() // 1_000_000, [message])

    # ---- writing a Ready ------------------------------------------------------------------------

    def flush(self) -> None:
        """fsync what `persist` wrote to the log since the last flush."""
        if self._dirty:
            self.log.flush()
            self._dirty = False

    def persist(self, ready: Ready) -> None:
        """Write a Ready: quorum-state (synced at once), then the log.
        The log writes are durable after `flush()`; nothing of the Ready may leave before it."""
        mlog = self.log
        wrote = False
        # quorum-state first: no batch of an epoch may reach the log before that epoch is on disk, so
        # opening the log can refuse a batch whose epoch (outside the CRC) is newer than quorum-state.
        if ready.quorum_state is not None:
            state = ready.quorum_state
            mlog.write_quorum_state(
                QuorumStateData(
                    leader_id=state.leader_id,
                    leader_epoch=state.leader_epoch,
                    voted_id=state.voted_id,
                    current_voters=tuple(sorted(state.voters)),
                )
            )
        if ready.install_snapshot is not None:
            sid = ready.install_snapshot.snapshot_id
            mlog.install_snapshot(FileSnapshotId(sid.EndOffset, sid.Epoch), ready.install_snapshot.state)
            if mlog.log_end_offset > sid.EndOffset or mlog.log_start_offset < sid.EndOffset:
                # A snapshot from the leader replaces the whole log: what we had may not match it.
                mlog.truncate_fully_and_start_at(sid.EndOffset)
            wrote = True
        if ready.truncate_to is not None:
            mlog.truncate_to(ready.truncate_to)
            wrote = True
        if ready.appends:
            mlog.append_raw_batches(b"".join(e.data for e in ready.appends))
            wrote = True
        if ready.local_snapshot is not None or ready.clean_log:
            # Retention moves the log start and rewrites the epoch checkpoint: flushed with the rest.
            wrote = mlog.maybe_clean() or wrote
        self._dirty = self._dirty or wrote
