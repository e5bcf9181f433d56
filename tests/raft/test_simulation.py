"""Seeded simulation: RAFT_SIM_SCHEDULES schedules (default 10,000), each with its own faults.

Each schedule prints one line (seeds, faults, figures, violations); the totals print at the end of the
run. Replay one schedule with RAFT_SIM_SEED=<seed>.
"""

from __future__ import annotations

import os

import pytest

from tests.conftest import report_total
from tests.raft.simulation import Simulation

SEEDS = (
    [int(os.environ["RAFT_SIM_SEED"])]
    if "RAFT_SIM_SEED" in os.environ
    else range(int(os.environ.get("RAFT_SIM_SCHEDULES", "10000")))
)


def record(name: str, value: int) -> None:
    report_total("raft simulation", name, value)


@pytest.mark.parametrize("seed", SEEDS)
def test_schedule_keeps_the_invariants(seed: int) -> None:
    simulation = Simulation(seed)
    outcome = simulation.run()
    print(outcome.line())
    for name in (
        "messages",
        "dropped",
        "duplicated",
        "crashes",
        "committed",
        "epochs",
        "snapshots_installed",
    ):
        record(name, getattr(outcome, name))
    record("schedules", 1)
    record("partitions", len(outcome.faults.partitions))
    record("resigns", len(outcome.faults.resigns))
    record("violations", len(outcome.violations))
    record("schedules without a leader at the end", outcome.leader_at_end < 0)
    assert not outcome.violations, "\n".join([outcome.line(), *outcome.violations, *simulation.trace[-30:]])
