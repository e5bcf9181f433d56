"""The controller's metrics on /metrics, named after Kafka's KafkaController MBeans (reference 12).

Counters and histograms are updated as things happen; cluster gauges (brokers, topics, partitions,
offsets) are read from a `ControllerStats` snapshot at scrape time, so nothing has to be kept in sync.
"""

from __future__ import annotations

from collections import Counter as Tally
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

PREFIX = "kraftpy_controller"


@dataclass(frozen=True)
class ControllerStats:
    active: bool = False
    fenced_brokers: int = 0
    active_brokers: int = 0
    topics: int = 0
    partitions: int = 0
    offline_partitions: int = 0
    log_end_offset: int = 0
    high_watermark: int = 0
    log_start_offset: int = 0
    latest_snapshot_offset: int = -1
    event_queue_size: int = 0
    last_applied_offset: int = -1
    last_committed_offset: int = -1
    last_applied_lag_ms: float = 0.0
    raft_leader: int = -1
    raft_epoch: int = 0
    raft_election_ms: float = 0.0
    metadata_errors: int = 0
    zk_migration_state: int = 0
    migrating_zk_brokers: int = 0
    zk_write_behind_lag: int = 0
    zk_write_snapshot_ms: float = 0.0
    zk_write_delta_ms: float = 0.0


_GAUGES: tuple[tuple[str, str, str], ...] = (
    ("active_controller_count", "ActiveControllerCount: 1 on the active controller", "active"),
    ("fenced_broker_count", "FencedBrokerCount: registered brokers that are fenced", "fenced_brokers"),
    ("active_broker_count", "ActiveBrokerCount: registered brokers that are not fenced", "active_brokers"),
    ("global_topic_count", "GlobalTopicCount", "topics"),
    ("global_partition_count", "GlobalPartitionCount", "partitions"),
    ("offline_partitions_count", "OfflinePartitionsCount: partitions without a leader", "offline_partitions"),
    (
        "metadata_error_count",
        "MetadataErrorCount: damage found loading the metadata log (a whole last batch failing its CRC)",
        "metadata_errors",
    ),
    (
        "log_end_offset",
        "Next offset the metadata log will write (LastAppliedRecordOffset + 1)",
        "log_end_offset",
    ),
    ("high_watermark", "Exclusive end of the committed (fsynced) metadata log", "high_watermark"),
    ("log_start_offset", "First offset still in the metadata log", "log_start_offset"),
    ("latest_snapshot_end_offset", "End offset of the newest snapshot, -1 if none", "latest_snapshot_offset"),
    ("event_queue_size", "Events waiting in the controller event queue", "event_queue_size"),
    (
        "last_applied_record_offset",
        "LastAppliedRecordOffset: last offset replayed into the state",
        "last_applied_offset",
    ),
    (
        "last_committed_record_offset",
        "LastCommittedRecordOffset: last offset the quorum committed",
        "last_committed_offset",
    ),
    (
        "last_applied_record_lag_ms",
        "LastAppliedRecordLagMs: now minus the timestamp of the last applied batch",
        "last_applied_lag_ms",
    ),
    (
        "zk_migration_state",
        "ZkMigrationState: 0 NONE, 1 MIGRATION, 2 PRE_MIGRATION, 3 POST_MIGRATION",
        "zk_migration_state",
    ),
    (
        "migrating_zk_broker_count",
        "MigratingZkBrokerCount: ZooKeeper-mode brokers registered with the controller for the migration",
        "migrating_zk_brokers",
    ),
    (
        "zk_write_behind_lag",
        "ZkWriteBehindLag: committed metadata offsets not yet written to ZooKeeper in dual write",
        "zk_write_behind_lag",
    ),
    (
        "zk_write_snapshot_time_ms",
        "ZkWriteSnapshotTimeMs: the last full reconciliation of ZooKeeper with the image",
        "zk_write_snapshot_ms",
    ),
    ("zk_write_delta_time_ms", "ZkWriteDeltaTimeMs: the last dual write of one delta", "zk_write_delta_ms"),
    ("raft_current_leader", "raft current-leader: the leader's node id, -1 if unknown", "raft_leader"),
    ("raft_current_epoch", "raft current-epoch: the quorum epoch this voter knows", "raft_epoch"),
    (
        "raft_election_latency_ms",
        "raft election-latency: the last election this voter won, in ms",
        "raft_election_ms",
    ),
)


class _StatsCollector(Collector):
    def __init__(self, stats: Callable[[], ControllerStats]) -> None:
        self._stats = stats

    def collect(self) -> Iterator[GaugeMetricFamily]:
        s = self._stats()
        for name, doc, attr in _GAUGES:
            yield GaugeMetricFamily(f"{PREFIX}_{name}", doc, value=float(getattr(s, attr)))

    def describe(self) -> Iterable[GaugeMetricFamily]:
        return [GaugeMetricFamily(f"{PREFIX}_{name}", doc) for name, doc, _ in _GAUGES]


class ControllerMetrics:
    def __init__(self, registry: CollectorRegistry, stats: Callable[[], ControllerStats]) -> None:
        self.event_queue_time = Histogram(
            f"{PREFIX}_event_queue_time_seconds",
            "EventQueueTimeMs: time an event waited in the queue before it ran",
            ["event"],
            registry=registry,
            buckets=(0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5),
        )
        self.event_processing_time = Histogram(
            f"{PREFIX}_event_processing_time_seconds",
            "EventQueueProcessingTimeMs: time an event ran on the queue",
            ["event"],
            registry=registry,
            buckets=(0.00005, 0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5),
        )
        self.records_appended = Counter(
            f"{PREFIX}_records_appended",
            "Metadata records appended to the log, by record type",
            ["type"],
            registry=registry,
        )
        self.timed_out_heartbeats = Counter(
            f"{PREFIX}_timed_out_broker_heartbeats",
            "TimedOutBrokerHeartbeatCount: heartbeats not answered within half the heartbeat interval",
            registry=registry,
        )
        self.snapshots = Counter(f"{PREFIX}_snapshots", "Metadata snapshots written", registry=registry)
        self.commit_batches = Counter(
            f"{PREFIX}_commit_fsyncs", "Group commits (one fsync each) of the metadata log", registry=registry
        )
        self.new_active_controllers = Counter(
            f"{PREFIX}_new_active_controllers",
            "NewActiveControllersCount: times this controller became the active one",
            registry=registry,
        )
        registry.register(_StatsCollector(stats))
        self._event_children: dict[str, tuple[Any, Any]] = {}

    def observe_event(self, name: str, queued_s: float, ran_s: float) -> None:
        # Looking up labelled children costs more than observing; events have a handful of names.
        children = self._event_children.get(name)
        if children is None:
            children = (self.event_queue_time.labels(name), self.event_processing_time.labels(name))
            self._event_children[name] = children
        children[0].observe(queued_s)
        children[1].observe(ran_s)

    def count_records(self, type_names: Iterable[str]) -> None:
        for name, n in Tally(type_names).items():
            self.records_appended.labels(name).inc(n)
