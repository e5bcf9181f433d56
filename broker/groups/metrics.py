"""The group coordinator's gauges on /metrics, read at scrape time, under the JMX exporter's names
for Kafka's GroupMetadataManager MBeans (docs/metrics.md):

- `kafka_coordinator_group_groupmetadatamanager_numgroups` – NumGroups coordinated here;
- `..._numgroupsbystate{state}` – Kafka's NumGroupsStable, NumGroupsPreparingRebalance,
  NumGroupsCompletingRebalance, NumGroupsEmpty and NumGroupsDead, as one series per state;
- `..._numoffsets` – NumOffsets: committed offsets held;
- `kraftpy_group_coordinator_loading_partitions` – __consumer_offsets partitions being read back.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from broker.groups.group import GroupState

if TYPE_CHECKING:
    from broker.groups.coordinator import GroupCoordinator

GMM = "kafka_coordinator_group_groupmetadatamanager"


class GroupCollector(Collector):
    def __init__(self, core: GroupCoordinator) -> None:
        self.core = core

    def collect(self) -> Iterator[GaugeMetricFamily]:
        groups = list(self.core.groups.values())
        yield GaugeMetricFamily(
            f"{GMM}_numgroups", "NumGroups: groups coordinated by this broker", len(groups)
        )
        by_state = GaugeMetricFamily(
            f"{GMM}_numgroupsbystate", "NumGroups<State>: groups coordinated here, by state", labels=["state"]
        )
        for state in GroupState:
            by_state.add_metric([str(state)], sum(1 for g in groups if g.state is state))
        yield by_state
        yield GaugeMetricFamily(
            f"{GMM}_numoffsets", "NumOffsets: committed offsets held", sum(len(g.offsets) for g in groups)
        )
        yield GaugeMetricFamily(
            "kraftpy_group_coordinator_loading_partitions",
            "__consumer_offsets partitions this broker leads and is still reading back",
            len(self.core.loading),
        )


def register(registry: CollectorRegistry, core: GroupCoordinator) -> None:
    registry.register(GroupCollector(core))
