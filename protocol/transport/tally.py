"""Labelled counters and histograms kept as plain numbers and turned into Prometheus families at
scrape time.

prometheus_client's own metrics take a lock and several calls per update: three of them per RPC
(requests, errors, latency) cost more than a heartbeat's answer is encoded in. These are updated by
an addition on the event loop, and export the series prometheus_client's Counter and Histogram
would: same names, labels, series order (first use), bucket bounds and values.

Not thread-safe: update them from one thread (the event loop), as every caller does.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Iterator, Sequence
from typing import Generic, TypeVar

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector
from prometheus_client.utils import INF, floatToGoString

S = TypeVar("S")


class CounterSeries:
    """One labelled series of a counter: add to `value`."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0


class _Labelled(Collector, Generic[S]):
    """A metric's series by label values, registered in `registry` to be collected at scrape time."""

    def __init__(
        self,
        name: str,
        documentation: str,
        labelnames: Sequence[str],
        registry: CollectorRegistry | None = None,
    ) -> None:
        self._name = name
        self._documentation = documentation
        self._labelnames = tuple(labelnames)
        self._series: dict[tuple[str, ...], S] = {}
        if registry is not None:
            registry.register(self)

    def _new_series(self) -> S:
        raise NotImplementedError

    def labels(self, *values: str) -> S:
        """The series of these label values (created empty on first use); keep it, it is not cheap."""
        key = tuple(str(v) for v in values)
        found = self._series.get(key)
        if found is None:
            if len(key) != len(self._labelnames):
                raise ValueError(f"{self._name}: {len(self._labelnames)} label values expected, got {key}")
            found = self._series[key] = self._new_series()
        return found


class LabelledCounter(_Labelled[CounterSeries]):
    """A counter with labels, exported as prometheus_client's `Counter` of the same name would be."""

    def _new_series(self) -> CounterSeries:
        return CounterSeries()

    def collect(self) -> Iterator[CounterMetricFamily]:
        family = CounterMetricFamily(self._name, self._documentation, labels=self._labelnames)
        for key, series in list(self._series.items()):
            family.add_metric(key, float(series.value))
        yield family

    def describe(self) -> Iterable[CounterMetricFamily]:
        return [CounterMetricFamily(self._name, self._documentation, labels=self._labelnames)]


class HistogramSeries:
    """One labelled series of a histogram."""

    __slots__ = ("bounds", "counts", "sum")

    def __init__(self, bounds: list[float]) -> None:
        self.bounds = bounds
        self.counts = [0] * len(bounds)
        self.sum = 0.0

    def observe(self, amount: float) -> None:
        """Count `amount` (a number, not NaN)."""
        self.sum += amount
        # The first bucket whose upper bound is >= amount, as Histogram.observe picks it.
        self.counts[bisect_left(self.bounds, amount)] += 1


class LabelledHistogram(_Labelled[HistogramSeries]):
    """A histogram with labels, exported as prometheus_client's `Histogram` of the same name and
    buckets would be."""

    def __init__(
        self,
        name: str,
        documentation: str,
        labelnames: Sequence[str],
        buckets: Sequence[float],
        registry: CollectorRegistry | None = None,
    ) -> None:
        bounds = [float(b) for b in buckets]
        if bounds != sorted(bounds):
            raise ValueError("Buckets not in sorted order")
        if bounds and bounds[-1] != INF:
            bounds.append(INF)
        if len(bounds) < 2:
            raise ValueError("Must have at least two buckets")
        if bounds[0] < 0:
            # Histogram leaves _sum out then; no caller needs that.
            raise ValueError("Buckets must not be negative")
        self._bounds = bounds
        self._les = [floatToGoString(b) for b in bounds]
        super().__init__(name, documentation, labelnames, registry)

    def _new_series(self) -> HistogramSeries:
        return HistogramSeries(self._bounds)

    def collect(self) -> Iterator[HistogramMetricFamily]:
        family = HistogramMetricFamily(self._name, self._documentation, labels=self._labelnames)
        for key, series in list(self._series.items()):
            cumulative = 0.0
            buckets: list[tuple[str, float]] = []
            for le, count in zip(self._les, series.counts, strict=True):
                cumulative += count
                buckets.append((le, cumulative))
            family.add_metric(key, buckets, series.sum)
        yield family

    def describe(self) -> Iterable[HistogramMetricFamily]:
        return [HistogramMetricFamily(self._name, self._documentation, labels=self._labelnames)]
