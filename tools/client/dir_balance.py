"""Planning moves that even out the bytes across one broker's log dirs (what Cruise Control does for
disks), without I/O.

Input: each online dir's path with its replicas' sizes (from DescribeLogDirs); output: a list of
moves, each one replica to another dir. Greedy, largest gain first: take the fullest and the emptiest
dir, move the largest replica of the fullest that narrows their gap (a replica smaller than the gap
does, and the best is the one closest to half of it), and repeat until no move narrows the gap by
more than `min_gain_bytes`. Replicas already being moved (a future log exists) and offline dirs are
left out; a dir's used bytes count only the replicas the broker reports, so the plan evens out the
Kafka data, not the filesystem.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Replica:
    topic: str
    partition: int
    size: int


@dataclass(frozen=True, slots=True)
class Move:
    topic: str
    partition: int
    size: int
    source: str
    destination: str


def plan_balance(
    dirs: Mapping[str, Sequence[Replica]],
    *,
    pinned: frozenset[tuple[str, int]] = frozenset(),
    min_gain_bytes: int = 1,
    max_moves: int = 1000,
) -> list[Move]:
    """Moves (in the order to run them) that bring the dirs' byte counts closer together; `pinned`
    replicas count where they are but do not move (a move of theirs is under way)."""
    if len(dirs) < 2:
        return []
    used = {d: sum(r.size for r in rs) for d, rs in dirs.items()}
    holding = {d: sorted(rs, key=lambda r: (-r.size, r.topic, r.partition)) for d, rs in dirs.items()}
    moves: list[Move] = []
    while len(moves) < max_moves:
        fullest = max(used, key=lambda d: (used[d], d))
        emptiest = min(used, key=lambda d: (used[d], d))
        gap = used[fullest] - used[emptiest]
        # Moving `size` turns the gap into |gap - 2*size|: a gain while size < gap.
        best = None
        for r in holding[fullest]:
            if 0 < r.size < gap and (r.topic, r.partition) not in pinned:
                gain = gap - abs(gap - 2 * r.size)
                if best is None or gain > best[0]:
                    best = (gain, r)
        if best is None or best[0] < min_gain_bytes:
            break
        r = best[1]
        holding[fullest].remove(r)
        holding[emptiest].append(r)
        used[fullest] -= r.size
        used[emptiest] += r.size
        moves.append(Move(r.topic, r.partition, r.size, fullest, emptiest))
    return moves


def spread(dirs: Mapping[str, Sequence[Replica]], moves: Sequence[Move] = ()) -> dict[str, int]:
    """Bytes per dir after `moves`."""
    used = {d: sum(r.size for r in rs) for d, rs in dirs.items()}
    for m in moves:
        used[m.source] -= m.size
        used[m.destination] += m.size
    return used
