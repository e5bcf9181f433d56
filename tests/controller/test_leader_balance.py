"""New partitions on multi-dir brokers get their preferred leaders as AssignReplicasToDirs places
them, not whichever broker's assignment arrives first."""

from __future__ import annotations

from tests.controller.control_context import ControlTestContext


def _three_multi_dir_brokers() -> ControlTestContext:
    ctx = ControlTestContext()
    for b in (1, 2, 3):
        ctx.register(b, (f"{b}a", f"{b}b", f"{b}c"))
        ctx.unfence(b)
    return ctx


def test_leaders_end_on_preferred_replicas_as_assignments_arrive_broker_by_broker() -> None:
    ctx = _three_multi_dir_brokers()
    assert ctx.create_topic("t", partitions=6, rf=3).response.Topics[0].ErrorCode == 0
    parts = [ctx.partition("t", i) for i in range(6)]
    assert all(p.leader == -1 for p in parts)
    preferred = [p.replicas[0] for p in parts]
    assert set(preferred) == {1, 2, 3}

    # The broker that placed its replicas last is the one the old rule made leader of everything.
    for b in (3, 1, 2):
        on_b = [i for i, p in enumerate(parts) if b in p.replicas]
        for n, i in enumerate(on_b):
            ctx.assign(b, f"{b}{'abc'[n % 3]}", [("t", i)])
        for i in range(6):
            p = ctx.partition("t", i)
            if p.replicas[0] == b:
                assert p.leader == b, (b, i, p)

    leaders = [ctx.partition("t", i).leader for i in range(6)]
    assert leaders == preferred
    assert set(leaders) == {1, 2, 3}
    # Nothing left for the imbalance timer to do.
    assert ctx.elect_preferred().records == []


def test_preferred_replica_placed_while_fenced_does_not_take_leadership() -> None:
    ctx = _three_multi_dir_brokers()
    ctx.create_topic("t", assignment=[[1, 2, 3]])
    ctx.heartbeat(1, want_fence=True)
    ctx.assign(2, "2a", [("t", 0)])
    ctx.assign(1, "1a", [("t", 0)])
    assert ctx.partition("t", 0).leader == 2


def test_a_later_dir_move_of_the_preferred_replica_leaves_leadership_alone() -> None:
    ctx = _three_multi_dir_brokers()
    ctx.create_topic("t", assignment=[[1, 2, 3]])
    ctx.assign(2, "2a", [("t", 0)])
    ctx.assign(3, "3a", [("t", 0)])
    ctx.alter_partition("t", 0, [2, 3])
    ctx.assign(1, "1a", [("t", 0)])
    assert ctx.partition("t", 0).leader == 2
    ctx.alter_partition("t", 0, [2, 3, 1])
    ctx.assign(1, "1b", [("t", 0)])
    assert ctx.partition("t", 0).leader == 2
