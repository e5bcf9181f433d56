"""Producer and consumer throughput runs (kafka-producer-perf-test / kafka-consumer-perf-test).

`produce_perf` sends `num_records` records of `record_size` random capital letters (as
kafka-producer-perf-test does, so a console consumer prints them) as fast as the producer
takes them (or at `throughput` records/s), timing each record from `send` to its delivery report;
`consume_perf` reads `messages` records from the beginning. Both report through a callback so a
CLI can draw a progress line and a benchmark can just collect the result.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from tools.client.consumer import Consumer
from tools.client.producer import Producer, RecordFuture


@dataclass
class ProduceStats:
    target: int
    record_size: int
    started: float = field(default_factory=time.monotonic)
    sent: int = 0
    acked: int = 0
    failed: int = 0
    latencies_ms: list[float] = field(default_factory=list)
    finished: float | None = None
    first_error: str | None = None

    @property
    def elapsed(self) -> float:
        return (self.finished or time.monotonic()) - self.started

    @property
    def records_per_sec(self) -> float:
        return self.acked / self.elapsed if self.elapsed > 0 else 0.0

    @property
    def mb_per_sec(self) -> float:
        return self.records_per_sec * self.record_size / (1024 * 1024)

    def percentile(self, q: float) -> float:
        if not self.latencies_ms:
            return 0.0
        ordered = sorted(self.latencies_ms)
        index = min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))
        return ordered[index]

    @property
    def avg_latency_ms(self) -> float:
        return sum(self.latencies_ms) / len(self.latencies_ms) if self.latencies_ms else 0.0

    @property
    def max_latency_ms(self) -> float:
        return max(self.latencies_ms, default=0.0)

    def summary(self) -> str:
        """Kafka's final line."""
        return (
            f"{self.acked} records sent, {self.records_per_sec:.1f} records/sec ({self.mb_per_sec:.2f} MB/sec), "
            f"{self.avg_latency_ms:.2f} ms avg latency, {self.max_latency_ms:.2f} ms max latency, "
            f"{self.percentile(0.5):.0f} ms 50th, {self.percentile(0.95):.0f} ms 95th, "
            f"{self.percentile(0.99):.0f} ms 99th, {self.percentile(0.999):.0f} ms 99.9th."
        )


async def produce_perf(
    producer: Producer,
    topic: str,
    num_records: int,
    record_size: int,
    *,
    throughput: float = -1,
    on_progress: Callable[[ProduceStats], None] | None = None,
    progress_interval_s: float = 0.5,
) -> ProduceStats:
    payloads = [_letters(record_size) for _ in range(min(num_records, 64))] or [b""]
    stats = ProduceStats(num_records, record_size)
    sent_at: list[float] = []
    futures: list[RecordFuture] = []
    next_report = time.monotonic() + progress_interval_s

    def batch_done(first: int, fut: RecordFuture) -> None:
        # Registered on the first record of each batch. Keyless records fill one batch at a time,
        # so the batch holds the `batch_records` records sent from `first` on.
        error = fut.exception()
        n = fut.batch_records
        if error is not None:
            stats.failed += n
            if stats.first_error is None:
                stats.first_error = str(error)
            return
        stats.acked += n
        acked = fut.acked_at
        stats.latencies_ms.extend((acked - t) * 1000 for t in sent_at[first : first + n])

    stats.started = time.monotonic()
    for i in range(num_records):
        if throughput > 0:
            ahead = stats.started + i / throughput - time.monotonic()
            if ahead > 0:
                await asyncio.sleep(ahead)
        now = time.monotonic()
        fut = await producer.send(topic, payloads[i % len(payloads)])
        stats.sent += 1
        sent_at.append(now)
        futures.append(fut)
        if fut.first_in_batch:
            fut.add_done_callback(functools.partial(batch_done, i))
        if on_progress is not None and now >= next_report:
            on_progress(stats)
            next_report = now + progress_interval_s
        if i % 256 == 0:
            await asyncio.sleep(0)  # let delivery reports in
    flush = asyncio.ensure_future(producer.flush())
    while not flush.done():
        await asyncio.wait({flush}, timeout=progress_interval_s)
        if on_progress is not None:
            on_progress(stats)
    await flush
    for fut in futures:
        with contextlib.suppress(Exception):
            await fut
    stats.finished = time.monotonic()
    return stats


@dataclass
class ConsumeStats:
    started: float = field(default_factory=time.monotonic)
    records: int = 0
    bytes: int = 0
    finished: float | None = None

    @property
    def elapsed(self) -> float:
        return (self.finished or time.monotonic()) - self.started

    def summary(self) -> str:
        """Kafka's columns: data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec."""
        mb = self.bytes / (1024 * 1024)
        secs = max(self.elapsed, 1e-9)
        return (
            f"{self.records} records, {mb:.4f} MB in {secs:.3f} s: "
            f"{mb / secs:.4f} MB.sec, {self.records / secs:.1f} nMsg.sec"
        )


async def consume_perf(
    consumer: Consumer,
    topic: str,
    messages: int,
    *,
    timeout_ms: int = 10000,
    on_progress: Callable[[ConsumeStats], None] | None = None,
) -> ConsumeStats:
    await consumer.metadata.refresh([topic])
    n = consumer.metadata.partition_count(topic) or 0
    consumer.assign([(topic, p) for p in range(n)])
    await consumer.seek_to_beginning()
    stats = ConsumeStats()
    last = time.monotonic()
    while stats.records < messages:
        records = await consumer.poll(timeout_ms=500, max_records=messages - stats.records)
        now = time.monotonic()
        if records:
            last = now
        elif (now - last) * 1000 > timeout_ms:
            break
        stats.records += len(records)
        stats.bytes += sum(len(r.value or b"") + len(r.key or b"") for r in records)
        if on_progress is not None:
            on_progress(stats)
    stats.finished = time.monotonic()
    return stats


def _letters(size: int) -> bytes:
    return bytes(random.choices(_CAPITALS, k=size))


_CAPITALS = range(ord("A"), ord("Z") + 1)
