"""The data plane's gauges on /metrics, read at scrape time, under the JMX exporter's names for
Kafka's ReplicaManager MBeans (docs/metrics.md):

- `kafka_server_replicamanager_leadercount` – LeaderCount;
- `kafka_server_replicamanager_partitioncount` – PartitionCount (replicas served, leader or follower);
- `kafka_server_replicamanager_underreplicatedpartitions` – UnderReplicatedPartitions (led here, ISR < replicas);
- `kafka_server_replicamanager_underminisrpartitioncount` – UnderMinIsrPartitionCount;
- `kafka_server_replicamanager_atminisrpartitioncount` – AtMinIsrPartitionCount;
- `kafka_server_delayedoperationpurgatory_purgatorysize{delayedOperation="Produce"}` – acks=all
  produces waiting for the high watermark;
- `kafka_server_brokertopicmetrics_*_total{topic}` – BrokerTopicMetrics (see topic_stats);
- `kafka_log_log_size`, `_logstartoffset`, `_logendoffset`, `_numlogsegments{topic,partition}` – the
  Log MBeans of each replica whose log is open here (a replica not read or written since the broker
  started has no series until it is).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from broker.dataplane.partition import Role

if TYPE_CHECKING:
    from broker.dataplane.replica_manager import ReplicaManager

RM = "kafka_server_replicamanager"


class DataPlaneCollector(Collector):
    def __init__(self, replicas: ReplicaManager) -> None:
        self.replicas = replicas

    def collect(self) -> Iterator[GaugeMetricFamily]:
        rm = self.replicas
        leaders = under = under_min = at_min = serving = 0
        for hp in list(rm.partitions.values()):
            s = hp.state
            if s.role in (Role.LEADER, Role.FOLLOWER):
                serving += 1
            if not s.is_leader:
                continue
            leaders += 1
            isr = len(s.isr)
            if isr < len(s.replicas):
                under += 1
            min_isr = rm.min_isr(hp)
            if isr < min_isr:
                under_min += 1
            elif isr == min_isr:
                at_min += 1
        for name, doc, value in (
            (f"{RM}_leadercount", "LeaderCount: partitions led by this broker", leaders),
            (f"{RM}_partitioncount", "PartitionCount: replicas served here as leader or follower", serving),
            (
                f"{RM}_underreplicatedpartitions",
                "UnderReplicatedPartitions: led here with ISR < replicas",
                under,
            ),
            (
                f"{RM}_underminisrpartitioncount",
                "UnderMinIsrPartitionCount: led here with ISR < min.insync.replicas",
                under_min,
            ),
            (
                f"{RM}_atminisrpartitioncount",
                "AtMinIsrPartitionCount: led here with ISR = min.insync.replicas",
                at_min,
            ),
        ):
            yield GaugeMetricFamily(name, doc, value=value)
        purgatory = GaugeMetricFamily(
            "kafka_server_delayedoperationpurgatory_purgatorysize",
            "PurgatorySize: acks=all produce requests waiting for the high watermark",
            labels=["delayedOperation"],
        )
        purgatory.add_metric(["Produce"], len(rm.purgatory))
        yield purgatory
        yield from rm.topic_stats.collect()
        isr = rm.isr_stats
        for name, doc, value in (
            ("isrshrinks", "IsrShrinksPerSec: ISR shrinks committed", isr.shrinks),
            ("isrexpands", "IsrExpandsPerSec: ISR expansions committed", isr.expands),
            (
                "failedisrupdates",
                "FailedIsrUpdatesPerSec: ISR changes the controller refused",
                isr.failed_updates,
            ),
        ):
            yield CounterMetricFamily(f"{RM}_{name}", doc, value=value)
        yield from _log_gauges(rm)


def _log_gauges(rm: ReplicaManager) -> Iterator[GaugeMetricFamily]:
    labels = ["topic", "partition"]
    families = {
        "size": GaugeMetricFamily("kafka_log_log_size", "Size: bytes of the replica's log", labels=labels),
        "start": GaugeMetricFamily("kafka_log_log_logstartoffset", "LogStartOffset", labels=labels),
        "end": GaugeMetricFamily("kafka_log_log_logendoffset", "LogEndOffset", labels=labels),
        "segments": GaugeMetricFamily("kafka_log_log_numlogsegments", "NumLogSegments", labels=labels),
    }
    for hp in list(rm.partitions.values()):
        local = hp.local
        if local is None:
            continue
        lg = local.log
        key = [hp.tp.topic_name, str(hp.tp.partition)]
        # Plain reads of in-memory figures the dir's thread keeps up to date; no I/O at scrape time.
        families["size"].add_metric(key, lg.size_bytes)
        families["start"].add_metric(key, lg.log_start_offset)
        families["end"].add_metric(key, lg.log_end_offset)
        families["segments"].add_metric(key, len(lg.segment_base_offsets))
    yield from families.values()


def register(registry: CollectorRegistry, replicas: ReplicaManager) -> None:
    registry.register(DataPlaneCollector(replicas))
