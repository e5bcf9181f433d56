"""The controller's metrics on /metrics, under the names the Prometheus JMX exporter's common Kafka
rules give Kafka's MBeans (reference 12, docs/metrics.md): `kafka.controller:type=KafkaController,
name=ActiveControllerCount` is `kafka_controller_kafkacontroller_activecontrollercount`. What Kafka has
no MBean for keeps a `kraftpy_controller_` name.

Counters and histograms are updated as things happen; cluster gauges (brokers, topics, partitions,
offsets) are read from a `ControllerStats` snapshot at scrape time, so nothing has to be kept in sync.
"""

from __future__ import annotations

from collections import Counter as Tally
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, Counter
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from kraftpy.metadata.partition import LeaderRecoveryState
from protocol.metadata_records import PartitionChangeRecord
from protocol.transport.tally import HistogramSeries, LabelledHistogram

PREFIX = "kraftpy_controller"
KC = "kafka_controller_kafkacontroller"
RAFT = "kafka_server_raft_metrics"


@dataclass(frozen=True)
class ControllerStats:
    active: bool = False
    fenced_brokers: int = 0
    active_brokers: int = 0
    topics: int = 0
    partitions: int = 0
    offline_partitions: int = 0
    preferred_imbalance: int = 0
    reassigning_partitions: int = 0
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
    (f"{KC}_activecontrollercount", "ActiveControllerCount: 1 on the active controller", "active"),
    (f"{KC}_fencedbrokercount", "FencedBrokerCount: registered brokers that are fenced", "fenced_brokers"),
    (
        f"{KC}_activebrokercount",
        "ActiveBrokerCount: registered brokers that are not fenced",
        "active_brokers",
    ),
    (f"{KC}_globaltopiccount", "GlobalTopicCount", "topics"),
    (f"{KC}_globalpartitioncount", "GlobalPartitionCount", "partitions"),
    (
        f"{KC}_preferredreplicaimbalancecount",
        "PreferredReplicaImbalanceCount: partitions not led by their preferred (first) replica",
        "preferred_imbalance",
    ),
    (
        f"{KC}_offlinepartitionscount",
        "OfflinePartitionsCount: partitions without a leader",
        "offline_partitions",
    ),
    (
        f"{PREFIX}_reassigning_partitions",
        "Partitions with a reassignment under way (AddingReplicas or RemovingReplicas set); Kafka's "
        "controller has no such gauge",
        "reassigning_partitions",
    ),
    (
        f"{KC}_metadataerrorcount",
        "MetadataErrorCount: damage found loading the metadata log (a whole last batch failing its CRC)",
        "metadata_errors",
    ),
    (
        f"{PREFIX}_log_end_offset",
        "Next offset the metadata log will write (LastAppliedRecordOffset + 1)",
        "log_end_offset",
    ),
    (f"{PREFIX}_high_watermark", "Exclusive end of the committed (fsynced) metadata log", "high_watermark"),
    (f"{PREFIX}_log_start_offset", "First offset still in the metadata log", "log_start_offset"),
    (
        f"{PREFIX}_latest_snapshot_end_offset",
        "End offset of the newest snapshot, -1 if none",
        "latest_snapshot_offset",
    ),
    (f"{PREFIX}_event_queue_size", "Events waiting in the controller event queue", "event_queue_size"),
    (
        f"{KC}_lastappliedrecordoffset",
        "LastAppliedRecordOffset: last offset replayed into the state",
        "last_applied_offset",
    ),
    (
        f"{KC}_lastcommittedrecordoffset",
        "LastCommittedRecordOffset: last offset the quorum committed",
        "last_committed_offset",
    ),
    (
        f"{KC}_lastappliedrecordlagms",
        "LastAppliedRecordLagMs: now minus the timestamp of the last applied batch",
        "last_applied_lag_ms",
    ),
    (
        f"{KC}_zkmigrationstate",
        "ZkMigrationState: 0 NONE, 1 MIGRATION, 2 PRE_MIGRATION, 3 POST_MIGRATION",
        "zk_migration_state",
    ),
    (
        f"{KC}_migratingzkbrokercount",
        "MigratingZkBrokerCount: ZooKeeper-mode brokers registered with the controller for the migration",
        "migrating_zk_brokers",
    ),
    (
        f"{KC}_zkwritebehindlag",
        "ZkWriteBehindLag: committed metadata offsets not yet written to ZooKeeper in dual write",
        "zk_write_behind_lag",
    ),
    (
        f"{KC}_zkwritesnapshottimems",
        "ZkWriteSnapshotTimeMs: the last full reconciliation of ZooKeeper with the image",
        "zk_write_snapshot_ms",
    ),
    (f"{KC}_zkwritedeltatimems", "ZkWriteDeltaTimeMs: the last dual write of one delta", "zk_write_delta_ms"),
    (f"{RAFT}_current_leader", "raft current-leader: the leader's node id, -1 if unknown", "raft_leader"),
    (f"{RAFT}_current_epoch", "raft current-epoch: the quorum epoch this voter knows", "raft_epoch"),
    (
        f"{PREFIX}_raft_election_latency_ms",
        "raft election-latency: the last election this voter won, in ms",
        "raft_election_ms",
    ),
)


