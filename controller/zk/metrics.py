"""The ZooKeeper-mode controller's gauges, under the KRaft controller's names (Kafka's
KafkaController MBeans have the same names in both modes, see controller.metrics), read at scrape time.

Every broker exports them: 0 (and the cluster-wide counts 0) on brokers that are not controller, so
that summing ActiveControllerCount over the cluster finds exactly one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from controller.metrics import KC
from controller.zk.core import ZkControllerCore
from kraftpy.metadata.enums import ZkMigrationState


class _Collector(Collector):
    def __init__(self, core: Callable[[], ZkControllerCore | None]) -> None:
        self._core = core

    def collect(self) -> Iterator[GaugeMetricFamily]:
        core = self._core()
        active = core is not None
        values = (
            (f"{KC}_activecontrollercount", "ActiveControllerCount: 1 on the active controller", int(active)),
            (
                f"{KC}_offlinepartitionscount",
                "OfflinePartitionsCount: partitions without a leader",
                core.offline_partition_count() if core else 0,
            ),
            (
                f"{KC}_preferredreplicaimbalancecount",
                "PreferredReplicaImbalanceCount: partitions not led by their preferred (first) replica",
                core.preferred_replica_imbalance_count() if core else 0,
            ),
            (f"{KC}_globaltopiccount", "GlobalTopicCount", len(core.topics) if core else 0),
            (
                f"{KC}_globalpartitioncount",
                "GlobalPartitionCount",
                sum(len(t.partitions) for t in core.topics.values()) if core else 0,
            ),
            (f"{KC}_activebrokercount", "ActiveBrokerCount: live brokers", len(core.live) if core else 0),
            (
                f"{KC}_zkmigrationstate",
                "ZkMigrationState: 4 (ZK) on a ZooKeeper-mode controller",
                int(ZkMigrationState.ZK) if active else 0,
            ),
        )
        for name, doc, value in values:
            yield GaugeMetricFamily(name, doc, value=float(value))


def register(registry: CollectorRegistry, core: Callable[[], ZkControllerCore | None]) -> None:
    registry.register(_Collector(core))
