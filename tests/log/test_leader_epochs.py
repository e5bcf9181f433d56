"""The leader-epoch history every log keeps, and its leader-epoch-checkpoint file."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftpy.log import EpochEntry, LeaderEpochCache
from kraftpy.log.leader_epoch_checkpoint import parse_leader_epoch_checkpoint
from kraftpy.metalog import LogError


def test_epoch_cache_assign_and_lookups() -> None:
    c = LeaderEpochCache()
    assert c.end_offset_for(1, 0) == (-1, -1)
    for epoch, start in [(1, 0), (1, 5), (3, 10), (3, 12), (5, 20)]:
        c.assign(epoch, start)
    assert c.entries() == [EpochEntry(1, 0), EpochEntry(3, 10), EpochEntry(5, 20)]
    assert [c.epoch_for_offset(o) for o in (0, 9, 10, 25)] == [1, 1, 3, 5]
    assert c.end_offset_for(5, 30) == (30, 5)  # latest epoch ends at the log end
    assert c.end_offset_for(3, 30) == (20, 3)
    assert c.end_offset_for(4, 30) == (20, 3)  # unknown epoch: the largest below it
    assert c.end_offset_for(0, 30) == (0, 0)  # older than the history
    assert c.end_offset_for(6, 30) == (-1, -1)
    c.truncate_from_end(15)
    assert c.entries() == [EpochEntry(1, 0), EpochEntry(3, 10)]
    c.truncate_from_start(12)
    assert c.entries() == [EpochEntry(3, 12)]
    c.assign(2, 11)  # a leader's history replacing ours after divergence
    assert c.entries() == [EpochEntry(2, 11)]


def test_leader_epoch_checkpoint_parsing(tmp_path: Path) -> None:
    assert parse_leader_epoch_checkpoint("0\n2\n1 0\n2 165\n") == [EpochEntry(1, 0), EpochEntry(2, 165)]
    with pytest.raises(LogError, match="header says 3 entries"):
        parse_leader_epoch_checkpoint("0\n3\n1 0\n", tmp_path / "x")


@pytest.mark.parametrize(
    ("diverging", "local", "log_end", "expected"),
    [
        ((50, 3), (60, 3), 70, 50),  # the epoch is ours too: the smaller of the two ends
        ((80, 3), (60, 3), 70, 60),
        ((50, 3), (70, 2), 70, 70),  # not ours: our end of the largest epoch below it
        ((10, 0), (40, 0), 90, 10),  # epoch 0: the leader's end, whatever ours says
        ((95, 0), (40, 0), 90, 90),
    ],
)
def test_truncation_offset_is_replicated_logs_truncate_to_end_offset(
    diverging: tuple[int, int], local: tuple[int, int], log_end: int, expected: int
) -> None:
    from kraftpy.log.epoch_cache import OffsetAndEpoch, truncation_offset

    assert truncation_offset(OffsetAndEpoch(*diverging), OffsetAndEpoch(*local), log_end) == expected
