"""Finding the active controller from `controller.quorum.voters`, hints and refusals (scripted)."""

from __future__ import annotations

import pytest

from broker.core.controller_leader import ControllerLeader


def test_with_no_leader_known_it_goes_round_the_voters_as_they_refuse() -> None:
    c = ControllerLeader([3, 1, 2])
    assert c.target() == 1
    c.failed(1)
    assert c.target() == 2
    c.failed(2)
    assert c.target() == 3
    c.failed(3)
    assert c.target() == 1


def test_a_hint_moves_it_to_the_leader_and_never_back_to_an_older_epoch() -> None:
    c = ControllerLeader([1, 2, 3])
    assert c.learn(2, 5) is True
    assert c.target() == 2
    assert c.learn(1, 4) is False  # a stale hint from a voter behind
    assert c.target() == 2
    assert c.learn(-1, 5) is False  # a voter that does not know the leader of our epoch
    assert c.target() == 2
    assert c.learn(3, 6) is True
    assert (c.leader_id, c.leader_epoch, c.target()) == (3, 6, 3)


def test_the_leader_refusing_makes_it_look_from_the_next_voter_on() -> None:
    c = ControllerLeader([1, 2, 3])
    c.learn(2, 7)
    c.failed(2)  # NOT_CONTROLLER or unreachable: it lost the leadership or died
    assert c.leader_id == -1 and c.target() == 3
    c.learn(1, 8)
    assert c.target() == 1


def test_a_failure_of_another_voter_keeps_the_leader() -> None:
    c = ControllerLeader([1, 2, 3])
    c.learn(2, 3)
    c.failed(1)
    assert c.target() == 2


def test_no_voters_is_refused() -> None:
    with pytest.raises(ValueError, match=r"controller\.quorum\.voters"):
        ControllerLeader([])
