"""Divergence checks on the leader and the follower's truncation (reference 9)."""

from __future__ import annotations

from broker.dataplane.truncation import NO_EPOCH_END, EpochEnd, Truncation, diverging_epoch, truncation_for


def test_leader_checks_the_last_fetched_epoch() -> None:
    assert diverging_epoch(-1, 10, None) is None
    assert diverging_epoch(3, 10, EpochEnd(3, 12)) is None
    assert diverging_epoch(3, 12, EpochEnd(3, 12)) is None
    # The follower has offsets of epoch 3 the leader never had.
    assert diverging_epoch(3, 15, EpochEnd(3, 12)) == EpochEnd(3, 12)
    # The leader never had epoch 3: its largest epoch below answers.
    assert diverging_epoch(3, 10, EpochEnd(2, 8)) == EpochEnd(2, 8)
    assert diverging_epoch(3, 10, None) == NO_EPOCH_END


def test_follower_truncates_within_a_shared_epoch() -> None:
    assert truncation_for(EpochEnd(3, 12), EpochEnd(3, 15), 15, 9) == Truncation(12, True)
    assert truncation_for(EpochEnd(3, 12), EpochEnd(3, 10), 15, 9) == Truncation(10, True)


def test_follower_steps_back_to_an_older_epoch_and_asks_again() -> None:
    assert truncation_for(EpochEnd(2, 8), EpochEnd(1, 6), 15, 4) == Truncation(6, False)


def test_follower_without_epochs_or_leader_without_ours() -> None:
    assert truncation_for(EpochEnd(2, 8), None, 15, 4) == Truncation(8, True)
    assert truncation_for(EpochEnd(2, 8), None, 5, 4) == Truncation(5, True)
    assert truncation_for(NO_EPOCH_END, EpochEnd(3, 12), 15, 4) == Truncation(4, True)
