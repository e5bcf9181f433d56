"""The controller's periodic operations: each timer submits a core operation to the event queue.

NoOp records while idle (metadata.max.idle.interval.ms), fencing brokers whose session expired,
unclean leader election for leaderless partitions, and the auto leader rebalance. A timer outlives
any one failed run; it ends when it is cancelled or the queue closes.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import structlog

from controller.core.partition_change import Election
from controller.event_queue import ControllerEventQueue, QueueClosedError, WriteContext

if TYPE_CHECKING:
    from controller.core import QuorumControllerCore
    from kraftpy.config import KafkaConfig

log = structlog.get_logger(__name__)

# QuorumController's default: how often leaderless partitions of topics allowing unclean
# election are looked at again (elections on broker events happen at once regardless).
UNCLEAN_ELECTION_CHECK_INTERVAL_MS = 5 * 60 * 1000
# Upper bound on the sleep of the session-expiry timer, so new sessions are noticed.
SESSION_CHECK_MAX_INTERVAL_MS = 250


class ControllerTimers:
    def __init__(
        self,
        cfg: KafkaConfig,
        core: QuorumControllerCore,
        queue: ControllerEventQueue,
        *,
        clock_ms: Callable[[], int],
    ) -> None:
        self._cfg = cfg
        self._core = core
        self._queue = queue
        self._clock_ms = clock_ms
        self._tasks: list[asyncio.Task[None]] = []

    def start(self) -> None:
        cfg = self._cfg
        if cfg.metadata_max_idle_interval_ms > 0:
            self._spawn(self._noop_timer(cfg.metadata_max_idle_interval_ms))
        self._spawn(self._session_timer())
        self._spawn(self._unclean_election_timer())
        if cfg.auto_leader_rebalance_enable:
            self._spawn(self._preferred_election_timer(cfg.leader_imbalance_check_interval_seconds))

    async def stop(self) -> None:
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t

    def _spawn(self, coro: Any) -> None:
        self._tasks.append(asyncio.ensure_future(coro))

    async def _noop_timer(self, interval_ms: int) -> None:
        while True:
            await asyncio.sleep(interval_ms / 1000)
            await self._write("maybeWriteNoOpRecord", lambda ctx: self._core.noop())

    async def _session_timer(self) -> None:
        while True:
            now = self._clock_ms()
            expiry = self._core.next_session_expiry_ms()
            wait_ms = (
                SESSION_CHECK_MAX_INTERVAL_MS
                if expiry is None
                else max(1, min(expiry - now + 1, SESSION_CHECK_MAX_INTERVAL_MS))
            )
            await asyncio.sleep(wait_ms / 1000)
            # Fence stale brokers one at a time until none is left (maybeFenceOneStaleBroker).
            while True:
                fenced = await self._write(
                    "maybeFenceStaleBroker", lambda ctx: self._core.maybe_fence_one_stale_broker(ctx.now_ms)
                )
                if fenced is None:
                    break
                log.info("fenced broker whose session expired", broker_id=fenced)

    async def _unclean_election_timer(self) -> None:
        while True:
            await asyncio.sleep(UNCLEAN_ELECTION_CHECK_INTERVAL_MS / 1000)
            await self._write("electUncleanLeaders", lambda ctx: self._core.maybe_elect_unclean_leaders())

    async def _preferred_election_timer(self, interval_s: int) -> None:
        # Leadership drifts to whichever replica was placed or came back first (a multi-dir broker
        # stays fenced until its replicas are placed); like Kafka's auto leader rebalance, move it
        # back to the preferred replica wherever that one is acceptable again.
        while True:
            await asyncio.sleep(interval_s)
            await self._write(
                "electPreferredLeaders", lambda ctx: self._core.elect_leaders(Election.PREFERRED)
            )

    async def _write(self, name: str, op: Callable[[WriteContext], Any]) -> Any:
        try:
            return await self._queue.write(name, op)
        except QueueClosedError:
            raise asyncio.CancelledError() from None
        except Exception:
            # The operation changed nothing; a timer must keep running whatever one run hit.
            log.exception("timer event failed", event=name)
            return None
