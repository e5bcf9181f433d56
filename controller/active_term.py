"""What exists only while this controller is the active one: event queue, log sink and timers.

A term opens when the Raft client says this voter leads and has applied everything before its
epoch, and ends when it stops leading (abort: every waiting caller gets NOT_CONTROLLER at once, for
its records may be cut) or when the process stops (drain: what was queued is answered first).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import structlog

from controller.core.bootstrap import MigrationConfigError
from controller.errors import halt
from controller.event_queue import ControllerEventQueue, QueueClosedError
from controller.log_sink import MetadataLogSink, PreparedAppend
from controller.raft_store import entries_of
from controller.self_registration import register_from_config
from controller.timers import ControllerTimers

if TYPE_CHECKING:
    from controller.core import QuorumControllerCore
    from controller.metrics import ControllerMetrics
    from controller.raft_client import RaftClient
    from kraftpy.config import KafkaConfig

log = structlog.get_logger(__name__)

# How long a stopping controller waits for what it queued to commit (the other voters may be gone).
DRAIN_TIMEOUT_S = 5.0


class RaftWriter:
    """The log sink's writer: appends go through the Raft client and finish once committed."""

    def __init__(self, raft: RaftClient) -> None:
        self._raft = raft

    async def append_raw_batches(self, data: bytes) -> tuple[int, int]:
        entries = entries_of(data)
        first, last = entries[0].offset, entries[-1].end - 1
        await self._raft.append([e.data for e in entries], first, last)
        return first, last

    @property
    def durable_end_offset(self) -> int:
        return self._raft.high_watermark


@dataclass
class ActiveTerm:
    epoch: int
    core: QuorumControllerCore
    queue: ControllerEventQueue
    sink: MetadataLogSink
    timers: ControllerTimers
    cfg: KafkaConfig

    @classmethod
    def open(
        cls,
        cfg: KafkaConfig,
        core: QuorumControllerCore,
        raft: RaftClient,
        epoch: int,
        *,
        metrics: ControllerMetrics,
        on_committed: Callable[[int, PreparedAppend], None],
        on_failure: Callable[[BaseException], None],
        clock_ms: Callable[[], int],
    ) -> ActiveTerm:
        sink = MetadataLogSink(
            RaftWriter(raft),
            epoch,
            next_offset=raft.next_offset,
            on_committed=on_committed,
            on_failure=on_failure,
        )
        queue = ControllerEventQueue(
            replay=core.replay,
            sink=sink,
            on_fatal=halt,
            observe=metrics.observe_event,
            on_records=metrics.count_records,
        )
        queue.on_committed(raft.high_watermark)
        core.activate(clock_ms())
        queue.start()
        timers = ControllerTimers(cfg, core, queue, clock_ms=clock_ms)
        timers.start()
        return cls(epoch, core, queue, sink, timers, cfg)

    async def activate(self, bootstrap_records: Sequence[Any], metadata_version_level: int) -> None:
        """The first writes of a term: bootstrap records on an empty log, then our own registration."""
        core, queue = self.core, self.queue
        try:
            await queue.write(
                "activate", lambda ctx: core.activation_records(bootstrap_records, metadata_version_level)
            )
            await queue.write(
                "registerController", lambda ctx: register_from_config(self.cfg, core.metadata_version)
            )
        except (QueueClosedError, asyncio.CancelledError):
            return
        except MigrationConfigError as e:
            halt(str(e), e)
        except Exception as e:
            log.warning("activating the controller failed", leader_epoch=self.epoch, error=repr(e))

    async def drain(self, timeout_s: float = DRAIN_TIMEOUT_S) -> None:
        await self.timers.stop()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.queue.close(), timeout_s)

    async def abort(self, exc: BaseException) -> None:
        await self.timers.stop()
        self.queue.abort(exc)
