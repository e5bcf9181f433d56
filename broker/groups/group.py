"""One classic consumer group as its coordinator holds it: members, generation, offsets.

Plain data plus the few rules that only look at the group itself (which protocol the members
agree on, whether everyone has rejoined); the coordinator (broker.groups.coordinator) drives the
state changes. States and their names are Kafka's (ClassicGroupState).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from enum import StrEnum


class GroupState(StrEnum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    join: tuple[int, int] | None = None  # (ticket, version) of a JoinGroup waiting for the rebalance
    sync: tuple[int, int] | None = None  # (ticket, version) of a SyncGroup waiting for the leader
    heartbeat_deadline: int = 0

    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.protocols]

    def metadata(self, protocol: str) -> bytes:
        return next((meta for name, meta in self.protocols if name == protocol), b"")

    def same_protocols(self, protocols: list[tuple[str, bytes]]) -> bool:
        return self.protocols == protocols


@dataclass(frozen=True)
class CommittedOffset:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int


@dataclass
class ClassicGroup:
    group_id: str
    state: GroupState = GroupState.EMPTY
    generation: int = 0
    protocol_type: str | None = None
    protocol: str | None = None
    leader: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    # member ids handed out with MEMBER_ID_REQUIRED, by the time they expire unless the member rejoins
    pending: dict[str, int] = field(default_factory=dict)
    offsets: dict[tuple[str, int], CommittedOffset] = field(default_factory=dict)
    rebalance_deadline: int | None = None
    # the first rebalance of an empty group waits group.initial.rebalance.delay.ms for more members
    initial_delay: bool = False
    state_timestamp: int = -1

    def transition(self, state: GroupState, now: int) -> None:
        self.state = state
        self.state_timestamp = now

    def supports(self, protocol_type: str, protocols: list[str]) -> bool:
        """A member may join when its protocol type matches and it shares a protocol with everyone."""
        if not self.members:
            return bool(protocol_type) and bool(protocols)
        if protocol_type != self.protocol_type:
            return False
        return bool(self.candidate_protocols() & set(protocols))

    def candidate_protocols(self) -> set[str]:
        sets = [set(m.protocol_names()) for m in self.members.values()]
        return set.intersection(*sets) if sets else set()

    def select_protocol(self) -> str:
        """Each member votes for its most preferred protocol that every member supports (Kafka's rule)."""
        candidates = self.candidate_protocols()
        votes: Counter[str] = Counter()
        for m in self.members.values():
            votes[next(p for p in m.protocol_names() if p in candidates)] += 1
        return max(sorted(votes), key=lambda p: votes[p])

    def all_rejoined(self) -> bool:
        return all(m.join is not None for m in self.members.values()) and not self.pending

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)
