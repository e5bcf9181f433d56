"""Roles and the persisted quorum-state (after Kafka's QuorumState and QuorumStateData).

Every role change goes through `check_transition`, which reads `TRANSITIONS`: a move the table does
not list is a bug in the core, never a reaction to a peer, so it raises. Peers' bad input is answered
with an error code before any transition is attempted.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Role(Enum):
    UNATTACHED = "unattached"  # knows an epoch, no leader, has not voted in it
    VOTED = "voted"  # has granted its one vote of this epoch
    CANDIDATE = "candidate"  # voted for itself and asks for votes
    LEADER = "leader"
    FOLLOWER = "follower"  # knows the leader of its epoch and fetches from it
    RESIGNED = "resigned"  # a leader that stepped down and waits for the next election
    OBSERVER = "observer"  # not a voter (a broker): fetches, never votes, never counts


# Role -> roles it may move to. A higher epoch always passes through UNATTACHED or FOLLOWER first,
# so VOTED is reached only from UNATTACHED (one vote per epoch follows from that).
TRANSITIONS: dict[Role, frozenset[Role]] = {
    Role.UNATTACHED: frozenset({Role.UNATTACHED, Role.VOTED, Role.CANDIDATE, Role.FOLLOWER}),
    Role.VOTED: frozenset({Role.UNATTACHED, Role.CANDIDATE, Role.FOLLOWER}),
    Role.CANDIDATE: frozenset({Role.UNATTACHED, Role.CANDIDATE, Role.LEADER, Role.FOLLOWER}),
    Role.LEADER: frozenset({Role.UNATTACHED, Role.RESIGNED, Role.FOLLOWER}),
    Role.FOLLOWER: frozenset({Role.UNATTACHED, Role.CANDIDATE, Role.FOLLOWER}),
    Role.RESIGNED: frozenset({Role.UNATTACHED, Role.CANDIDATE, Role.FOLLOWER}),
    Role.OBSERVER: frozenset({Role.OBSERVER}),
}

# Roles in which a voter may still grant a vote in its current epoch.
CAN_GRANT_VOTE: frozenset[Role] = frozenset({Role.UNATTACHED, Role.VOTED})


class IllegalTransitionError(RuntimeError):
    """The core tried a role change the table forbids: a bug here, not a peer's fault."""


def check_transition(old: Role, new: Role) -> None:
    if new not in TRANSITIONS[old]:
        raise IllegalTransitionError(f"BUG: {old.value} -> {new.value} is not a legal transition")


@dataclass(frozen=True, slots=True, kw_only=True)
class QuorumState:
    """What `quorum-state` holds (v0: leaderId, leaderEpoch, votedId, currentVoters); -1 means none."""

    leader_id: int = -1
    leader_epoch: int = 0
    voted_id: int = -1
    voters: frozenset[int] = frozenset()


def initial_role(state: QuorumState, local_id: int) -> Role:
    """The role a node restarts in: it remembers its epoch and vote, but not whether it still leads."""
    if local_id not in state.voters:
        return Role.OBSERVER
    if state.leader_id == local_id:
        return Role.RESIGNED
    if state.leader_id >= 0:
        return Role.FOLLOWER
    if state.voted_id == local_id:
        return Role.CANDIDATE
    if state.voted_id >= 0:
        return Role.VOTED
    return Role.UNATTACHED
