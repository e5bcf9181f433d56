"""The KIP-858 replica decision table, row by row, and the choice of a dir for a new replica."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker.core.placement import (
    PICK,
    DirView,
    FutureAction,
    LocalReplica,
    ReplicaDecision,
    choose_dir,
    decide,
)
from protocol.uuid import LOST, MIGRATING, UNASSIGNED
from tests.broker_core.helpers import D1, D2, D3, GONE, PATHS

ALL_ONLINE = DirView(online=frozenset({D1, D2, D3}))
D3_FAILED = DirView(online=frozenset({D1, D2}), offline=frozenset({D3}), any_offline=True)
UNREADABLE_AT_START = DirView(online=frozenset({D1, D2}), any_offline=True)
SINGLE = DirView(online=frozenset({D1}), multi_dir=False)

N = FutureAction.NONE
CASES = [
    # (name, assigned, local, dirs, expected)
    (
        "unassigned, exists: report where",
        UNASSIGNED,
        LocalReplica(D2),
        ALL_ONLINE,
        ReplicaDecision(D2, report=D2),
    ),
    (
        "unassigned, absent: pick, create, report",
        UNASSIGNED,
        LocalReplica(),
        ALL_ONLINE,
        ReplicaDecision(PICK, create=True, report=PICK),
    ),
    (
        "unassigned, absent, a dir offline: still new, create",
        UNASSIGNED,
        LocalReplica(),
        D3_FAILED,
        ReplicaDecision(PICK, create=True, report=PICK),
    ),
    (
        "assigned online dir, absent: create there",
        D2,
        LocalReplica(),
        ALL_ONLINE,
        ReplicaDecision(D2, create=True),
    ),
    ("assigned online dir, present there: nothing", D2, LocalReplica(D2), ALL_ONLINE, ReplicaDecision(D2)),
    (
        "present there, future elsewhere: resume the copy",
        D2,
        LocalReplica(D2, D3),
        ALL_ONLINE,
        ReplicaDecision(D2, future=FutureAction.RESUME),
    ),
    (
        "present elsewhere, future in the assigned dir: promote",
        D3,
        LocalReplica(D2, D3),
        ALL_ONLINE,
        ReplicaDecision(D3, future=FutureAction.PROMOTE),
    ),
    (
        "moved by hand while down (footnote 4): report the actual dir",
        D1,
        LocalReplica(D2),
        ALL_ONLINE,
        ReplicaDecision(D2, report=D2),
    ),
    (
        "assigned unknown dir, found here: report where",
        GONE,
        LocalReplica(D1),
        D3_FAILED,
        ReplicaDecision(D1, report=D1),
    ),
    (
        "assigned LOST, found here: report where",
        LOST,
        LocalReplica(D1),
        UNREADABLE_AT_START,
        ReplicaDecision(D1, report=D1),
    ),
    (
        "assigned unknown dir, absent, no dir offline: pick, create, report",
        GONE,
        LocalReplica(),
        ALL_ONLINE,
        ReplicaDecision(PICK, create=True, report=PICK),
    ),
    (
        "assigned LOST, absent, no dir offline: pick, create, report",
        LOST,
        LocalReplica(),
        ALL_ONLINE,
        ReplicaDecision(PICK, create=True, report=PICK),
    ),
    (
        "migrating, absent, no dir offline: pick, create, report",
        MIGRATING,
        LocalReplica(),
        ALL_ONLINE,
        ReplicaDecision(PICK, create=True, report=PICK),
    ),
    (
        "assigned dir failed while running: offline, nothing else",
        D3,
        LocalReplica(),
        D3_FAILED,
        ReplicaDecision(None),
    ),
    (
        "assigned unknown dir, absent, a dir unreadable: offline, say LOST",
        GONE,
        LocalReplica(),
        UNREADABLE_AT_START,
        ReplicaDecision(None, report=LOST),
    ),
    (
        "assigned LOST, absent, a dir offline: nothing",
        LOST,
        LocalReplica(),
        UNREADABLE_AT_START,
        ReplicaDecision(None),
    ),
    (
        "migrating, absent, a dir offline: offline, say LOST",
        MIGRATING,
        LocalReplica(),
        D3_FAILED,
        ReplicaDecision(None, report=LOST),
    ),
    (
        "abandoned future in the same dir: delete it",
        D2,
        LocalReplica(D2, D2),
        ALL_ONLINE,
        ReplicaDecision(D2, future=FutureAction.DELETE),
    ),
    (
        "only a future, in the assigned dir: promote",
        D3,
        LocalReplica(None, D3),
        ALL_ONLINE,
        ReplicaDecision(D3, future=FutureAction.PROMOTE),
    ),
    (
        "only a future elsewhere, a dir offline: wait",
        GONE,
        LocalReplica(None, D2),
        UNREADABLE_AT_START,
        ReplicaDecision(None, report=LOST),
    ),
    (
        "single dir, unassigned: create, no report",
        UNASSIGNED,
        LocalReplica(),
        SINGLE,
        ReplicaDecision(PICK, create=True),
    ),
    (
        "single dir, LOST: create and report",
        LOST,
        LocalReplica(),
        SINGLE,
        ReplicaDecision(PICK, create=True, report=PICK),
    ),
    ("single dir, LOST, present: report", LOST, LocalReplica(D1), SINGLE, ReplicaDecision(D1, report=D1)),
    # Its dir dropped from log.dirs: the controller counts the replica offline until it is corrected.
    ("single dir, other id, present: report", GONE, LocalReplica(D1), SINGLE, ReplicaDecision(D1, report=D1)),
    ("single dir, MIGRATING, present: nothing", MIGRATING, LocalReplica(D1), SINGLE, ReplicaDecision(D1)),
]


@pytest.mark.parametrize(
    ("assigned", "local", "dirs", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_decision_table(assigned, local, dirs, expected) -> None:  # type: ignore[no-untyped-def]
    d = decide(assigned, local, dirs)
    assert (d.location, d.create, d.report, d.future) == (
        expected.location,
        expected.create,
        expected.report,
        expected.future,
    ), d.reason


def test_no_replica_is_recreated_in_a_good_dir_while_a_dir_is_offline() -> None:
    """Field bug 12 (KAFKA-16234): a dir failure must not re-create its replicas elsewhere."""
    for assigned in (D3, GONE, LOST, MIGRATING):
        for dirs in (D3_FAILED, UNREADABLE_AT_START):
            d = decide(assigned, LocalReplica(), dirs)
            assert d.offline and not d.create, (assigned, dirs)


def test_new_replica_goes_to_the_dir_with_fewest_replicas_ties_by_path() -> None:
    assert choose_dir({D1: 3, D2: 1, D3: 2}, PATHS) == D2
    assert choose_dir({D1: 1, D2: 1, D3: 2}, PATHS) == D1  # /data/d1 sorts first
    with pytest.raises(ValueError):
        choose_dir({}, PATHS)


REAL = [D1, D2, D3, GONE]
ANY_DIR = st.sampled_from([*REAL, UNASSIGNED, MIGRATING, LOST])
MAYBE_LOCAL = st.one_of(st.none(), st.sampled_from([D1, D2, D3]))


@st.composite
def dir_views(draw: st.DrawFn) -> DirView:
    failed = draw(st.sets(st.sampled_from([D1, D2, D3]), max_size=2))
    online = frozenset({D1, D2, D3} - failed)
    unreadable = draw(st.booleans())
    return DirView(online=online, offline=frozenset(failed), any_offline=bool(failed) or unreadable)


@given(assigned=ANY_DIR, current=MAYBE_LOCAL, future=MAYBE_LOCAL, dirs=dir_views())
def test_decision_invariants(assigned, current, future, dirs) -> None:  # type: ignore[no-untyped-def]
    if current is not None and current not in dirs.online:
        current = None  # only online dirs are ever scanned
    d = decide(assigned, LocalReplica(current, future), dirs)
    if d.create:
        # Never created anywhere while it may sit in an offline dir (field bug 12) ...
        assert assigned == UNASSIGNED or assigned in dirs.online or not dirs.any_offline
        # ... and never in a dir that is not online.
        assert d.location == PICK or d.location in dirs.online
        assert current is None
    if current is not None:
        assert d.location in (current, future) and not d.create
        if assigned not in (current, future):
            assert d.report == current, "a log found elsewhere is reported where it is"
    if d.report is not None:
        assert d.report != assigned
        assert d.report in (PICK, LOST) or d.report in dirs.online
    if d.offline:
        assert not d.create and d.report in (None, LOST)
