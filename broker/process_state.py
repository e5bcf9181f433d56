"""How a broker process ends, shared by the KRaft and the ZooKeeper-mode broker.

`stopped` is set once, by a clean exit (`exit_`) or a fatal condition (`fatal`, exit code 1, the
first reason wins); `run` then stops the broker's parts (`_stop`, the subclass's) within
STOP_TIMEOUT_S: after a fatal error Kafka halts at once, here the broker gets that long to close
files and sockets in order, then exits anyway.
"""

from __future__ import annotations

import asyncio

import structlog

from broker.tasks import BrokerTasks

log = structlog.get_logger("broker.server")

STOP_TIMEOUT_S = 10.0


class BrokerProcess:
    def __init__(self) -> None:
        self.exit_code: int | None = None
        self.exit_reason = ""
        self.stopped = asyncio.Event()
        self.tasks = BrokerTasks(self.fatal)

    async def run(self) -> int:
        """Until a shutdown completes or a fatal error; returns the exit code."""
        await self.stopped.wait()
        try:
            await asyncio.wait_for(self._stop(), STOP_TIMEOUT_S)
        except TimeoutError:
            log.warning("stopping took too long; exiting without finishing", timeout_s=STOP_TIMEOUT_S)
        return self.exit_code or 0

    def fatal(self, reason: str) -> None:
        if self.exit_code is not None:
            return
        log.error("broker shutting down", reason=reason)
        self.exit_code = 1
        self.exit_reason = reason
        self.stopped.set()

    def exit_(self, reason: str) -> None:
        self.exit_code = 0
        self.exit_reason = reason
        self.stopped.set()

    async def _stop(self) -> None:
        raise NotImplementedError
