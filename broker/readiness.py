"""BrokerReadiness: when the broker asks to be unfenced, and what /healthz and /metrics show of it.

KIP-858: a starting broker wants to stay fenced until it has caught up with the metadata and every
replica it hosts is placed in the metadata where it really lives. Once ready it never asks to be
fenced again: that would fence a running broker every time a topic is created.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import structlog

from broker.core.assignments import AssignmentsManager
from broker.core.lifecycle import BrokerLifecycle
from broker.core.log_placement import LogPlacement
from broker.lifecycle_manager import BrokerLifecycleManager
from broker.log_dir_failure import LogDirFailureChannel
from broker.log_manager import LogManager
from broker.metadata_loader import MetadataLoader
from broker.metadata_publisher import BrokerMetadataPublisher
from broker.metrics import BrokerStats, DirStat
from broker.storage.log_dir import LogDir
from protocol.uuid import Uuid

log = structlog.get_logger("broker.readiness")


class BrokerReadiness:
    def __init__(
        self,
        broker_id: int,
        *,
        log_dirs: dict[Uuid, LogDir],
        failures: LogDirFailureChannel,
        placement: LogPlacement,
        log_manager: LogManager,
        assignments: AssignmentsManager,
        lifecycle: BrokerLifecycle,
        driver: BrokerLifecycleManager,
        publisher: BrokerMetadataPublisher,
        loader: MetadataLoader,
        server_started_at: float,
        now_ms: Callable[[], int],
        failed_partitions: Callable[[], list[str]] = list,
    ) -> None:
        """`failed_partitions()`: followed partitions whose fetched data fails its checks, and local
        logs found to hold a damaged batch, each with why."""
        self.broker_id = broker_id
        self.log_dirs = log_dirs
        self.failures = failures
        self.placement = placement
        self.log_manager = log_manager
        self.assignments = assignments
        self.lifecycle = lifecycle
        self.driver = driver
        self.publisher = publisher
        self.loader = loader
        self.server_started_at = server_started_at
        self._now_ms = now_ms
        self.ready_latched = False
        self.failed_partitions = failed_partitions

    def update(self) -> None:
        """Ask to be unfenced once everything hosted here is placed (only while starting)."""
        if self.ready_latched:
            return
        ready = (
            self.publisher.published
            and self.placement.ready_to_unfence()
            and self.assignments.queued == 0
            and self.log_manager.settled
        )
        if ready:
            self.ready_latched = True
            log.info(
                "every hosted replica is placed in the metadata; ready to unfence",
                replicas=len(self.placement.replicas),
                offline_replicas=self.placement.offline_count(),
            )
            self.lifecycle.set_ready_to_unfence(True, self._now_ms())

    def stats(self) -> BrokerStats:
        lc, placement = self.lifecycle, self.placement
        failed = self.failures.failed
        dirs = [DirStat(str(ld.path), str(d), not ld.online) for d, ld in self.log_dirs.items()]
        dirs += [DirStat(p, "", True) for p, f in failed.items() if f.dir_id is None]
        return BrokerStats(
            state=int(lc.state),
            fenced=lc.fenced,
            metadata_offset=self.loader.image.offset,
            offline_replicas=placement.offline_count(),
            queued_assignments=self.assignments.queued,
            replicas=len(placement.replicas),
            assignment_requests=self.assignments.requests_sent,
            assignments_sent=self.assignments.assignments_sent,
            dirs=tuple(sorted(dirs, key=lambda d: d.path)),
            failed_partitions=len(self.failed_partitions()),
            **_move_stats(getattr(self.log_manager, "mover", None)),
        )

    def health(self) -> dict[str, Any]:
        lc, driver = self.lifecycle, self.driver
        online = {str(ld.path): str(d) for d, ld in self.log_dirs.items() if ld.online}
        offline = {
            p: {"directory_id": str(f.dir_id) if f.dir_id is not None else None, "reason": f.reason}
            for p, f in self.failures.failed.items()
        }
        unfenced_at = driver.unfenced_at
        return {
            "status": "ok",
            "broker_id": self.broker_id,
            "broker_state": lc.state.name,
            "registered": lc.registered,
            "broker_epoch": lc.broker_epoch,
            "fenced": lc.fenced,
            "ready_to_unfence": lc.ready_to_unfence,
            "metadata_offset": self.loader.image.offset,
            "dirs": {"online": online, "offline": offline},
            "offline_log_dirs_acknowledged": {str(d): a for d, a in lc.offline_dirs.items()},
            "queued_replica_to_dir_assignments": self.assignments.queued,
            "assign_replicas_to_dirs_requests": self.assignments.requests_sent,
            "assignments_sent": self.assignments.assignments_sent,
            "assign_replicas_to_dirs_bytes": driver.assignment_bytes,
            "replicas": self.placement.summary(),
            "failed_partitions": self.failed_partitions(),
            "seconds_to_unfence": None if unfenced_at is None else round(unfenced_at - driver.started_at, 3),
            "seconds_from_server_start_to_unfence": None
            if unfenced_at is None
            else round(unfenced_at - self.server_started_at, 3),
        }


def _move_stats(mover: object) -> dict[str, int]:
    """ReplicaAlterLogDirsManager's figures (none while intra-broker moves are not wired)."""
    if mover is None:
        return {}
    return {
        "move_max_lag": mover.max_lag(),  # type: ignore[attr-defined]
        "move_failed_partitions": len(mover.failed),  # type: ignore[attr-defined]
        "moves_in_progress": len(mover.moves),  # type: ignore[attr-defined]
    }
