"""The classic group coordinator's decisions, without I/O (Kafka's GroupCoordinator for the classic protocol).

Every operation takes the clock as `now` and returns `Effects`: answers to send and records to
append to `__consumer_offsets` (each write names what to do once it is acknowledged or failed, via
`write_done`). A JoinGroup or SyncGroup that must wait for the rest of the group is parked under the
caller's ticket and answered by a later operation or by `tick`. The shell (broker.groups.service)
owns the tickets, the appends and the timer.

A group lives in the `__consumer_offsets` partition `abs(hash(group id)) % partitions` (Java's
String.hashCode, as Kafka computes it); this broker coordinates the groups of the partitions it
leads, once it has read them back (`load`, `loaded`), and forgets them when it stops leading.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from broker.groups.group import ClassicGroup, CommittedOffset, GroupState, Member
from protocol.coordinator_records import (
    GroupMetadataValue,
    GroupRecord,
    OffsetCommitValue,
    OffsetRecord,
    encode_group_metadata,
    encode_offset_commit,
)
from protocol.errors import Errors
from protocol.rpc.describe_groups import DescribeGroupsResponse
from protocol.rpc.heartbeat import HeartbeatRequest, HeartbeatResponse
from protocol.rpc.join_group import JoinGroupRequest, JoinGroupResponse
from protocol.rpc.leave_group import LeaveGroupRequest, LeaveGroupResponse
from protocol.rpc.list_groups import ListGroupsResponse
from protocol.rpc.message import RpcMessage
from protocol.rpc.offset_commit import OffsetCommitRequest, OffsetCommitResponse
from protocol.rpc.sync_group import SyncGroupRequest, SyncGroupResponse

OFFSETS_TOPIC = "__consumer_offsets"
UNKNOWN_OFFSET = -1


def java_string_hash(s: str) -> int:
    h = 0
    for unit in s.encode("utf-16-be").hex(" ", 2).split():
        h = (31 * h + int(unit, 16)) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for(group_id: str, partitions: int) -> int:
    """Kafka's GroupMetadataManager.partitionFor: Utils.abs(groupId.hashCode) % partitions."""
    h = java_string_hash(group_id)
    return (0 if h == -(2**31) else abs(h)) % partitions


@dataclass(frozen=True)
class GroupConfig:
    """Kafka's group coordinator settings, by their config names."""

    offsets_topic_partitions: int = 50  # offsets.topic.num.partitions
    min_session_timeout_ms: int = 6000  # group.min.session.timeout.ms
    max_session_timeout_ms: int = 1800000  # group.max.session.timeout.ms
    initial_rebalance_delay_ms: int = 3000  # group.initial.rebalance.delay.ms
    max_metadata_bytes: int = 4096  # offset.metadata.max.bytes


@dataclass(frozen=True)
class Reply:
    ticket: int
    response: RpcMessage


@dataclass(frozen=True)
class Write:
    """Records for one partition of __consumer_offsets; `write_done(id, error, now)` once appended."""

    id: int
    partition: int
    records: list[tuple[bytes, bytes]]


@dataclass
class Effects:
    replies: list[Reply] = field(default_factory=list)
    writes: list[Write] = field(default_factory=list)

    def add(self, other: Effects) -> Effects:
        self.replies += other.replies
        self.writes += other.writes
        return self


