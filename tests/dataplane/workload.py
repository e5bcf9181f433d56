"""A producer/consumer check of KIP-112's promise: no acknowledged message lost or duplicated.

`produce_with_fault` sends `count` records with acks=all and idempotence (values are their index,
so each is unique) and runs `fault` (blocking: kill a process, fail a disk) in a thread once
`fault_after` of them are acknowledged. `verify` reads the topic back and checks that every
acknowledged record is there exactly once, at the offset it was acknowledged with, that nothing is
there twice, and that each partition holds its records in the order they were sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from tools.client import ConsumerRecord, Producer, RecordMetadata, consume_all
from tools.client.producer import RecordFuture


@dataclass
class ProduceOutcome:
    acked: dict[int, RecordMetadata] = field(default_factory=dict)
    failed: dict[int, str] = field(default_factory=dict)
    fault_at: int | None = None
    seconds: float = 0.0
    retries: int = 0


async def produce_with_fault(
    bootstrap: str,
    topic: str,
    count: int,
    *,
    fault: Callable[[], None] | None = None,
    fault_after: int = 0,
    record_size: int = 32,
    producer_config: dict[str, int | bool] | None = None,
) -> ProduceOutcome:
    out = ProduceOutcome()
    pad = b"x" * max(0, record_size - 8)
    started = time.monotonic()
    fault_task: asyncio.Task[None] | None = None
    cfg: dict[str, int | bool] = {
        "acks": -1,
        "enable_idempotence": True,
        "linger_ms": 5,
        "batch_size": 64 * 1024,
        "retry_backoff_ms": 100,
        "request_timeout_ms": 15000,
        "delivery_timeout_ms": 120000,
    }
    cfg.update(producer_config or {})
    async with Producer(bootstrap, **cfg) as producer:  # type: ignore[arg-type]
        futures: list[RecordFuture] = []
        for i in range(count):
            futures.append(await producer.send(topic, b"%08d" % i + pad))
            if fault is not None and fault_task is None and len(futures) >= fault_after:
                # Wait until that many are acknowledged, so the fault hits a stream in motion.
                for fut in futures[:fault_after]:
                    with contextlib.suppress(Exception):
                        await fut
                out.fault_at = i
                fault_task = asyncio.create_task(asyncio.to_thread(fault))
            if i % 512 == 0:
                await asyncio.sleep(0)
        await producer.flush()
        results: list[RecordMetadata | BaseException] = [f.exception() or f.result() for f in futures]
        if fault_task is not None:
            await fault_task
        out.retries = producer.stats["retries"]
    for i, r in enumerate(results):
        if isinstance(r, BaseException):
            out.failed[i] = str(r)
        else:
            out.acked[i] = r
    out.seconds = time.monotonic() - started
    return out


def index_of(record: ConsumerRecord) -> int:
    assert record.value is not None
    return int(record.value[:8])


def verify(outcome: ProduceOutcome, records: list[ConsumerRecord]) -> None:
    seen = Counter(index_of(r) for r in records)
    twice = sorted(i for i, n in seen.items() if n > 1)
    assert not twice, f"{len(twice)} records read more than once, e.g. {twice[:10]}"
    where = {index_of(r): (r.partition, r.offset) for r in records}
    missing = sorted(i for i in outcome.acked if i not in where)
    assert not missing, f"{len(missing)} acknowledged records are missing, e.g. {missing[:10]}"
    moved = [
        (i, (m.partition, m.offset), where[i])
        for i, m in outcome.acked.items()
        if (m.partition, m.offset) != where[i]
    ]
    assert not moved, f"{len(moved)} records are not at the offset they were acknowledged with: {moved[:5]}"
    by_partition: dict[int, list[ConsumerRecord]] = {}
    for r in records:
        by_partition.setdefault(r.partition, []).append(r)
    for p, recs in by_partition.items():
        offsets = [r.offset for r in recs]
        assert offsets == sorted(offsets), f"partition {p}: offsets out of order"
        indexes = [index_of(r) for r in recs]
        assert indexes == sorted(indexes), f"partition {p}: records out of send order"


async def read_back(bootstrap: str, topic: str) -> list[ConsumerRecord]:
    return await consume_all(bootstrap, topic, timeout_s=120)
