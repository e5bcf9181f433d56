"""tools.cluster.launcher.cpu_seconds: what the benchmarks read a process's CPU time with."""

from __future__ import annotations

import os
import subprocess
import sys

from tools.cluster.launcher import cpu_seconds


def test_a_process_cpu_is_what_it_reports_itself() -> None:
    sum(i * i for i in range(2_000_000))  # some CPU to read
    mine = os.times()
    read = cpu_seconds([os.getpid()])
    assert read > 0
    # /proc counts in clock ticks; os.times() a little later may have a tick more.
    assert abs(read - (mine.user + mine.system)) < 0.1


def test_a_gone_process_counts_nothing() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert cpu_seconds([child.pid]) == 0.0
    assert cpu_seconds([]) == 0.0
