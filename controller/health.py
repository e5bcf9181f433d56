"""What the controller says about itself: the /healthz body and the figures behind its metric gauges.

Both are read at request or scrape time from the running parts; a part not started yet reads as zero.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from controller.metrics import ControllerStats

if TYPE_CHECKING:
    from controller.core import QuorumControllerCore
    from controller.event_queue import ControllerEventQueue
    from controller.raft_client import RaftClient


def health(
    *, stopping: bool, active: bool, node_id: int, cluster_id: str, raft: RaftClient | None
) -> dict[str, Any]:
    return {
        "status": "ok" if not stopping else "stopping",
        "role": "controller",
        "node_id": node_id,
        "cluster_id": cluster_id,
        "active": active,
        "leader_epoch": raft.leader_epoch if raft is not None else 0,
        "high_watermark": raft.high_watermark if raft is not None else 0,
        "log_end_offset": raft.log_end_offset if raft is not None else 0,
        "raft": {
            "role": raft.role.value if raft is not None else "unattached",
            "leader_id": raft.leader_id if raft is not None else -1,
            "leader_epoch": raft.leader_epoch if raft is not None else 0,
            "high_watermark": raft.high_watermark if raft is not None else 0,
            "log_end_offset": raft.log_end_offset if raft is not None else 0,
            "voters": sorted(raft.config.voters) if raft is not None else [],
        },
    }


def controller_stats(
    *,
    active: bool,
    core: QuorumControllerCore | None,
    raft: RaftClient | None,
    queue: ControllerEventQueue | None,
    metadata_errors: int = 0,
) -> ControllerStats:
    if core is None or raft is None:
        return ControllerStats(metadata_errors=metadata_errors)
    cluster, replication = core.m.cluster, core.m.replication
    fenced = core.fenced_broker_count()
    return ControllerStats(
        active=active,
        fenced_brokers=fenced,
        active_brokers=len(cluster.registrations) - fenced,
        topics=len(replication.topics),
        partitions=replication.partition_count(),
        offline_partitions=core.offline_partition_count(),
        preferred_imbalance=replication.preferred_replica_imbalance_count(),
        reassigning_partitions=replication.reassigning_partition_count(),
        log_end_offset=raft.log_end_offset,
        high_watermark=raft.high_watermark,
        last_applied_offset=raft.applied_offset - 1,
        last_committed_offset=raft.high_watermark - 1,
        last_applied_lag_ms=raft.applied_lag_ms(),
        raft_leader=raft.leader_id,
        raft_epoch=raft.leader_epoch,
        raft_election_ms=raft.last_election_ms,
        log_start_offset=raft.log_start_offset,
        latest_snapshot_offset=raft.latest_snapshot_end_offset,
        event_queue_size=queue.size() if queue is not None else 0,
        metadata_errors=metadata_errors,
        zk_migration_state=int(core.m.features.zk_migration_state),
        migrating_zk_brokers=sum(1 for r in cluster.registrations.values() if r.is_migrating_zk_broker),
    )
