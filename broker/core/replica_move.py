"""Moving a replica between two log dirs of this broker (KIP-113, with KIP-858's ordering), without I/O.

A move copies the replica's current log into a `-future` log in the destination dir while the
partition keeps taking writes. Its states are Kafka's promotion states (None, Queued, Accepted,
Effective) with the copy before them and the two ways a move ends early:

| state     | event          | next      | what the shell does                                          |
|-----------|----------------|-----------|--------------------------------------------------------------|
| COPYING   | CAUGHT_UP      | QUEUED    | AssignReplicasToDirs(destination) to the controller          |
| QUEUED    | ACCEPTED       | ACCEPTED  | (the controller has the destination in its metadata)         |
| ACCEPTED  | CAUGHT_UP      | SWAPPING  | pause appends, copy the rest, swap the logs                  |
| SWAPPING  | SWAPPED        | DONE      | delete the source log                                        |
| COPYING   | CANCEL         | CANCELLED | delete the future log                                        |
| QUEUED, ACCEPTED, SWAPPING | CANCEL | CANCELLED | delete the future log; AssignReplicasToDirs(source) (field bugs 15, 16) |
| COPYING   | SOURCE_FAILED  | FAILED    | stop copying; the replica is offline with its dir, the future log stays for the next start's decision table |
| QUEUED, ACCEPTED, SWAPPING | SOURCE_FAILED | FAILED | the same, and AssignReplicasToDirs(source): the controller must count the replica offline with the dir that held it, not online in a dir holding a copy that may lack acknowledged records (field bug 15) |

A destination dir that fails is a CANCEL: the replica stays where it was. Any (state, event) pair
not in the table changes nothing (a late CAUGHT_UP while QUEUED, a second CANCEL).

The controller only learns of the destination once the future log has caught up (KIP-858: the
assignment goes out before the swap, never after it), and the swap only happens once it has
accepted it; so at every instant the metadata names a dir holding every acknowledged record.

`reconcile` decides how the future log follows the current one between two copy rounds (the
current log may have been truncated by a follower's divergence or cut at the start by retention),
and `IoThrottle` spaces the rounds out to `replica.alter.log.dirs.io.max.bytes.per.second`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import NamedTuple

from kraftpy.image import TopicIdPartition
from protocol.uuid import Uuid


class MoveState(Enum):
    COPYING = "copying"
    QUEUED = "queued"
    ACCEPTED = "accepted"
    SWAPPING = "swapping"
    DONE = "done"
    CANCELLED = "cancelled"
    FAILED = "failed"


class MoveEvent(Enum):
    CAUGHT_UP = "caught_up"
    ACCEPTED = "accepted"
    SWAPPED = "swapped"
    CANCEL = "cancel"
    SOURCE_FAILED = "source_failed"


class Action(Enum):
    NONE = "none"
    ASSIGN_DESTINATION = "assign_destination"
    SWAP = "swap"
    DELETE_SOURCE = "delete_source"
    DELETE_FUTURE = "delete_future"
    REVERT_AND_DELETE_FUTURE = "revert_and_delete_future"
    STOP = "stop"
    REVERT_AND_STOP = "revert_and_stop"


S, E, A = MoveState, MoveEvent, Action
_LIVE = (S.COPYING, S.QUEUED, S.ACCEPTED)

TRANSITIONS: dict[tuple[MoveState, MoveEvent], tuple[MoveState, Action]] = {
    (S.COPYING, E.CAUGHT_UP): (S.QUEUED, A.ASSIGN_DESTINATION),
    (S.QUEUED, E.ACCEPTED): (S.ACCEPTED, A.NONE),
    (S.ACCEPTED, E.CAUGHT_UP): (S.SWAPPING, A.SWAP),
    (S.SWAPPING, E.SWAPPED): (S.DONE, A.DELETE_SOURCE),
    (S.COPYING, E.CANCEL): (S.CANCELLED, A.DELETE_FUTURE),
    (S.QUEUED, E.CANCEL): (S.CANCELLED, A.REVERT_AND_DELETE_FUTURE),
    (S.ACCEPTED, E.CANCEL): (S.CANCELLED, A.REVERT_AND_DELETE_FUTURE),
    (S.SWAPPING, E.CANCEL): (S.CANCELLED, A.REVERT_AND_DELETE_FUTURE),
    (S.COPYING, E.SOURCE_FAILED): (S.FAILED, A.STOP),
    (S.QUEUED, E.SOURCE_FAILED): (S.FAILED, A.REVERT_AND_STOP),
    (S.ACCEPTED, E.SOURCE_FAILED): (S.FAILED, A.REVERT_AND_STOP),
    (S.SWAPPING, E.SOURCE_FAILED): (S.FAILED, A.REVERT_AND_STOP),
}


@dataclass
class ReplicaMove:
    tp: TopicIdPartition
    source: Uuid
    destination: Uuid
    state: MoveState = MoveState.COPYING
    future_log_end: int = 0
    current_log_end: int = 0
    bytes_copied: int = 0
    history: list[tuple[MoveState, MoveEvent, MoveState]] = field(default_factory=list)

    @property
    def live(self) -> bool:
        """Copying, or waiting for the controller: a move AlterReplicaLogDirs may still redirect."""
        return self.state in _LIVE

    @property
    def running(self) -> bool:
        """Not ended yet (the swap included)."""
        return self.state in (*_LIVE, MoveState.SWAPPING)

    @property
    def lag(self) -> int:
        """Offsets the future log is behind the current one (DescribeLogDirs' OffsetLag, MaxLag)."""
        return max(self.current_log_end - self.future_log_end, 0)

    @property
    def caught_up(self) -> bool:
        return self.future_log_end == self.current_log_end

    def handle(self, event: MoveEvent) -> Action:
        step = TRANSITIONS.get((self.state, event))
        if step is None:
            return Action.NONE
        before = self.state
        self.state, action = step
        self.history.append((before, event, self.state))
        return action


class LogEnds(NamedTuple):
    log_start: int
    log_end: int
    latest_epoch: int | None


class Reconcile(NamedTuple):
    start_over_at: int | None
    """Empty the future log and restart it at this offset (the current log's start moved past it)."""
    truncate_to: int | None
    """Cut the future log back to this offset (the current log diverged from it)."""
    copy_from: int
    """The offset the next copy round reads the current log from."""


def reconcile(
    future: LogEnds, current: LogEnds, current_end_of_future_epoch: tuple[int, int] | None
) -> Reconcile:
    """How the future log follows the current one, as a follower follows its leader.

    `current_end_of_future_epoch` is the current log's answer to OffsetsForLeaderEpoch for the
    future's latest epoch: (largest epoch <= it, where that epoch ends), or None when unknown.
    """
    if future.log_end < current.log_start or (
        future.latest_epoch is not None
        and current_end_of_future_epoch is None
        and future.log_end > current.log_start
    ):
        return Reconcile(current.log_start, None, current.log_start)
    end = future.log_end
    if future.latest_epoch is not None and current_end_of_future_epoch is not None:
        epoch, epoch_end = current_end_of_future_epoch
        if epoch < future.latest_epoch or epoch_end < end:
            end = min(epoch_end, end)
    end = min(end, current.log_end)
    if end < current.log_start:
        return Reconcile(current.log_start, None, current.log_start)
    return Reconcile(None, end if end < future.log_end else None, end)


class IoThrottle:
    """Spaces out copy rounds so that they average at most `bytes_per_second` (<= 0: unlimited)."""

    def __init__(self, bytes_per_second: int) -> None:
        self.rate = bytes_per_second
        self._free_at = 0.0

    @property
    def unlimited(self) -> bool:
        return self.rate <= 0 or self.rate >= 2**62

    def delay_s(self, now_s: float, nbytes: int) -> float:
        """Seconds to wait before the next round, after one that moved `nbytes`."""
        if self.unlimited or nbytes <= 0:
            return 0.0
        self._free_at = max(self._free_at, now_s) + nbytes / self.rate
        return max(self._free_at - now_s, 0.0)
