"""Striped replica placement and default directories (reference 7.12, 7.9)."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from controller.core.metadata_version import MV_3_6_IV1, MV_3_9_IV0
from controller.core.placement import StripedReplicaPlacer, UsableBroker, default_dir
from kraftpy.metadata import BrokerRegistration
from protocol.errors import Errors, KafkaError
from protocol.uuid import MIGRATING, UNASSIGNED, Uuid

A, B = Uuid.from_longs(500, 1), Uuid.from_longs(500, 2)


def brokers(n: int, fenced: set[int] = frozenset(), racks: int = 1) -> list[UsableBroker]:  # type: ignore[assignment]
    return [UsableBroker(i, f"r{i % racks}" if racks > 1 else None, i in fenced) for i in range(n)]


def test_placement_is_deterministic_for_a_seed() -> None:
    one = StripedReplicaPlacer(random.Random(3)).place(20, 3, brokers(6))
    two = StripedReplicaPlacer(random.Random(3)).place(20, 3, brokers(6))
    assert one == two


def test_replicas_are_distinct_leaders_spread_and_unfenced() -> None:
    placed = StripedReplicaPlacer(random.Random(1)).place(60, 3, brokers(6, fenced={0, 1}))
    for replicas in placed:
        assert len(set(replicas)) == 3
        assert replicas[0] not in (0, 1)
    leaders = Counter(r[0] for r in placed)
    assert set(leaders) == {2, 3, 4, 5}
    assert max(leaders.values()) - min(leaders.values()) <= 2


def test_racks_are_striped() -> None:
    placed = StripedReplicaPlacer(random.Random(5)).place(30, 2, brokers(6, racks=2))
    for replicas in placed:
        assert {replicas[0] % 2, replicas[1] % 2} == {0, 1}


@pytest.mark.parametrize(
    ("n", "fenced", "rf", "message"),
    [
        (2, set(), 3, "only 2 broker(s) are registered"),
        (2, {0, 1}, 1, "All brokers are currently fenced"),
        (2, set(), 0, "must be positive"),
    ],
)
def test_bad_replication_factors(n: int, fenced: set[int], rf: int, message: str) -> None:
    with pytest.raises(KafkaError) as e:
        StripedReplicaPlacer(random.Random(1)).place(1, rf, brokers(n, fenced))
    assert e.value.code == Errors.INVALID_REPLICATION_FACTOR and message in str(e.value)


def test_fenced_brokers_fill_in_when_needed() -> None:
    placed = StripedReplicaPlacer(random.Random(1)).place(5, 3, brokers(3, fenced={1, 2}))
    assert all(r[0] == 0 and sorted(r) == [0, 1, 2] for r in placed)


def reg(dirs: tuple[Uuid, ...]) -> BrokerRegistration:
    return BrokerRegistration(
        id=1,
        epoch=1,
        incarnation_id=Uuid.from_longs(1, 1),
        directories=dirs,
        registered_directories=frozenset(dirs),
    )


def test_default_dir() -> None:
    assert default_dir(reg((A,)), MV_3_9_IV0) == A
    assert default_dir(reg((A, B)), MV_3_9_IV0) == UNASSIGNED
    assert default_dir(reg(()), MV_3_9_IV0) == MIGRATING
    assert default_dir(None, MV_3_9_IV0) == UNASSIGNED
    assert default_dir(reg((A,)), MV_3_6_IV1) == MIGRATING
