"""Planning moves that even out one broker's log dirs (tools.client.dir_balance), without I/O."""

from __future__ import annotations

from tools.client.dir_balance import Move, Replica, plan_balance, spread

MB = 1 << 20


def test_moves_go_from_the_fullest_dir_to_the_emptiest_until_no_move_narrows_the_gap() -> None:
    dirs = {
        "/d0": [Replica("t", p, s * MB) for p, s in enumerate((40, 30, 20, 10))],
        "/d1": [],
        "/d2": [Replica("u", 0, 5 * MB)],
    }
    moves = plan_balance(dirs)
    after = spread(dirs, moves)
    assert sum(after.values()) == sum(spread(dirs).values())
    assert max(after.values()) - min(after.values()) <= 10 * MB
    assert moves[0] == Move("t", 0, 40 * MB, "/d0", "/d1")
    assert all(m.source != m.destination for m in moves)


def test_balanced_dirs_single_dirs_and_small_gains_plan_nothing() -> None:
    assert plan_balance({"/d0": [Replica("t", 0, MB)], "/d1": [Replica("t", 1, MB)]}) == []
    assert plan_balance({"/d0": [Replica("t", 0, 9 * MB)]}) == []
    # a replica as big as the gap only moves the imbalance to the other dir
    assert plan_balance({"/d0": [Replica("t", 0, 10 * MB)], "/d1": []}) == []
    assert (
        plan_balance(
            {"/d0": [Replica("t", 0, 3 * MB), Replica("t", 1, MB)], "/d1": [Replica("t", 2, 3 * MB)]},
            min_gain_bytes=2 * MB + 1,
        )
        == []
    )


def test_replicas_already_moving_count_where_they_are_but_stay() -> None:
    dirs = {"/d0": [Replica("t", 0, 50 * MB), Replica("t", 1, 20 * MB)], "/d1": []}
    moves = plan_balance(dirs, pinned=frozenset({("t", 0)}))
    assert [(m.topic, m.partition) for m in moves] == [("t", 1)]
