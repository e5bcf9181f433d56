"""The intra-broker move's table, its catch-up rule and its throttle (broker.core.replica_move), without I/O."""

from __future__ import annotations

import pytest

from broker.core.replica_move import (
    TRANSITIONS,
    Action,
    IoThrottle,
    LogEnds,
    MoveEvent,
    MoveState,
    Reconcile,
    ReplicaMove,
    reconcile,
)
from kraftpy.image import TopicIdPartition
from protocol.uuid import Uuid

TP = TopicIdPartition(Uuid.from_longs(1, 2), "t", 0)
SRC, DST = Uuid.from_longs(10, 1), Uuid.from_longs(10, 2)


def walk(*events: MoveEvent) -> tuple[ReplicaMove, list[Action]]:
    m = ReplicaMove(TP, SRC, DST)
    return m, [m.handle(e) for e in events]


def test_a_move_asks_the_controller_before_it_swaps_and_swaps_only_once_accepted() -> None:
    """KIP-858's order (field bug 16): caught up -> AssignReplicasToDirs -> accepted -> swap."""
    m, actions = walk(
        MoveEvent.CAUGHT_UP, MoveEvent.CAUGHT_UP, MoveEvent.ACCEPTED, MoveEvent.CAUGHT_UP, MoveEvent.SWAPPED
    )
    assert actions == [Action.ASSIGN_DESTINATION, Action.NONE, Action.NONE, Action.SWAP, Action.DELETE_SOURCE]
    assert m.state is MoveState.DONE
    # No swap without the controller's acceptance, however often the copy catches up.
    m, actions = walk(*[MoveEvent.CAUGHT_UP] * 5)
    assert Action.SWAP not in actions and m.state is MoveState.QUEUED


@pytest.mark.parametrize(
    ("before", "cancel_action"),
    [
        ((), Action.DELETE_FUTURE),
        ((MoveEvent.CAUGHT_UP,), Action.REVERT_AND_DELETE_FUTURE),
        ((MoveEvent.CAUGHT_UP, MoveEvent.ACCEPTED), Action.REVERT_AND_DELETE_FUTURE),
        ((MoveEvent.CAUGHT_UP, MoveEvent.ACCEPTED, MoveEvent.CAUGHT_UP), Action.REVERT_AND_DELETE_FUTURE),
    ],
)
def test_a_cancel_reverts_an_assignment_already_sent(
    before: tuple[MoveEvent, ...], cancel_action: Action
) -> None:
    """Field bugs 15 and 16: once the controller may have the destination, a cancel sends the source back."""
    m, actions = walk(*before, MoveEvent.CANCEL)
    assert actions[-1] is cancel_action and m.state is MoveState.CANCELLED
    assert m.handle(MoveEvent.CANCEL) is Action.NONE  # a second cancel changes nothing


@pytest.mark.parametrize(
    ("before", "action"),
    [
        ((), Action.STOP),
        ((MoveEvent.CAUGHT_UP,), Action.REVERT_AND_STOP),
        ((MoveEvent.CAUGHT_UP, MoveEvent.ACCEPTED), Action.REVERT_AND_STOP),
        ((MoveEvent.CAUGHT_UP, MoveEvent.ACCEPTED, MoveEvent.CAUGHT_UP), Action.REVERT_AND_STOP),
    ],
)
def test_a_failed_source_stops_the_move_and_never_leaves_the_controller_on_the_copy(
    before: tuple[MoveEvent, ...], action: Action
) -> None:
    m, actions = walk(*before, MoveEvent.SOURCE_FAILED)
    assert actions[-1] is action and m.state is MoveState.FAILED


def test_every_row_of_the_table_leaves_a_live_state_or_ends() -> None:
    ends = {MoveState.DONE, MoveState.CANCELLED, MoveState.FAILED}
    for (state, _event), (nxt, _action) in TRANSITIONS.items():
        assert state not in ends
        assert nxt in ends or nxt in {MoveState.QUEUED, MoveState.ACCEPTED, MoveState.SWAPPING}
    m, _ = walk(MoveEvent.CAUGHT_UP, MoveEvent.ACCEPTED, MoveEvent.CAUGHT_UP, MoveEvent.SWAPPED)
    assert [h[1] for h in m.history] == [
        MoveEvent.CAUGHT_UP,
        MoveEvent.ACCEPTED,
        MoveEvent.CAUGHT_UP,
        MoveEvent.SWAPPED,
    ]
    assert m.handle(MoveEvent.CANCEL) is Action.NONE and m.state is MoveState.DONE


def test_lag_is_what_the_future_log_misses() -> None:
    m = ReplicaMove(TP, SRC, DST, future_log_end=40, current_log_end=100)
    assert m.lag == 60 and not m.caught_up
    m.future_log_end = 100
    assert m.lag == 0 and m.caught_up


def test_reconcile_follows_the_current_log_as_a_follower_follows_its_leader() -> None:
    # the plain case: copy from where the future log ends
    assert reconcile(LogEnds(0, 50, 3), LogEnds(0, 80, 3), (3, 80)) == Reconcile(None, None, 50)
    # an empty future log starts with the current log
    assert reconcile(LogEnds(0, 0, None), LogEnds(0, 80, 2), None) == Reconcile(None, None, 0)
    # the current log was truncated below the future's end (it diverged as a follower)
    assert reconcile(LogEnds(0, 50, 3), LogEnds(0, 30, 3), (3, 30)) == Reconcile(None, 30, 30)
    # the current log knows the future's latest epoch only up to an earlier offset
    assert reconcile(LogEnds(0, 50, 4), LogEnds(0, 90, 5), (3, 42)) == Reconcile(None, 42, 42)
    # retention moved the current log's start past the future's end
    assert reconcile(LogEnds(0, 10, 1), LogEnds(100, 150, 2), (2, 150)) == Reconcile(100, None, 100)
    # the current log no longer knows the future's epochs at all
    assert reconcile(LogEnds(0, 50, 3), LogEnds(20, 90, 5), None) == Reconcile(20, None, 20)


def test_the_throttle_spaces_rounds_to_the_configured_rate() -> None:
    t = IoThrottle(1000)
    assert t.delay_s(0.0, 500) == pytest.approx(0.5)
    assert t.delay_s(0.5, 1000) == pytest.approx(1.0)  # 1.5 s of budget used by t=0.5
    assert t.delay_s(10.0, 0) == 0.0
    assert IoThrottle(2**63 - 1).unlimited and IoThrottle(2**63 - 1).delay_s(0.0, 10**9) == 0.0
