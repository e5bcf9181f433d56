"""The broker's metrics on /metrics, read from a `BrokerStats` snapshot at scrape time, under the names
the Prometheus JMX exporter's common Kafka rules give Kafka's MBeans (docs/metrics.md):

- `kafka_log_logmanager_offlinelogdirectorycount` – LogManager OfflineLogDirectoryCount;
- `kafka_log_logmanager_logdirectoryoffline{logDirectory, directory_id}` – LogManager LogDirectoryOffline,
  one per configured log dir (1 offline, 0 online; dirs unusable at startup have no id: "");
- `kafka_server_replicamanager_offlinereplicacount` – ReplicaManager OfflineReplicaCount;
- `kafka_server_assignmentsmanager_queuedreplicatodirassignments` – AssignmentsManager
  QueuedReplicaToDirAssignments;
- `kafka_server_replicafetchermanager_failedpartitionscount{clientId="Replica"}` – ReplicaFetcherManager
  FailedPartitionsCount: here, followed partitions whose fetched data fails its checks (retried with
  backoff; /healthz names them and why);
- `kafka_server_replicaalterlogdirsmanager_maxlag{clientId="ReplicaAlterLogDirs"}` and
  `..._failedpartitionscount` – ReplicaAlterLogDirsManager MaxLag (offsets the furthest-behind
  future log trails its current one) and FailedPartitionsCount (moves that failed on an error other
  than a dir failure);
- `kafka_server_kafkaserver_brokerstate` – KafkaServer BrokerState;
- kraftpy's own: dirs failed since start (a counter), fencing, metadata offset, hosted replicas,
  AssignReplicasToDirs requests sent.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

if TYPE_CHECKING:
    from broker.log_dir_failure import LogDirFailure

PREFIX = "kraftpy_broker"


@dataclass(frozen=True)
class DirStat:
    path: str
    directory_id: str
    offline: bool


@dataclass(frozen=True)
class BrokerStats:
    state: int = 0
    fenced: bool = True
    metadata_offset: int = -1
    offline_replicas: int = 0
    queued_assignments: int = 0
    replicas: int = 0
    assignment_requests: int = 0
    assignments_sent: int = 0
    dirs: tuple[DirStat, ...] = field(default_factory=tuple)
    failed_partitions: int = 0
    move_max_lag: int = 0
    move_failed_partitions: int = 0
    moves_in_progress: int = 0


class _Collector(Collector):
    def __init__(self, stats: Callable[[], BrokerStats]) -> None:
        self._stats = stats

    def collect(self) -> Iterator[GaugeMetricFamily]:
        s = self._stats()
        simple = (
            (
                "kafka_log_logmanager_offlinelogdirectorycount",
                "OfflineLogDirectoryCount: log dirs that are offline",
                sum(1 for d in s.dirs if d.offline),
            ),
            (
                "kafka_server_replicamanager_offlinereplicacount",
                "OfflineReplicaCount: hosted replicas that are offline",
                s.offline_replicas,
            ),
            (
                "kafka_server_assignmentsmanager_queuedreplicatodirassignments",
                "QueuedReplicaToDirAssignments: directory assignments queued or in flight",
                s.queued_assignments,
            ),
            ("kafka_server_kafkaserver_brokerstate", "BrokerState byte value (3 RUNNING)", s.state),
            (f"{PREFIX}_fenced", "1 while the controller reports this broker fenced", int(s.fenced)),
            (f"{PREFIX}_metadata_offset", "Offset of the newest metadata record applied", s.metadata_offset),
            (f"{PREFIX}_hosted_replicas", "Replicas the metadata places on this broker", s.replicas),
            (
                f"{PREFIX}_replica_moves_in_progress",
                "Intra-broker replica moves under way",
                s.moves_in_progress,
            ),
            (
                f"{PREFIX}_assign_replicas_to_dirs_requests",
                "AssignReplicasToDirs requests sent since start",
                s.assignment_requests,
            ),
            (
                f"{PREFIX}_assign_replicas_to_dirs_assignments",
                "Assignments carried by those requests",
                s.assignments_sent,
            ),
        )
        for name, doc, value in simple:
            g = GaugeMetricFamily(name, doc)
            g.add_metric([], value)
            yield g
        failed = GaugeMetricFamily(
            "kafka_server_replicafetchermanager_failedpartitionscount",
            "FailedPartitionsCount: followed partitions whose fetched data fails its checks",
            labels=["clientId"],
        )
        failed.add_metric(["Replica"], s.failed_partitions)
        yield failed
        for name, doc, value in (
            (
                "maxlag",
                "MaxLag: offsets the furthest-behind future log trails its current log",
                s.move_max_lag,
            ),
            (
                "failedpartitionscount",
                "FailedPartitionsCount: intra-broker moves that failed on an error other than a dir failure",
                s.move_failed_partitions,
            ),
        ):
            g = GaugeMetricFamily(f"kafka_server_replicaalterlogdirsmanager_{name}", doc, labels=["clientId"])
            g.add_metric(["ReplicaAlterLogDirs"], value)
            yield g
        per_dir = GaugeMetricFamily(
            "kafka_log_logmanager_logdirectoryoffline",
            "LogDirectoryOffline: 1 if the log dir is offline, else 0",
            labels=["logDirectory", "directory_id"],
        )
        for d in s.dirs:
            per_dir.add_metric([d.path, d.directory_id], int(d.offline))
        yield per_dir


class BrokerMetrics:
    def __init__(self, registry: CollectorRegistry, stats: Callable[[], BrokerStats]) -> None:
        registry.register(_Collector(stats))
        self.dir_failures = Counter(
            f"{PREFIX}_log_directory_failures",
            "Log dirs that failed while running",
            ["path"],
            registry=registry,
        )

    def on_dir_failure(self, failure: LogDirFailure) -> None:
        """Subscribed to the LogDirFailureChannel."""
        self.dir_failures.labels(failure.path).inc()
