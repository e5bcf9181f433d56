"""The Raft state machine of one KRaft node, after Kafka's KafkaRaftClient, with no I/O.

`step(envelope, now_ms)`, `tick(now_ms)`, `append(records, now_ms)`, `resign(now_ms)` and
`create_snapshot(...)` each return one `Ready` (see ready.py for the order the shell must follow).
The core keeps only a `LogView` of its log and reads records through a `LogReader`; it assumes the
previous `Ready` was persisted before the next call.

Simplified relative to Kafka 3.9: a static voter set (kraft.version 0, no KIP-853), no pre-vote
(KIP-996), no long-polling Fetch (the leader answers at once, an idle follower waits `fetch_idle_ms`;
a follower that got records fetches again in the same `Ready`, as Kafka's polls again at once),
and a snapshot travels in one FetchSnapshot chunk (the controller's shell downloads it in chunks and
steps the core with the whole). An `Entry` is one batch; the simulation uses batches of one record.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Sequence
from typing import Any

from kraftpy.raft.backoff import (
    binary_exponential_backoff,
    random_election_timeout,
    strict_exponential_backoff,
)
from kraftpy.raft.cleaning import CleaningTimer
from kraftpy.raft.config import QuorumConfig
from kraftpy.raft.log_view import LogReader, LogView
from kraftpy.raft.messages import (
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    DivergingEpoch,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    Entry,
    Envelope,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    Message,
    Snapshot,
    SnapshotId,
    VoteRequest,
    VoteResponse,
)
from kraftpy.raft.ready import Ready
from kraftpy.raft.state import CAN_GRANT_VOTE, QuorumState, Role, check_transition, initial_role
from protocol.errors import Errors, KafkaError

LEADER_CHANGE = b"LeaderChange"
NEVER = 1 << 62


class RaftCore:
    def __init__(
        self,
        config: QuorumConfig,
        local_id: int,
        state: QuorumState,
        view: LogView,
        log: LogReader,
        rng: random.Random,
        now_ms: int,
        leader_change: Callable[[int, int, frozenset[int]], bytes] | None = None,
    ) -> None:
        """`leader_change(offset, epoch, granting_voters)` gives the bytes of the control batch a new
        leader writes first; without it the batch holds a marker (enough for the simulation)."""
        self.config = config
        self.local_id = local_id
        self.voters = config.voters
        self.view = view
        self.log = log
        self.rng = rng
        self._leader_change = leader_change
        self.epoch = state.leader_epoch
        self.leader_id = state.leader_id
        self.voted_id = state.voted_id
        self.role = initial_role(state, local_id)
        # Volatile: a restarted node relearns what is committed from the leader.
        self.high_watermark = view.log_start
        self.applied = view.log_start
        self._ready = Ready()
        self._cleaning = CleaningTimer.starting(now_ms)
        self._election_retries = 0  # failed elections in a row; survives role changes until one is won
        self._reset_volatile(now_ms)
        if self.role is Role.CANDIDATE:
            # A candidate that restarted cannot know which votes it had: it backs off and runs again.
            self._backing_off = True
            self._backoff_deadline = now_ms + self._random_election_timeout()
        elif self.role in (Role.UNATTACHED, Role.VOTED, Role.RESIGNED):
            self._election_deadline = now_ms + self._random_election_timeout()
            if self.voters == {local_id}:
                # KafkaRaftClient: a quorum of one runs at once; nobody else could win.
                self._election_deadline = now_ms

    # ---- public inputs ------------------------------------------------------------------------

    def step(self, envelope: Envelope, now_ms: int) -> Ready:
        handler = _HANDLERS.get(type(envelope.message))
        if handler is not None and envelope.source != self.local_id:
            handler(self, envelope.source, envelope.message, now_ms)
        return self._take_ready()

    def tick(self, now_ms: int) -> Ready:
        _TICKS[self.role](self, now_ms)
        if self._cleaning.due(now_ms):
            self._ready.clean_log = True
        return self._take_ready()

    def next_tick_ms(self) -> int:
        """The earliest time a tick can do anything; before it a tick changes nothing and says
        nothing, until another input moves a timer. A shell may skip ticks until then."""
        return min(self._role_next_tick_ms(), self._cleaning.next_ms)

    def _role_next_tick_ms(self) -> int:
        role = self.role
        if role is Role.LEADER:
            due = self._resend_at if self._unacked_begin else NEVER
            needed = self.config.majority - 1  # other voters that must have fetched lately
            if needed > 0:
                fetched = sorted(self._replica_last_fetch.values(), reverse=True)
                if len(fetched) < needed:
                    return 0  # check-quorum fails at the next tick
                # Live until the needed-th most recent fetch is fetch_timeout_ms old.
                due = min(due, fetched[needed - 1] + self.config.fetch_timeout_ms)
            return due
        if role is Role.CANDIDATE:
            if self._backing_off:
                return self._backoff_deadline
            return min(self._election_deadline, self._resend_at)
        if role is Role.FOLLOWER:
            return min(self._fetch_deadline, self._election_deadline, self._next_fetch)
        if role is Role.OBSERVER:
            return min(self._fetch_deadline, self._next_fetch) if self.leader_id >= 0 else self._next_fetch
        return self._election_deadline  # unattached, voted, resigned

    def append(self, records: Sequence[bytes], now_ms: int, counts: Sequence[int] | None = None) -> Ready:
        """Append batches as the leader (`counts[i]` records in `records[i]`, one each by default); the
        caller learns they are committed from `Ready.committed`. The batches land at `view.end_offset`
        in this epoch, so a caller encoding offsets into them reads those first."""
        if self.role is not Role.LEADER:
            raise KafkaError(Errors.NOT_LEADER_OR_FOLLOWER, f"node {self.local_id} is {self.role.value}")
        sizes = counts if counts is not None else [1] * len(records)
        self._append_local([(data, False, n) for data, n in zip(records, sizes, strict=True)])
        self._maybe_advance_leader_hw()
        return self._take_ready()

    def unreachable(self, voter: int, now_ms: int) -> Ready:
        """A vote request to `voter` could not be delivered (refused or timed out). A candidate counts
        it as a rejection for this round, so with the old leader dead and a split vote it backs off
        at once instead of waiting out its election timeout."""
        if self.role is Role.CANDIDATE and not self._backing_off and voter not in self._votes_granted:
            self._votes_rejected.add(voter)
            if len(self.voters) - len(self._votes_rejected) < self.config.majority:
                self._start_backoff(now_ms)
        return self._take_ready()

    def resign(self, now_ms: int) -> Ready:
        """Graceful resignation: EndQuorumEpoch to the voters, the most caught up first."""
        if self.role is Role.LEADER:
            self._become_resigned(now_ms)
        return self._take_ready()

    def create_snapshot(self, end_offset: int, state: bytes, now_ms: int) -> Ready:
        """Record that the application snapshotted everything below `end_offset`; the log drops it."""
        if not self.view.log_start < end_offset <= self.applied:
            raise ValueError(f"snapshot end {end_offset} outside ({self.view.log_start}, {self.applied}]")
        snapshot = Snapshot(SnapshotId(end_offset, self.view.epoch_at(end_offset - 1)), state)
        self.view.delete_before(snapshot.snapshot_id)
        self._ready.local_snapshot = snapshot
        return self._take_ready()

    # ---- bookkeeping --------------------------------------------------------------------------

    def _take_ready(self) -> Ready:
        ready, self._ready = self._ready, Ready()
        ready.high_watermark = self.high_watermark
        return ready

    def _reset_volatile(self, now_ms: int) -> None:
        self._election_deadline = NEVER
        self._backing_off = False
        self._backoff_deadline = NEVER
        self._votes_granted: set[int] = set()
        self._votes_rejected: set[int] = set()
        self._resend_at = NEVER
        self._fetch_deadline = now_ms + self.config.fetch_timeout_ms
        self._next_fetch = now_ms
        self._pending_snapshot: SnapshotId | None = None
        self._epoch_start_offset = -1
        self._replica_end: dict[int, int] = {}
        self._replica_last_fetch: dict[int, int] = {}
        self._unacked_begin: set[int] = set()

    def _persist(self) -> None:
        self._ready.quorum_state = QuorumState(
            leader_id=self.leader_id, leader_epoch=self.epoch, voted_id=self.voted_id, voters=self.voters
        )

    def _move(self, role: Role, epoch: int, leader_id: int, voted_id: int, now_ms: int) -> None:
        check_transition(self.role, role)
        changed = (epoch, leader_id, voted_id) != (self.epoch, self.leader_id, self.voted_id)
        self.role, self.epoch, self.leader_id, self.voted_id = role, epoch, leader_id, voted_id
        self._reset_volatile(now_ms)
        if changed:
            self._persist()

    def _send(self, destination: int, message: Message) -> None:
        self._ready.messages.append(Envelope(self.local_id, destination, message))

    def _random_election_timeout(self) -> int:
        return random_election_timeout(self.config.election_timeout_ms, self.rng)

    def _others(self) -> list[int]:
        return sorted(self.voters - {self.local_id})

    @property
    def epoch_start_offset(self) -> int:
        """Where the leader's own epoch starts (its LeaderChange); -1 unless leading. The shell serves
        as the leader only once everything below it is applied (KafkaRaftClient's maybeFireLeaderChange)."""
        return self._epoch_start_offset

    @property
    def is_voter(self) -> bool:
        return self.local_id in self.voters

    # ---- role changes -------------------------------------------------------------------------

    def _become_unattached(self, epoch: int, now_ms: int) -> None:
        if not self.is_voter:
            self._move(Role.OBSERVER, epoch, -1, -1, now_ms)
            return
        # QuorumState.transitionToUnattached keeps a running election timer: otherwise a voter with a
        # stale log, whose backoff is shorter than everyone's timeout, could bump the epoch forever and
        # restart the others' timers each time, so that no up-to-date voter ever ran.
        if self.role is Role.CANDIDATE:
            deadline = self._backoff_deadline if self._backing_off else self._election_deadline
        elif self.role in (Role.UNATTACHED, Role.VOTED):
            deadline = self._election_deadline
        else:
            deadline = now_ms + self._random_election_timeout()
        self._move(Role.UNATTACHED, epoch, -1, -1, now_ms)
        self._election_deadline = deadline

    def _become_voted(self, candidate_id: int, now_ms: int) -> None:
        self._move(Role.VOTED, self.epoch, -1, candidate_id, now_ms)
        self._election_deadline = now_ms + self._random_election_timeout()

    def _become_follower(self, epoch: int, leader_id: int, now_ms: int) -> None:
        voted = self.voted_id if epoch == self.epoch else -1
        self._election_retries = 0
        self._move(Role.FOLLOWER if self.is_voter else Role.OBSERVER, epoch, leader_id, voted, now_ms)

    def _become_candidate(self, now_ms: int) -> None:
        self._move(Role.CANDIDATE, self.epoch + 1, -1, self.local_id, now_ms)
        self._votes_granted = {self.local_id}
        self._election_deadline = now_ms + self._random_election_timeout()
        if len(self._votes_granted) >= self.config.majority:
            self._become_leader(now_ms)
            return
        self._send_vote_requests(self._others())
        self._resend_at = now_ms + self.config.request_timeout_ms

    def _become_leader(self, now_ms: int) -> None:
        granting = frozenset(self._votes_granted)
        self._move(Role.LEADER, self.epoch, self.local_id, self.voted_id, now_ms)
        self._election_retries = 0
        self._epoch_start_offset = self.view.end_offset
        self._replica_end = {v: -1 for v in self._others()}
        self._replica_last_fetch = {v: now_ms for v in self._others()}
        # The LeaderChange record gives the leader a record of its own epoch to commit; until it is
        # committed, the high watermark cannot move (entries of older epochs are never counted alone).
        offset = self.view.end_offset
        marker = self._leader_change(offset, self.epoch, granting) if self._leader_change else LEADER_CHANGE
        self._append_local([(marker, True, 1)])
        self._unacked_begin = set(self._others())
        self._send_begin_quorum_epoch()
        self._resend_at = now_ms + self.config.request_timeout_ms
        self._maybe_advance_leader_hw()

    def _become_resigned(self, now_ms: int) -> None:
        successors = sorted(self._others(), key=lambda v: (-self._replica_end.get(v, -1), v))
        self._move(Role.RESIGNED, self.epoch, self.leader_id, self.voted_id, now_ms)
        self._election_deadline = now_ms + self._random_election_timeout()
        for voter in successors:
            self._send(
                voter,
                EndQuorumEpochRequest(
                    ClusterId=self.config.cluster_id,
                    LeaderId=self.local_id,
                    LeaderEpoch=self.epoch,
                    PreferredSuccessors=tuple(successors),
                ),
            )

    def _maybe_transition(self, leader_id: int, epoch: int, now_ms: int) -> bool:
        """Follow what a peer says of a newer epoch or of the leader of ours (Kafka's maybeTransition)."""
        if epoch > self.epoch:
            if leader_id >= 0 and leader_id != self.local_id:
                self._become_follower(epoch, leader_id, now_ms)
            else:
                self._become_unattached(epoch, now_ms)
            return True
        if (
            epoch == self.epoch
            and leader_id >= 0
            and leader_id != self.local_id
            and self.leader_id < 0
            and self.role in (Role.UNATTACHED, Role.VOTED, Role.CANDIDATE, Role.OBSERVER)
        ):
            self._become_follower(epoch, leader_id, now_ms)
            return True
        return False

    # ---- log and high watermark ---------------------------------------------------------------

    def _append_local(self, records: list[tuple[bytes, bool, int]]) -> None:
        offset = self.view.end_offset
        entries = []
        for data, control, count in records:
            entries.append(Entry(offset, self.epoch, data, control, count))
            offset += count
        self.view.append(tuple(entries))
        self._ready.appends.extend(entries)

    def _read(self, start: int, max_count: int) -> list[Entry]:
        """Records from `start`, including the ones this step appended and the shell has not yet stored."""
        limit = self._ready.truncate_to if self._ready.truncate_to is not None else NEVER
        entries = [e for e in self.log.read(start, max_count) if e.end <= limit]
        for entry in self._ready.appends:
            if len(entries) >= max_count:
                break
            if entry.offset >= (entries[-1].end if entries else start):
                entries.append(entry)
        return entries

    def _advance_hw(self, high_watermark: int) -> None:
        if high_watermark <= self.high_watermark:
            return
        self.high_watermark = high_watermark
        if self.applied < self.view.log_start:
            return
        while self.applied < self.high_watermark:
            batch = [
                e
                for e in self._read(self.applied, self.high_watermark - self.applied)
                if e.end <= self.high_watermark
            ]
            if not batch:
                break
            self._ready.committed.extend(batch)
            self.applied = batch[-1].end

    def _maybe_advance_leader_hw(self) -> None:
        ends = sorted([self.view.end_offset, *self._replica_end.values()], reverse=True)
        candidate = ends[len(self.voters) // 2]
        if candidate > self._epoch_start_offset:
            self._advance_hw(candidate)

    # ---- Vote ---------------------------------------------------------------------------------

    def _send_vote_requests(self, voters: Sequence[int]) -> None:
        for voter in voters:
            self._send(
                voter,
                VoteRequest(
                    ClusterId=self.config.cluster_id,
                    CandidateEpoch=self.epoch,
                    CandidateId=self.local_id,
                    LastOffsetEpoch=self.view.last_epoch,
                    LastOffset=self.view.end_offset,
                ),
            )

    def _vote_response(self, destination: int, error: Errors, granted: bool = False) -> None:
        self._send(
            destination,
            VoteResponse(
                ErrorCode=error, LeaderId=self.leader_id, LeaderEpoch=self.epoch, VoteGranted=granted
            ),
        )

    def _on_vote_request(self, source: int, request: VoteRequest, now_ms: int) -> None:
        error = self._check_request(request.ClusterId, request.CandidateId)
        if error is Errors.NONE and (
            request.CandidateId != source
            or request.LastOffset < 0
            or request.LastOffsetEpoch < 0
            or request.LastOffsetEpoch >= request.CandidateEpoch
        ):
            error = Errors.INVALID_REQUEST
        if error is Errors.NONE and request.CandidateEpoch < self.epoch:
            error = Errors.FENCED_LEADER_EPOCH
        if error is not Errors.NONE:
            self._vote_response(source, error)
            return
        if request.CandidateEpoch > self.epoch:
            self._become_unattached(request.CandidateEpoch, now_ms)
        if self.role is Role.VOTED and self.voted_id == request.CandidateId:
            self._vote_response(source, Errors.NONE, granted=True)  # a retried request
            return
        log_ok = (request.LastOffsetEpoch, request.LastOffset) >= (self.view.last_epoch, self.view.end_offset)
        granted = self.role in CAN_GRANT_VOTE and self.voted_id < 0 and log_ok
        if granted:
            self._become_voted(request.CandidateId, now_ms)
        self._vote_response(source, Errors.NONE, granted)

    def _on_vote_response(self, source: int, response: VoteResponse, now_ms: int) -> None:
        if self._maybe_transition(response.LeaderId, response.LeaderEpoch, now_ms):
            return
        if (
            self.role is not Role.CANDIDATE
            or response.ErrorCode != Errors.NONE
            or response.LeaderEpoch != self.epoch
            or source not in self.voters
            or self._backing_off
        ):
            return
        if response.VoteGranted:
            self._votes_granted.add(source)
            self._votes_rejected.discard(source)
            if len(self._votes_granted) >= self.config.majority:
                self._become_leader(now_ms)
        elif source not in self._votes_granted:
            self._votes_rejected.add(source)
            if len(self.voters) - len(self._votes_rejected) < self.config.majority:
                self._start_backoff(now_ms)

    def _start_backoff(self, now_ms: int) -> None:
        self._election_retries += 1
        config = self.config
        backoff = binary_exponential_backoff(
            config.election_backoff_step_ms, config.election_backoff_max_ms, self._election_retries, self.rng
        )
        self._backing_off = True
        self._backoff_deadline = now_ms + backoff
        self._resend_at = NEVER

    # ---- BeginQuorumEpoch / EndQuorumEpoch ----------------------------------------------------

    def _send_begin_quorum_epoch(self) -> None:
        for voter in sorted(self._unacked_begin):
            self._send(
                voter,
                BeginQuorumEpochRequest(
                    ClusterId=self.config.cluster_id, LeaderId=self.local_id, LeaderEpoch=self.epoch
                ),
            )

    def _check_request(self, cluster_id: str, sender_id: int) -> Errors:
        """Checks shared by the voter-to-voter RPCs: same cluster, and both ends in the voter set."""
        if cluster_id != self.config.cluster_id:
            return Errors.INCONSISTENT_CLUSTER_ID
        if not self.is_voter or sender_id not in self.voters or sender_id == self.local_id:
            return Errors.INCONSISTENT_VOTER_SET
        return Errors.NONE

    def _check_leader_claim(self, source: int, cluster_id: str, leader_id: int, epoch: int) -> Errors:
        error = self._check_request(cluster_id, leader_id)
        if error is not Errors.NONE:
            return error
        if leader_id != source or epoch < 0:
            return Errors.INVALID_REQUEST
        if epoch < self.epoch:
            return Errors.FENCED_LEADER_EPOCH
        if epoch == self.epoch and self.leader_id >= 0 and self.leader_id != leader_id:
            return Errors.INVALID_REQUEST  # two leaders of one epoch: refuse rather than follow
        if epoch == self.epoch and self.role in (Role.LEADER, Role.RESIGNED):
            return Errors.INVALID_REQUEST
        return Errors.NONE

    def _on_begin_quorum_epoch_request(
        self, source: int, request: BeginQuorumEpochRequest, now_ms: int
    ) -> None:
        error = self._check_leader_claim(source, request.ClusterId, request.LeaderId, request.LeaderEpoch)
        if error is Errors.NONE and not (self.role is Role.FOLLOWER and self.leader_id == request.LeaderId):
            self._become_follower(request.LeaderEpoch, request.LeaderId, now_ms)
        self._send(
            source, BeginQuorumEpochResponse(ErrorCode=error, LeaderId=self.leader_id, LeaderEpoch=self.epoch)
        )

    def _on_begin_quorum_epoch_response(
        self, source: int, response: BeginQuorumEpochResponse, now_ms: int
    ) -> None:
        if self._maybe_transition(response.LeaderId, response.LeaderEpoch, now_ms):
            return
        if (
            self.role is Role.LEADER
            and response.LeaderEpoch == self.epoch
            and response.ErrorCode == Errors.NONE
        ):
            self._unacked_begin.discard(source)

    def _on_end_quorum_epoch_request(self, source: int, request: EndQuorumEpochRequest, now_ms: int) -> None:
        error = self._check_leader_claim(source, request.ClusterId, request.LeaderId, request.LeaderEpoch)
        if error is Errors.NONE:
            if request.LeaderEpoch > self.epoch:
                self._become_unattached(request.LeaderEpoch, now_ms)
            successors = request.PreferredSuccessors
            if self.local_id in successors:
                position = successors.index(self.local_id)
                wait = strict_exponential_backoff(
                    self.config.election_backoff_max_ms, position, len(successors)
                )
            else:
                wait = self._random_election_timeout()
            self._election_deadline = min(self._election_deadline, now_ms + wait)
        self._send(
            source, EndQuorumEpochResponse(ErrorCode=error, LeaderId=self.leader_id, LeaderEpoch=self.epoch)
        )

    def _on_end_quorum_epoch_response(
        self, source: int, response: EndQuorumEpochResponse, now_ms: int
    ) -> None:
        self._maybe_transition(response.LeaderId, response.LeaderEpoch, now_ms)

    # ---- Fetch (leader side) ------------------------------------------------------------------

    def _check_fetch(self, cluster_id: str, replica_id: int, source: int, epoch: int) -> Errors:
        """KafkaRaftClient's validateLeaderOnlyRequest, in its order."""
        if cluster_id != self.config.cluster_id:
            return Errors.INCONSISTENT_CLUSTER_ID
        if replica_id != source or replica_id == self.local_id or epoch < 0:
            return Errors.INVALID_REQUEST
        if epoch < self.epoch:
            return Errors.FENCED_LEADER_EPOCH
        if epoch > self.epoch:
            return Errors.UNKNOWN_LEADER_EPOCH
        if self.role is not Role.LEADER:
            return Errors.NOT_LEADER_OR_FOLLOWER
        return Errors.NONE

    def _on_fetch_request(self, source: int, request: FetchRequest, now_ms: int) -> None:
        error = self._check_fetch(request.ClusterId, request.ReplicaId, source, request.CurrentLeaderEpoch)
        if error is Errors.NONE and (request.FetchOffset < 0 or request.LastFetchedEpoch < 0):
            error = Errors.INVALID_REQUEST
        reply = dict(
            LeaderId=self.leader_id,
            LeaderEpoch=self.epoch,
            FetchOffset=request.FetchOffset,
            LastFetchedEpoch=request.LastFetchedEpoch,
        )
        if error is not Errors.NONE:
            self._send(source, FetchResponse(ErrorCode=error, **reply))
            return
        if source in self.voters:
            self._replica_last_fetch[source] = now_ms
            self._unacked_begin.discard(source)
        mismatch = self.view.validate_offset_and_epoch(request.FetchOffset, request.LastFetchedEpoch)
        if mismatch is not None:
            answer = FetchResponse(
                ErrorCode=Errors.NONE,
                HighWatermark=self.high_watermark,
                SnapshotId=mismatch if isinstance(mismatch, SnapshotId) else None,
                DivergingEpoch=mismatch if isinstance(mismatch, DivergingEpoch) else None,
                **reply,
            )
            self._send(source, answer)
            return
        offset = request.FetchOffset
        if source in self.voters:
            # The fetch offset is the follower's end offset, and log matching holds up to it.
            self._replica_end[source] = max(self._replica_end.get(source, -1), offset)
            self._maybe_advance_leader_hw()
        records = tuple(self._read(offset, self.config.max_fetch_records))
        self._send(
            source,
            FetchResponse(ErrorCode=Errors.NONE, HighWatermark=self.high_watermark, Records=records, **reply),
        )

    def _on_fetch_snapshot_request(self, source: int, request: FetchSnapshotRequest, now_ms: int) -> None:
        error = self._check_fetch(request.ClusterId, request.ReplicaId, source, request.CurrentLeaderEpoch)
        snapshot = self.log.latest_snapshot()
        if error is Errors.NONE and (snapshot is None or snapshot.snapshot_id != request.SnapshotId):
            error = Errors.SNAPSHOT_NOT_FOUND
        if error is Errors.NONE and request.Position != 0:
            error = Errors.POSITION_OUT_OF_RANGE
        if error is not Errors.NONE or snapshot is None:
            self._send(
                source,
                FetchSnapshotResponse(
                    ErrorCode=error,
                    LeaderId=self.leader_id,
                    LeaderEpoch=self.epoch,
                    SnapshotId=request.SnapshotId,
                ),
            )
            return
        if source in self.voters:
            self._replica_last_fetch[source] = now_ms
        self._send(
            source,
            FetchSnapshotResponse(
                ErrorCode=Errors.NONE,
                LeaderId=self.leader_id,
                LeaderEpoch=self.epoch,
                SnapshotId=snapshot.snapshot_id,
                Size=len(snapshot.state),
                UnalignedRecords=snapshot.state,
            ),
        )

    # ---- Fetch (follower and observer side) ---------------------------------------------------

    def _fetching_from(self, source: int, epoch: int) -> bool:
        return (
            self.role in (Role.FOLLOWER, Role.OBSERVER) and self.leader_id == source and epoch == self.epoch
        )

    def _send_fetch(self, destination: int, now_ms: int) -> None:
        self._send(
            destination,
            FetchRequest(
                ClusterId=self.config.cluster_id,
                ReplicaId=self.local_id,
                CurrentLeaderEpoch=self.epoch,
                FetchOffset=self.view.end_offset,
                LastFetchedEpoch=self.view.last_epoch,
            ),
        )
        # No reply within the request timeout (lost, or the leader is gone): ask again.
        self._next_fetch = now_ms + self.config.request_timeout_ms

    def _on_fetch_response(self, source: int, response: FetchResponse, now_ms: int) -> None:
        if response.ErrorCode != Errors.NONE:
            if not self._maybe_transition(response.LeaderId, response.LeaderEpoch, now_ms):
                self._next_fetch = min(self._next_fetch, now_ms + self.config.retry_backoff_ms)
            return
        view = self.view
        if (
            not self._fetching_from(source, response.LeaderEpoch)
            or response.FetchOffset != view.end_offset
            or response.LastFetchedEpoch != view.last_epoch
        ):
            return  # late or duplicated: it answers a fetch from a log end we no longer have
        self._fetch_deadline = now_ms + self.config.fetch_timeout_ms
        self._next_fetch = now_ms
        if response.SnapshotId is not None:
            self._pending_snapshot = response.SnapshotId
            self._send(
                source,
                FetchSnapshotRequest(
                    ClusterId=self.config.cluster_id,
                    ReplicaId=self.local_id,
                    CurrentLeaderEpoch=self.epoch,
                    SnapshotId=response.SnapshotId,
                ),
            )
            self._next_fetch = now_ms + self.config.request_timeout_ms
            return
        if response.DivergingEpoch is not None:
            self._truncate_on_divergence(response.DivergingEpoch)
            self._fetch_again_now(source, now_ms)
            return
        records = response.Records
        if records and (
            records[0].offset != view.end_offset
            or any(r.offset != prev.end for prev, r in itertools.pairwise(records))
            or any(r.epoch > response.LeaderEpoch or r.count < 1 for r in records)
        ):
            return
        if records:
            view.append(records)
            self._ready.appends.extend(records)
        else:
            self._next_fetch = now_ms + self.config.fetch_idle_ms
        self._advance_hw(min(response.HighWatermark, view.end_offset))
        if records:
            self._fetch_again_now(source, now_ms)

    def _fetch_again_now(self, leader: int, now_ms: int) -> None:
        # After the log moved, the next Fetch leaves with this Ready (once its appends are on disk),
        # not at the next tick: on a voter it carries the new end offset, which is what lets the
        # leader commit. An empty answer still waits for the tick (a leader shutting down answers
        # at once, and must not be asked again in a tight loop).
        self._send_fetch(leader, now_ms)

    def _truncate_on_divergence(self, diverging: DivergingEpoch) -> None:
        target = self.view.truncation_offset(diverging)
        if target < self.view.end_offset:
            self.view.truncate_to(target)
            self._ready.truncate_to = target

    def _on_fetch_snapshot_response(self, source: int, response: FetchSnapshotResponse, now_ms: int) -> None:
        if response.ErrorCode != Errors.NONE:
            if not self._maybe_transition(response.LeaderId, response.LeaderEpoch, now_ms):
                self._pending_snapshot = None
                self._next_fetch = min(self._next_fetch, now_ms + self.config.retry_backoff_ms)
            return
        snapshot_id = response.SnapshotId
        if (
            not self._fetching_from(source, response.LeaderEpoch)
            or snapshot_id != self._pending_snapshot
            or response.Position != 0
            or response.Size != len(response.UnalignedRecords)
            or snapshot_id.EndOffset <= self.high_watermark
        ):
            return
        snapshot = Snapshot(snapshot_id, response.UnalignedRecords)
        self._pending_snapshot = None
        self.view.install_snapshot(snapshot_id)
        self._ready.install_snapshot = snapshot
        self._ready.apply_snapshot = snapshot
        self.high_watermark = self.applied = snapshot_id.EndOffset
        self._fetch_deadline = now_ms + self.config.fetch_timeout_ms
        self._next_fetch = now_ms
        self._fetch_again_now(source, now_ms)

    # ---- ticks, one per role ------------------------------------------------------------------

    def _tick_leader(self, now_ms: int) -> None:
        live = 1 + sum(
            1 for t in self._replica_last_fetch.values() if now_ms - t < self.config.fetch_timeout_ms
        )
        if live < self.config.majority:
            self._become_resigned(now_ms)  # check-quorum: a partitioned leader steps down
            return
        if self._unacked_begin and now_ms >= self._resend_at:
            self._send_begin_quorum_epoch()
            self._resend_at = now_ms + self.config.request_timeout_ms

    def _tick_candidate(self, now_ms: int) -> None:
        if self._backing_off:
            if now_ms >= self._backoff_deadline:
                self._become_candidate(now_ms)
            return
        if now_ms >= self._election_deadline:
            self._start_backoff(now_ms)
            return
        if now_ms >= self._resend_at:
            self._send_vote_requests(
                [v for v in self._others() if v not in self._votes_granted | self._votes_rejected]
            )
            self._resend_at = now_ms + self.config.request_timeout_ms

    def _tick_waiting(self, now_ms: int) -> None:
        """Unattached, voted and resigned voters run for election when their timer fires."""
        if now_ms >= self._election_deadline:
            self._become_candidate(now_ms)

    def _tick_follower(self, now_ms: int) -> None:
        if now_ms >= self._fetch_deadline or now_ms >= self._election_deadline:
            self._become_candidate(now_ms)
            return
        if now_ms >= self._next_fetch:
            self._send_fetch(self.leader_id, now_ms)

    def _tick_observer(self, now_ms: int) -> None:
        if self.leader_id >= 0 and now_ms >= self._fetch_deadline:
            self._move(Role.OBSERVER, self.epoch, -1, -1, now_ms)  # the leader went quiet: look again
        if now_ms < self._next_fetch:
            return
        if self.leader_id >= 0:
            self._send_fetch(self.leader_id, now_ms)
        else:
            # Any voter's error reply names the current leader and epoch.
            self._send_fetch(self.rng.choice(sorted(self.voters)), now_ms)
            self._next_fetch = now_ms + self.config.retry_backoff_ms * 5


# Each handler takes the message type it is keyed by, hence Any.
_HANDLERS: dict[type, Callable[[RaftCore, int, Any, int], None]] = {
    VoteRequest: RaftCore._on_vote_request,
    VoteResponse: RaftCore._on_vote_response,
    BeginQuorumEpochRequest: RaftCore._on_begin_quorum_epoch_request,
    BeginQuorumEpochResponse: RaftCore._on_begin_quorum_epoch_response,
    EndQuorumEpochRequest: RaftCore._on_end_quorum_epoch_request,
    EndQuorumEpochResponse: RaftCore._on_end_quorum_epoch_response,
    FetchRequest: RaftCore._on_fetch_request,
    FetchResponse: RaftCore._on_fetch_response,
    FetchSnapshotRequest: RaftCore._on_fetch_snapshot_request,
    FetchSnapshotResponse: RaftCore._on_fetch_snapshot_response,
}

_TICKS: dict[Role, Callable[[RaftCore, int], None]] = {
    Role.LEADER: RaftCore._tick_leader,
    Role.CANDIDATE: RaftCore._tick_candidate,
    Role.UNATTACHED: RaftCore._tick_waiting,
    Role.VOTED: RaftCore._tick_waiting,
    Role.RESIGNED: RaftCore._tick_waiting,
    Role.FOLLOWER: RaftCore._tick_follower,
    Role.OBSERVER: RaftCore._tick_observer,
}
