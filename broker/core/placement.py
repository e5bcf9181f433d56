"""KIP-858 "Replica management": what to do with one replica the metadata places on this broker.

`decide` is the decision table, a pure function of what the metadata says (the directory assigned
to this broker's replica), what the broker found on disk (the dir holding the replica's log, and
the dir holding a `-future` copy), and the state of the broker's dirs. It never looks at a disk.

| metadata says                  | on disk                          | decision                                   |
|--------------------------------|----------------------------------|--------------------------------------------|
| any                            | future in the same dir as log    | delete the abandoned future (field bug 14), then decide as without it |
| the dir holding the log        | log, no future                   | nothing: open it                           |
| the dir holding the log        | log + future elsewhere           | resume copying into the future             |
| the future's dir               | log elsewhere + future           | promote the future (finish the move)       |
| anything else (UNASSIGNED, MIGRATING, LOST, another online dir, an unknown or offline dir) | log in an online dir | report where it is (moved while down: KIP-858 footnote 4) |
| UNASSIGNED                     | nothing                          | pick a dir, create, report                 |
| one of our online dirs         | nothing                          | create there                               |
| one of our dirs that failed    | nothing readable                 | nothing: the replica is offline            |
| MIGRATING, LOST, an unknown id | nothing, and some dir is offline | nothing: it may be in the offline dir (field bug 12); report LOST unless it already says so |
| MIGRATING, LOST, an unknown id | nothing, no dir offline          | pick a dir, create, report                 |

A broker with one log dir reports to correct LOST (KIP-858), and also to correct an assignment to
a dir id that is not its own (a dir dropped from `log.dirs`): the controller counts such a replica
offline on a one-dir broker, as Kafka's does, so nothing else would ever bring it back into the ISR.
UNASSIGNED and MIGRATING it leaves alone: its replicas are wherever its one dir is. Reporting LOST
for a replica that may sit in an offline dir this broker cannot even identify is how KIP-858 lets
the controller know the replica is offline and placed; see docs/kip-deviations.md.

`choose_dir` places a new replica in the online dir holding the fewest replicas (current and
future logs), ties broken by path, as Kafka's LogManager.nextLogDirs does by partition count.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import NamedTuple

from protocol.uuid import LOST, MIGRATING, UNASSIGNED, Uuid


class FutureAction(Enum):
    NONE = "none"
    DELETE = "delete"  # an abandoned future log: remove it
    RESUME = "resume"  # keep copying the current log into the future one
    PROMOTE = "promote"  # the future replaces the current log (or becomes the log when there is none)


PICK = Uuid.from_longs(0, 99)
"""Placeholder for "a dir chosen by choose_dir" in a decision (a reserved id, never a real dir)."""


@dataclass(frozen=True)
class DirView:
    """The broker's dirs as the decision table needs them."""

    online: frozenset[Uuid]
    offline: frozenset[Uuid] = frozenset()
    """Dirs known by id that failed while running."""
    any_offline: bool = False
    """Some configured dir is offline, whether or not its id is known (unreadable at startup)."""
    multi_dir: bool = True
    """More than one entry in log.dirs."""


class LocalReplica(NamedTuple):
    """Where the broker found a partition's logs, among its online dirs (a tuple: one is made per
    replica at every start)."""

    current: Uuid | None = None
    future: Uuid | None = None


class ReplicaDecision(NamedTuple):
    location: Uuid | None
    """The dir the replica lives in (or will, once created): PICK for "choose one"; None: offline."""
    create: bool = False
    report: Uuid | None = None
    """Directory to send in AssignReplicasToDirs (PICK: the one chosen), or None."""
    future: FutureAction = FutureAction.NONE
    reason: str = ""

    @property
    def offline(self) -> bool:
        return self.location is None


def decide(assigned: Uuid, local: LocalReplica, dirs: DirView) -> ReplicaDecision:
    current, future = local.current, local.future
    future_action = FutureAction.NONE
    if future is not None and future == current:
        future, future_action = None, FutureAction.DELETE
    if future is not None and future not in dirs.online:
        future = None

    if current is not None and current in dirs.online:
        if assigned == current:
            if future is not None:
                return ReplicaDecision(
                    current, future=FutureAction.RESUME, reason="resume the move into the future log"
                )
            return ReplicaDecision(current, future=future_action, reason="log is where the metadata says")
        if future is not None and assigned == future:
            return ReplicaDecision(
                future, future=FutureAction.PROMOTE, reason="metadata has accepted the future log"
            )
        return ReplicaDecision(
            current,
            report=_report(current, assigned, dirs),
            future=FutureAction.RESUME if future is not None else future_action,
            reason="log found in another dir than the metadata says",
        )

    if future is not None:
        # A future log with no current one: the copy is all there is here.
        if assigned in (future, UNASSIGNED) or not dirs.any_offline:
            return ReplicaDecision(
                future,
                report=None if assigned == future else _report(future, assigned, dirs),
                future=FutureAction.PROMOTE,
                reason="only a future log exists",
            )
        return _offline(assigned, dirs, "only a future log exists and a dir that may hold the log is offline")

    if assigned == UNASSIGNED:
        return ReplicaDecision(PICK, create=True, report=_report(PICK, assigned, dirs), reason="new replica")
    if assigned in dirs.online:
        return ReplicaDecision(assigned, create=True, reason="create in the assigned dir")
    if assigned in dirs.offline:
        return ReplicaDecision(None, reason="assigned dir is offline")
    if dirs.any_offline:
        return _offline(assigned, dirs, "not found while a dir is offline; it may be there")
    return ReplicaDecision(
        PICK, create=True, report=_report(PICK, assigned, dirs), reason="not found anywhere"
    )


def _offline(assigned: Uuid, dirs: DirView, reason: str) -> ReplicaDecision:
    report = LOST if dirs.multi_dir and assigned != LOST else None
    return ReplicaDecision(None, report=report, reason=reason)


def _report(actual: Uuid, assigned: Uuid, dirs: DirView) -> Uuid | None:
    if actual == assigned:
        return None
    if not dirs.multi_dir:
        return None if assigned in (UNASSIGNED, MIGRATING) else actual
    return actual


def choose_dir(replica_counts: Mapping[Uuid, int], paths: Mapping[Uuid, str]) -> Uuid:
    """The online dir with the fewest replicas; ties go to the first path in sorted order."""
    if not replica_counts:
        raise ValueError("no online log dir to place a replica in")
    return min(replica_counts, key=lambda d: (replica_counts[d], paths.get(d, ""), d))