class _Tally:
    """A running total Kafka exports as a gauge (TimedOutBrokerHeartbeatCount, NewActiveControllersCount)."""

    def __init__(self) -> None:
        self.value = 0

    def inc(self) -> None:
        self.value += 1


_TALLIES: tuple[tuple[str, str, str], ...] = (
    (
        f"{KC}_timedoutbrokerheartbeatcount",
        "TimedOutBrokerHeartbeatCount: heartbeats not answered within half the heartbeat interval",
        "timed_out_heartbeats",
    ),
    (
        f"{KC}_newactivecontrollerscount",
        "NewActiveControllersCount: times this controller became the active one",
        "new_active_controllers",
    ),
)


class _StatsCollector(Collector):
    def __init__(self, stats: Callable[[], ControllerStats], metrics: ControllerMetrics) -> None:
        self._stats = stats
        self._metrics = metrics

    def collect(self) -> Iterator[GaugeMetricFamily]:
        s = self._stats()
        for name, doc, attr in _GAUGES:
            yield GaugeMetricFamily(name, doc, value=float(getattr(s, attr)))
        for name, doc, attr in _TALLIES:
            yield GaugeMetricFamily(name, doc, value=float(getattr(self._metrics, attr).value))

    def describe(self) -> Iterable[GaugeMetricFamily]:
        return [GaugeMetricFamily(name, doc) for name, doc, _ in (*_GAUGES, *_TALLIES)]


# Kafka's controller histograms are in milliseconds.
_MS_BUCKETS = (0.1, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000)


class ControllerMetrics:
    def __init__(self, registry: CollectorRegistry, stats: Callable[[], ControllerStats]) -> None:
        # Two observations per event, every heartbeat included: plain numbers, exported at scrape time.
        self.event_queue_time = LabelledHistogram(
            "kafka_controller_controllereventmanager_eventqueuetimems",
            "EventQueueTimeMs: time an event waited in the queue before it ran",
            ["event"],
            buckets=_MS_BUCKETS,
            registry=registry,
        )
        self.event_processing_time = LabelledHistogram(
            "kafka_controller_controllereventmanager_eventqueueprocessingtimems",
            "EventQueueProcessingTimeMs: time an event ran on the queue",
            ["event"],
            buckets=(0.05, *_MS_BUCKETS),
            registry=registry,
        )
        self.records_appended = Counter(
            f"{PREFIX}_records_appended",
            "Metadata records appended to the log, by record type",
            ["type"],
            registry=registry,
        )
        self.unclean_leader_elections = Counter(
            "kafka_controller_controllerstats_uncleanleaderelections",
            "UncleanLeaderElectionsPerSec: leaders elected from outside the ISR",
            registry=registry,
        )
        self.timed_out_heartbeats = _Tally()
        self.new_active_controllers = _Tally()
        self.snapshots = Counter(f"{PREFIX}_snapshots", "Metadata snapshots written", registry=registry)
        self.commit_batches = Counter(
            f"{PREFIX}_commit_fsyncs", "Group commits (one fsync each) of the metadata log", registry=registry
        )
        registry.register(_StatsCollector(stats, self))
        self._event_children: dict[str, tuple[HistogramSeries, HistogramSeries]] = {}

    def observe_event(self, name: str, queued_s: float, ran_s: float) -> None:
        # Looking up labelled children costs more than observing; events have a handful of names.
        children = self._event_children.get(name)
        if children is None:
            children = (self.event_queue_time.labels(name), self.event_processing_time.labels(name))
            self._event_children[name] = children
        children[0].observe(queued_s * 1000)
        children[1].observe(ran_s * 1000)

    def count_records(self, records: Sequence[Any]) -> None:
        """Records the queue just appended (ApiMessageAndVersion)."""
        messages = [getattr(r, "message", r) for r in records]
        # Counted by type, named once per type: a dir failure appends 100,000 records.
        by_type = Tally(map(type, messages))
        for kind, n in by_type.items():
            self.records_appended.labels(kind.__name__).inc(n)
        # A leader elected from outside the ISR is the one change that sets LeaderRecoveryState RECOVERING.
        recovering = LeaderRecoveryState.RECOVERING
        unclean = (
            sum(
                1
                for m in messages
                if type(m) is PartitionChangeRecord and m.LeaderRecoveryState == recovering
            )
            if PartitionChangeRecord in by_type
            else 0
        )
        if unclean:
            self.unclean_leader_elections.inc(unclean)
