"""A controller and three brokers as real processes for data-plane tests (`ProcessCluster`).

Brokers get several log dirs each: plain dirs under the test's tmp dir, or mountpoints of real
loop-device filesystems (`real_disks`) when a test fails disks. Timings are shortened
(heartbeats, probes, fetch backoff) so failovers take seconds, not half a minute.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tools.cluster.launcher import ManagedProcess, ProcessSet
from tools.cluster.layout import QUICK_FAILOVER, BrokerNode, ProcessCluster, wait_until

__all__ = ["FAST_BROKER", "Broker", "DataCluster", "run", "wait_until"]

FAST_BROKER = QUICK_FAILOVER

Broker = BrokerNode


class DataCluster(ProcessCluster):
    """Controller 100 and every broker written and formatted by `create`; `start` runs them all."""

    @classmethod
    def create(
        cls,
        workdir: Path,
        procs: ProcessSet,
        log_dirs: Mapping[int, Sequence[Path]],
        *,
        broker_extra: Mapping[str, object] | None = None,
    ) -> DataCluster:
        return cls.build_quick(workdir, procs, log_dirs, broker_extra=broker_extra)

    def start_broker(self, node_id: int, *, wait: bool = True) -> ManagedProcess:
        proc = self.launch_broker(node_id)
        if wait:
            self.wait_running(node_id)
        return proc


def run(coro: Any) -> Any:
    return asyncio.run(coro)
