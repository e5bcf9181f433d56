"""The data plane's gauges on /metrics, named after Kafka's ReplicaManager MBeans, read at scrape time:

- `kraftpy_dataplane_leader_count` – LeaderCount;
- `kraftpy_dataplane_partition_count` – PartitionCount (replicas this broker serves, leader or follower);
- `kraftpy_dataplane_under_replicated_partitions` – UnderReplicatedPartitions (led here, ISR < replicas);
- `kraftpy_dataplane_under_min_isr_partition_count` – UnderMinIsrPartitionCount;
- `kraftpy_dataplane_at_min_isr_partition_count` – AtMinIsrPartitionCount;
- `kraftpy_dataplane_produce_purgatory_size` – acks=all produces waiting for the high watermark.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from broker.dataplane.partition import Role

if TYPE_CHECKING:
    from broker.dataplane.replica_manager import ReplicaManager

PREFIX = "kraftpy_dataplane"


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
            ("leader_count", "LeaderCount: partitions led by this broker", leaders),
            ("partition_count", "PartitionCount: replicas served here as leader or follower", serving),
            ("under_replicated_partitions", "UnderReplicatedPartitions: led here with ISR < replicas", under),
            (
                "under_min_isr_partition_count",
                "UnderMinIsrPartitionCount: led here with ISR < min.insync.replicas",
                under_min,
            ),
            (
                "at_min_isr_partition_count",
                "AtMinIsrPartitionCount: led here with ISR = min.insync.replicas",
                at_min,
            ),
            (
                "produce_purgatory_size",
                "acks=all produce requests waiting for the high watermark",
                len(rm.purgatory),
            ),
        ):
            yield GaugeMetricFamily(f"{PREFIX}_{name}", doc, value=value)


def register(registry: CollectorRegistry, replicas: ReplicaManager) -> None:
    registry.register(DataPlaneCollector(replicas))
