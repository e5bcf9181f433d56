"""bench/scale.py's summary of where one controller stops: each limit extrapolated from the run's
figures, the binding one first."""

from __future__ import annotations

import os

import pytest

from bench.scale import GOAL_REPLAY_S, HEARTBEAT_INTERVAL_MS, usable_memory, where_it_stops

GIB = 2**30


def test_each_limit_is_the_run_scaled_to_its_bound() -> None:
    limits = {
        limit.resource: limit
        for limit in where_it_stops(
            partitions=2_000_000,
            brokers=10_000,
            restart_s=25.0,
            state_bytes=2 * GIB,
            heartbeats_per_s=100_000.0,
            memory_bytes=24 * GIB,
        )
    }
    assert limits["restart"].partitions == pytest.approx(2_000_000 * GOAL_REPLAY_S / 25.0, abs=1)
    assert limits["memory"].partitions == 24_000_000
    # 200,000 brokers at 200 partitions each.
    assert HEARTBEAT_INTERVAL_MS == 2000
    assert limits["heartbeats"].partitions == 40_000_000
    assert "12.5 us per partition" in limits["restart"].reason
    assert "200,000 brokers" in limits["heartbeats"].reason


def test_the_binding_limit_comes_first() -> None:
    def order(restart_s: float, peak: int, rate: float) -> list[str]:
        return [
            limit.resource
            for limit in where_it_stops(2_000_000, 10_000, restart_s, peak, rate, memory_bytes=24 * GIB)
        ]

    assert order(25.0, 2 * GIB, 100_000.0) == ["restart", "memory", "heartbeats"]
    assert order(0.5, 20 * GIB, 100_000.0) == ["memory", "heartbeats", "restart"]
    assert order(0.5, GIB, 1_000.0) == ["heartbeats", "memory", "restart"]


def test_a_run_within_every_bound_holds_more_than_it_ran() -> None:
    limits = where_it_stops(2_000_000, 10_000, 10.0, GIB, 100_000.0, memory_bytes=24 * GIB)
    assert all(limit.partitions > 2_000_000 for limit in limits)
    assert all(limit.next_step for limit in limits)


def test_a_tiny_run_gives_limits_not_a_division_by_zero() -> None:
    limits = where_it_stops(10, 3, restart_s=0.0, state_bytes=0, heartbeats_per_s=1.0, memory_bytes=GIB)
    assert [limit.resource for limit in limits] == ["heartbeats", "restart", "memory"]


def test_usable_memory_is_the_machine_s_at_most() -> None:
    physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert 0 < usable_memory() <= physical