class GroupCoordinator:
    def __init__(self, config: GroupConfig, new_member_id: Callable[[str], str]) -> None:
        self.config = config
        self.new_member_id = new_member_id
        self.groups: dict[str, ClassicGroup] = {}
        self.loading: set[int] = set()
        self.loaded: set[int] = set()
        self._pending_writes: dict[int, Callable[[Errors, int], Effects]] = {}
        self._next_write = 0

    # ---- which groups are ours ------------------------------------------------------------------

    def partition_of(self, group_id: str) -> int:
        return partition_for(group_id, self.config.offsets_topic_partitions)

    def owner_error(self, group_id: str) -> Errors:
        p = self.partition_of(group_id)
        if p in self.loading:
            return Errors.COORDINATOR_LOAD_IN_PROGRESS
        if p not in self.loaded:
            return Errors.NOT_COORDINATOR
        return Errors.NONE

    def group_error(self, group_id: str) -> Errors:
        """INVALID_GROUP_ID for an empty id, else whether this broker coordinates the group now."""
        return Errors.INVALID_GROUP_ID if not group_id else self.owner_error(group_id)

    def begin_load(self, partition: int) -> None:
        self.loading.add(partition)

    def load(self, partition: int, records: Iterable[OffsetRecord | GroupRecord], now: int) -> None:
        """Replay what a partition holds, oldest first (a later record of the same key wins)."""
        for r in records:
            if isinstance(r, OffsetRecord):
                group = self.groups.setdefault(r.group, ClassicGroup(r.group))
                if r.value is None:
                    group.offsets.pop((r.topic, r.partition), None)
                else:
                    v = r.value
                    group.offsets[(r.topic, r.partition)] = CommittedOffset(
                        v.Offset, v.LeaderEpoch, v.Metadata, v.CommitTimestamp
                    )
            elif r.value is None:
                self.groups.pop(r.group, None)
            else:
                self._restore(self.groups.setdefault(r.group, ClassicGroup(r.group)), r.value, now)

    def loaded_partition(self, partition: int) -> None:
        self.loading.discard(partition)
        self.loaded.add(partition)

    def unload(self, partition: int) -> Effects:
        """No longer the coordinator of `partition`'s groups: waiting callers learn NOT_COORDINATOR."""
        self.loading.discard(partition)
        self.loaded.discard(partition)
        out = Effects()
        for gid in [g for g in self.groups if self.partition_of(g) == partition]:
            group = self.groups.pop(gid)
            for m in group.members.values():
                if m.join is not None:
                    out.replies.append(Reply(m.join[0], self._join_error(Errors.NOT_COORDINATOR, m.join[1])))
                if m.sync is not None:
                    out.replies.append(
                        Reply(m.sync[0], SyncGroupResponse(ErrorCode=int(Errors.NOT_COORDINATOR)))
                    )
        return out

    def _restore(self, group: ClassicGroup, v: object, now: int) -> None:
        assert isinstance(v, GroupMetadataValue)
        group.protocol_type = v.ProtocolType or None
        group.generation = v.Generation
        group.protocol = v.Protocol
        group.leader = v.Leader
        group.members = {}
        for m in v.Members:
            member = Member(
                m.MemberId,
                m.GroupInstanceId,
                m.ClientId,
                m.ClientHost,
                m.RebalanceTimeout or m.SessionTimeout,
                m.SessionTimeout,
                v.ProtocolType,
                [(v.Protocol or "", m.Subscription)],
                m.Assignment,
                heartbeat_deadline=now + m.SessionTimeout,
            )
            group.members[member.member_id] = member
        group.transition(GroupState.STABLE if group.members else GroupState.EMPTY, now)

    # ---- JoinGroup ------------------------------------------------------------------------------

    def _join_error(self, code: Errors, version: int, member_id: str = "") -> JoinGroupResponse:
        return JoinGroupResponse(
            ErrorCode=int(code), MemberId=member_id, ProtocolName="" if version < 7 else None
        )

    def join(
        self, ticket: int, req: JoinGroupRequest, version: int, client_id: str, client_host: str, now: int
    ) -> Effects:
        out = Effects()

        def fail(code: Errors, member_id: str = "") -> Effects:
            out.replies.append(Reply(ticket, self._join_error(code, version, member_id)))
            return out

        gid = req.GroupId
        if (err := self.group_error(gid)) is not Errors.NONE:
            return fail(err)
        cfg = self.config
        if not cfg.min_session_timeout_ms <= req.SessionTimeoutMs <= cfg.max_session_timeout_ms:
            return fail(Errors.INVALID_SESSION_TIMEOUT)
        protocols = [(p.Name, p.Metadata) for p in req.Protocols]
        group = self.groups.get(gid)
        if group is None:
            if req.MemberId:
                return fail(Errors.UNKNOWN_MEMBER_ID, req.MemberId)
            group = self.groups[gid] = ClassicGroup(gid, state_timestamp=now)
        if group.state is GroupState.DEAD:
            return fail(Errors.COORDINATOR_NOT_AVAILABLE)
        if not group.supports(req.ProtocolType, [n for n, _ in protocols]):
            return fail(Errors.INCONSISTENT_GROUP_PROTOCOL)
        rebalance_timeout = (
            req.RebalanceTimeoutMs if version >= 1 and req.RebalanceTimeoutMs > 0 else req.SessionTimeoutMs
        )

        member_id = req.MemberId
        if not member_id:
            member_id = self.new_member_id(client_id)
            if version >= 4:
                # KIP-394: the member must come back with this id, so a lost answer cannot leave a ghost
                group.pending[member_id] = now + req.SessionTimeoutMs
                return fail(Errors.MEMBER_ID_REQUIRED, member_id)
        new = member_id not in group.members
        if new:
            if member_id not in group.pending and req.MemberId:
                return fail(Errors.UNKNOWN_MEMBER_ID, member_id)
            group.pending.pop(member_id, None)
            member = Member(
                member_id,
                req.GroupInstanceId,
                client_id,
                client_host,
                rebalance_timeout,
                req.SessionTimeoutMs,
                req.ProtocolType,
                protocols,
            )
            if not group.members:
                group.protocol_type = req.ProtocolType
            group.members[member_id] = member
            if group.leader is None:
                group.leader = member_id
        else:
            member = group.members[member_id]
            if member.join is not None:
                # a retried join replaces the one already waiting
                out.replies.append(
                    Reply(member.join[0], self._join_error(Errors.REBALANCE_IN_PROGRESS, member.join[1]))
                )
            changed = not member.same_protocols(protocols)
            member.protocols = protocols
            member.rebalance_timeout_ms = rebalance_timeout
            member.session_timeout_ms = req.SessionTimeoutMs
            if (
                not changed
                and group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE)
                and (group.state is GroupState.COMPLETING_REBALANCE or member_id != group.leader)
            ):
                # nothing to rebalance for: the current generation, again
                member.heartbeat_deadline = now + member.session_timeout_ms
                out.replies.append(Reply(ticket, self._join_answer(group, member, version)))
                return out
        member.join = (ticket, version)
        if group.state is not GroupState.PREPARING_REBALANCE:
            out.add(self._prepare_rebalance(group, now))
        return out.add(self._check_join(group, now))

    def _prepare_rebalance(self, group: ClassicGroup, now: int) -> Effects:
        out = Effects()
        if group.state is GroupState.COMPLETING_REBALANCE:
            out.add(self._fail_syncs(group, Errors.REBALANCE_IN_PROGRESS))
        initial = group.state is GroupState.EMPTY
        delay = self.config.initial_rebalance_delay_ms if initial else group.rebalance_timeout_ms()
        group.transition(GroupState.PREPARING_REBALANCE, now)
        group.rebalance_deadline = now + delay
        group.initial_delay = initial and delay > 0
        return out

    def _check_join(self, group: ClassicGroup, now: int) -> Effects:
        if group.state is not GroupState.PREPARING_REBALANCE:
            return Effects()
        deadline = group.rebalance_deadline if group.rebalance_deadline is not None else now
        if now >= deadline or (group.all_rejoined() and not group.initial_delay):
            return self._complete_join(group, now)
        return Effects()

    def _complete_join(self, group: ClassicGroup, now: int) -> Effects:
        out = Effects()
        for mid in [mid for mid, m in group.members.items() if m.join is None]:
            del group.members[mid]
        group.rebalance_deadline = None
        group.generation += 1
        if not group.members:
            group.protocol = None
            group.leader = None
            group.transition(GroupState.EMPTY, now)
            out.add(self._store_group(group, now, lambda _err, _now: Effects()))
            return out
        group.protocol = group.select_protocol()
        if group.leader not in group.members:
            group.leader = next(iter(group.members))
        group.transition(GroupState.COMPLETING_REBALANCE, now)
        for m in group.members.values():
            assert m.join is not None
            ticket, version = m.join
            m.join = None
            m.assignment = b""
            m.heartbeat_deadline = now + m.session_timeout_ms
            out.replies.append(Reply(ticket, self._join_answer(group, m, version)))
        return out

    def _join_answer(self, group: ClassicGroup, m: Member, version: int) -> JoinGroupResponse:
        R = JoinGroupResponse
        members = []
        if m.member_id == group.leader:
            members = [
                R.JoinGroupResponseMember(
                    MemberId=x.member_id,
                    GroupInstanceId=x.group_instance_id if version >= 5 else None,
                    Metadata=x.metadata(group.protocol or ""),
                )
                for x in group.members.values()
            ]
        return R(
            ErrorCode=0,
            GenerationId=group.generation,
            ProtocolType=group.protocol_type if version >= 7 else None,
            ProtocolName=group.protocol,
            Leader=group.leader or "",
            MemberId=m.member_id,
            Members=members,
        )

    # ---- SyncGroup ------------------------------------------------------------------------------

    def sync(self, ticket: int, req: SyncGroupRequest, version: int, now: int) -> Effects:
        out = Effects()

        def answer(code: Errors, assignment: bytes = b"", group: ClassicGroup | None = None) -> Effects:
            out.replies.append(Reply(ticket, self._sync_answer(code, assignment, group, version)))
            return out

        if (err := self.owner_error(req.GroupId)) is not Errors.NONE:
            return answer(err)
        group = self.groups.get(req.GroupId)
        if group is None or req.MemberId not in group.members or group.state is GroupState.EMPTY:
            return answer(Errors.UNKNOWN_MEMBER_ID)
        if req.GenerationId != group.generation:
            return answer(Errors.ILLEGAL_GENERATION)
        if version >= 5 and (
            (req.ProtocolType is not None and req.ProtocolType != group.protocol_type)
            or (req.ProtocolName is not None and req.ProtocolName != group.protocol)
        ):
            return answer(Errors.INCONSISTENT_GROUP_PROTOCOL)
        member = group.members[req.MemberId]
        member.heartbeat_deadline = now + member.session_timeout_ms
        if group.state is GroupState.PREPARING_REBALANCE:
            return answer(Errors.REBALANCE_IN_PROGRESS)
        if group.state is GroupState.STABLE:
            return answer(Errors.NONE, member.assignment, group)
        member.sync = (ticket, version)
        if req.MemberId != group.leader:
            return out
        assignments = {a.MemberId: a.Assignment for a in req.Assignments}
        for m in group.members.values():
            m.assignment = assignments.get(m.member_id, b"")
        generation = group.generation

        def stored(err: Errors, now: int) -> Effects:
            if group.generation != generation or group.state is not GroupState.COMPLETING_REBALANCE:
                return Effects()
            if err is not Errors.NONE:
                for m in group.members.values():
                    m.assignment = b""
                done = self._fail_syncs(group, err)
                return done.add(self._prepare_rebalance(group, now))
            group.transition(GroupState.STABLE, now)
            done = Effects()
            for m in group.members.values():
                if m.sync is not None:
                    t, v = m.sync
                    m.sync = None
                    done.replies.append(Reply(t, self._sync_answer(Errors.NONE, m.assignment, group, v)))
            return done

        return out.add(self._store_group(group, now, stored))

    def _sync_answer(
        self, code: Errors, assignment: bytes, group: ClassicGroup | None, version: int
    ) -> SyncGroupResponse:
        with_protocol = version >= 5 and group is not None and code is Errors.NONE
        return SyncGroupResponse(
            ErrorCode=int(code),
            ProtocolType=group.protocol_type if with_protocol and group else None,
            ProtocolName=group.protocol if with_protocol and group else None,
            Assignment=assignment,
        )

    def _fail_syncs(self, group: ClassicGroup, code: Errors) -> Effects:
        out = Effects()
        for m in group.members.values():
            if m.sync is not None:
                t, v = m.sync
                m.sync = None
                out.replies.append(Reply(t, self._sync_answer(code, b"", None, v)))
        return out

    # ---- Heartbeat and LeaveGroup ---------------------------------------------------------------

    def heartbeat(self, req: HeartbeatRequest, now: int) -> HeartbeatResponse:
        def answer(code: Errors) -> HeartbeatResponse:
            return HeartbeatResponse(ErrorCode=int(code))

        if (err := self.owner_error(req.GroupId)) is not Errors.NONE:
            return answer(err)
        group = self.groups.get(req.GroupId)
        if group is None or group.state is GroupState.EMPTY or req.MemberId not in group.members:
            return answer(Errors.UNKNOWN_MEMBER_ID)
        if req.GenerationId != group.generation:
            return answer(Errors.ILLEGAL_GENERATION)
        member = group.members[req.MemberId]
        member.heartbeat_deadline = now + member.session_timeout_ms
        if group.state is GroupState.PREPARING_REBALANCE:
            return answer(Errors.REBALANCE_IN_PROGRESS)
        return answer(Errors.NONE)

    def leave(self, req: LeaveGroupRequest, version: int, now: int) -> tuple[LeaveGroupResponse, Effects]:
        R = LeaveGroupResponse
        leaving = [req.MemberId] if version < 3 else [m.MemberId for m in req.Members]
        out = Effects()
        if (err := self.owner_error(req.GroupId)) is not Errors.NONE:
            return R(ErrorCode=int(err)), out
        group = self.groups.get(req.GroupId)
        results = []
        for mid in leaving:
            if group is None or mid not in group.members:
                results.append((mid, Errors.UNKNOWN_MEMBER_ID))
                continue
            member = group.members.pop(mid)
            if member.join is not None:
                out.replies.append(
                    Reply(member.join[0], self._join_error(Errors.UNKNOWN_MEMBER_ID, member.join[1]))
                )
            if member.sync is not None:
                out.replies.append(
                    Reply(member.sync[0], SyncGroupResponse(ErrorCode=int(Errors.UNKNOWN_MEMBER_ID)))
                )
            results.append((mid, Errors.NONE))
        if group is not None and any(code is Errors.NONE for _, code in results):
            out.add(self._member_gone(group, now))
        if version < 3:
            return R(ErrorCode=int(results[0][1])), out
        members = [
            R.MemberResponse(MemberId=mid, GroupInstanceId=None, ErrorCode=int(code)) for mid, code in results
        ]
        return R(ErrorCode=0, Members=members), out

    def _member_gone(self, group: ClassicGroup, now: int) -> Effects:
        if group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            return self._prepare_rebalance(group, now).add(self._check_join(group, now))
        if group.state is GroupState.PREPARING_REBALANCE:
            return self._check_join(group, now)
        return Effects()

    # ---- the timer ------------------------------------------------------------------------------

    def tick(self, now: int) -> Effects:
        """Rebalances whose time is up, members whose session expired, member ids never claimed."""
        out = Effects()
        for gid in list(self.groups):
            group = self.groups[gid]
            for mid in [mid for mid, d in group.pending.items() if d <= now]:
                del group.pending[mid]
            for mid, m in list(group.members.items()):
                waiting = m.join is not None or m.sync is not None
                if m.heartbeat_deadline <= now and not waiting and group.state is not GroupState.EMPTY:
                    del group.members[mid]
                    out.add(self._member_gone(group, now))
            out.add(self._check_join(group, now))
        return out

    def next_deadline(self) -> int | None:
        deadlines = [g.rebalance_deadline for g in self.groups.values() if g.rebalance_deadline is not None]
        for g in self.groups.values():
            deadlines += [m.heartbeat_deadline for m in g.members.values()]
            deadlines += list(g.pending.values())
        return min(deadlines, default=None)

    # ---- offsets --------------------------------------------------------------------------------

    def commit(self, ticket: int, req: OffsetCommitRequest, version: int, now: int) -> Effects:
        R = OffsetCommitResponse
        out = Effects()
        asked = [(t.Name, p.PartitionIndex) for t in req.Topics for p in t.Partitions]

        def answer(codes: dict[tuple[str, int], Errors]) -> RpcMessage:
            topics: dict[str, list[R.OffsetCommitResponsePartition]] = {}
            for name, index in asked:
                topics.setdefault(name, []).append(
                    R.OffsetCommitResponsePartition(PartitionIndex=index, ErrorCode=int(codes[(name, index)]))
                )
            return R(Topics=[R.OffsetCommitResponseTopic(Name=n, Partitions=ps) for n, ps in topics.items()])

        def fail(code: Errors) -> Effects:
            out.replies.append(Reply(ticket, answer(dict.fromkeys(asked, code))))
            return out

        gid = req.GroupId
        if (err := self.group_error(gid)) is not Errors.NONE:
            return fail(err)
        generation = req.GenerationIdOrMemberEpoch
        group = self.groups.get(gid)
        if group is None:
            if generation >= 0:
                return fail(Errors.UNKNOWN_MEMBER_ID)
            group = self.groups[gid] = ClassicGroup(gid, state_timestamp=now)
        elif not (generation < 0 and group.state is GroupState.EMPTY):
            if group.state is GroupState.COMPLETING_REBALANCE:
                return fail(Errors.REBALANCE_IN_PROGRESS)
            if req.MemberId not in group.members:
                return fail(Errors.UNKNOWN_MEMBER_ID)
            if generation != group.generation:
                return fail(Errors.ILLEGAL_GENERATION)
            member = group.members[req.MemberId]
            member.heartbeat_deadline = now + member.session_timeout_ms
        codes: dict[tuple[str, int], Errors] = {}
        commits: dict[tuple[str, int], CommittedOffset] = {}
        for t in req.Topics:
            for p in t.Partitions:
                metadata = p.CommittedMetadata or ""
                if len(metadata.encode()) > self.config.max_metadata_bytes:
                    codes[(t.Name, p.PartitionIndex)] = Errors.OFFSET_METADATA_TOO_LARGE
                    continue
                epoch = p.CommittedLeaderEpoch if version >= 6 else -1
                commits[(t.Name, p.PartitionIndex)] = CommittedOffset(p.CommittedOffset, epoch, metadata, now)
        if not commits:
            out.replies.append(Reply(ticket, answer(codes)))
            return out
        records = [
            encode_offset_commit(
                gid,
                topic,
                index,
                OffsetCommitValue(
                    Offset=c.offset,
                    LeaderEpoch=c.leader_epoch,
                    Metadata=c.metadata,
                    CommitTimestamp=c.commit_timestamp,
                ),
            )
            for (topic, index), c in commits.items()
        ]

        def stored(err: Errors, _now: int) -> Effects:
            code = _commit_error(err)
            if code is Errors.NONE and self.groups.get(gid) is group:
                group.offsets.update(commits)
            return Effects([Reply(ticket, answer({**codes, **dict.fromkeys(commits, code)}))])

        return out.add(self._write(self.partition_of(gid), records, stored))

    def fetch_offsets(
        self, group_id: str, topics: list[tuple[str, list[int]]] | None
    ) -> tuple[Errors, list[tuple[str, list[tuple[int, CommittedOffset | None]]]]]:
        """Committed offsets of `topics` (all the group has when None), or an error for the group."""
        if (err := self.owner_error(group_id)) is not Errors.NONE:
            return err, []
        group = self.groups.get(group_id)
        offsets = group.offsets if group is not None else {}
        if topics is None:
            by_topic: dict[str, list[int]] = {}
            for name, index in sorted(offsets):
                by_topic.setdefault(name, []).append(index)
            topics = list(by_topic.items())
        return Errors.NONE, [
            (name, [(i, offsets.get((name, i))) for i in indexes]) for name, indexes in topics
        ]

    # ---- looking at groups ----------------------------------------------------------------------

    def list_groups(self, states: list[str]) -> list[ListGroupsResponse.ListedGroup]:
        wanted = {s.lower() for s in states}
        return [
            ListGroupsResponse.ListedGroup(
                GroupId=g.group_id,
                ProtocolType=g.protocol_type or "",
                GroupState=str(g.state),
                GroupType="classic",
            )
            for g in self.groups.values()
            if self.owner_error(g.group_id) is Errors.NONE and (not wanted or str(g.state).lower() in wanted)
        ]

    def describe(self, group_id: str, version: int) -> DescribeGroupsResponse.DescribedGroup:
        D = DescribeGroupsResponse
        if (err := self.owner_error(group_id)) is not Errors.NONE:
            return D.DescribedGroup(ErrorCode=int(err), GroupId=group_id)
        group = self.groups.get(group_id)
        if group is None:
            return D.DescribedGroup(GroupId=group_id, GroupState=str(GroupState.DEAD))
        stable = group.state is GroupState.STABLE
        return D.DescribedGroup(
            GroupId=group_id,
            GroupState=str(group.state),
            ProtocolType=group.protocol_type or "",
            ProtocolData=(group.protocol or "") if stable else "",
            Members=[
                D.DescribedGroupMember(
                    MemberId=m.member_id,
                    GroupInstanceId=m.group_instance_id if version >= 4 else None,
                    ClientId=m.client_id,
                    ClientHost=m.client_host,
                    MemberMetadata=m.metadata(group.protocol or "") if stable else b"",
                    MemberAssignment=m.assignment if stable else b"",
                )
                for m in group.members.values()
            ],
        )

    # ---- writes ---------------------------------------------------------------------------------

    def _store_group(self, group: ClassicGroup, now: int, then: Callable[[Errors, int], Effects]) -> Effects:
        value = GroupMetadataValue(
            ProtocolType=group.protocol_type or "",
            Generation=group.generation,
            Protocol=group.protocol,
            Leader=group.leader,
            CurrentStateTimestamp=now,
            Members=[
                GroupMetadataValue.MemberMetadata(
                    MemberId=m.member_id,
                    GroupInstanceId=m.group_instance_id,
                    ClientId=m.client_id,
                    ClientHost=m.client_host,
                    RebalanceTimeout=m.rebalance_timeout_ms,
                    SessionTimeout=m.session_timeout_ms,
                    Subscription=m.metadata(group.protocol or ""),
                    Assignment=m.assignment,
                )
                for m in group.members.values()
            ],
        )
        return self._write(
            self.partition_of(group.group_id), [encode_group_metadata(group.group_id, value)], then
        )

    def _write(
        self, partition: int, records: list[tuple[bytes, bytes]], then: Callable[[Errors, int], Effects]
    ) -> Effects:
        self._next_write += 1
        self._pending_writes[self._next_write] = then
        return Effects(writes=[Write(self._next_write, partition, records)])

    def write_done(self, write_id: int, error: Errors, now: int) -> Effects:
        then = self._pending_writes.pop(write_id, None)
        return then(error, now) if then is not None else Effects()


def _commit_error(err: Errors) -> Errors:
    """How a failed append reaches a committer (Kafka's GroupMetadataManager mapping)."""
    if err in (
        Errors.UNKNOWN_TOPIC_OR_PARTITION,
        Errors.NOT_ENOUGH_REPLICAS,
        Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        Errors.REQUEST_TIMED_OUT,
    ):
        return Errors.COORDINATOR_NOT_AVAILABLE
    if err in (Errors.NOT_LEADER_OR_FOLLOWER, Errors.KAFKA_STORAGE_ERROR):
        return Errors.NOT_COORDINATOR
    if err in (Errors.MESSAGE_TOO_LARGE, Errors.RECORD_LIST_TOO_LARGE, Errors.INVALID_FETCH_SIZE):
        return Errors.INVALID_COMMIT_OFFSET_SIZE
    return err
