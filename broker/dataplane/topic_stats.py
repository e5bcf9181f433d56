"""Kafka's BrokerTopicMetrics meters (BytesInPerSec, MessagesInPerSec, ...), per topic and for all topics,
and the counts behind ReplicaManager's ISR meters (IsrShrinksPerSec, IsrExpandsPerSec, FailedIsrUpdatesPerSec).

Kafka keeps one MBean per topic (`...,name=BytesInPerSec,topic=t`) and one without the tag for all
topics; the JMX exporter turns both into `kafka_server_brokertopicmetrics_bytesin_total`, with and
without a `topic` label. Here the all-topics series carries `topic=""`, which Prometheus stores as no
label at all, so queries written for Kafka find the same series.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass

from prometheus_client.core import CounterMetricFamily

PREFIX = "kafka_server_brokertopicmetrics"

# (meter, help): the meter's name without PerSec, as the exporter's rules strip it.
METERS: tuple[tuple[str, str], ...] = (
    ("bytesin", "BytesInPerSec: bytes appended by producers"),
    ("messagesin", "MessagesInPerSec: records appended by producers"),
    ("bytesout", "BytesOutPerSec: record bytes sent to consumers"),
    ("replicationbytesout", "ReplicationBytesOutPerSec: record bytes sent to follower replicas"),
    ("totalproducerequests", "TotalProduceRequestsPerSec: partition appends asked for by producers"),
    ("failedproducerequests", "FailedProduceRequestsPerSec: partition appends refused or failed"),
    ("totalfetchrequests", "TotalFetchRequestsPerSec: partition reads asked for"),
    ("failedfetchrequests", "FailedFetchRequestsPerSec: partition reads answered with an error"),
)


class BrokerTopicStats:
    def __init__(self) -> None:
        self._counts: dict[str, defaultdict[str, int]] = {m: defaultdict(int) for m, _ in METERS}

    def mark(self, meter: str, topic: str | None, n: int = 1) -> None:
        """Count `n` for `topic` and for all topics; None: for all topics only."""
        counts = self._counts[meter]
        if topic:
            counts[topic] += n
        counts[""] += n

    def produced(self, topic: str, size: int, records: int) -> None:
        self.mark("bytesin", topic, size)
        self.mark("messagesin", topic, records)

    def collect(self) -> Iterator[CounterMetricFamily]:
        for meter, doc in METERS:
            family = CounterMetricFamily(f"{PREFIX}_{meter}", doc, labels=["topic"])
            counts = self._counts[meter]
            family.add_metric([""], counts.get("", 0))
            for topic in sorted(counts):
                if topic:
                    family.add_metric([topic], counts[topic])
            yield family


@dataclass
class IsrStats:
    """ISR changes this broker made as leader, as the controller committed or refused them."""

    shrinks: int = 0
    expands: int = 0
    failed_updates: int = 0
