"""Prints the simulation's totals after the run, so a CI log shows the figures without -s."""

from __future__ import annotations

import pytest


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    from tests.raft.test_simulation import TOTALS

    if TOTALS:
        terminalreporter.section("raft simulation")
        terminalreporter.write_line(", ".join(f"{k}={v}" for k, v in TOTALS.items()))
