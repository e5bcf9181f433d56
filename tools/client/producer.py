"""An asyncio producer: batching by linger and size, idempotence on by default, retries that refresh
metadata, and a delivery report (offset) for every record.

    async with Producer("127.0.0.1:9092", acks=-1) as p:
        fut = await p.send("orders", b"value", key=b"k")
        meta = await fut            # RecordMetadata(topic, partition, offset, timestamp_ms)

`send` returns a RecordFuture: awaitable, with done(), result(), exception() and
add_done_callback() like an asyncio future, but sharing one completion per batch, so a batch of
thousands of records is acknowledged without thousands of loop callbacks.

How it keeps "exactly once per partition" across leader changes and disk failures:
- one batch in flight per partition, so batches reach the log in the order they were made;
- with idempotence, the producer gets an id from a broker (InitProducerId) and gives each batch
  the next sequence of its partition the first time it is sent; a retry resends the same bytes, so
  a leader that already has the batch (it was written, the answer was lost) answers with its
  original offset instead of writing it again;
- NOT_LEADER_OR_FOLLOWER, KAFKA_STORAGE_ERROR, timeouts, connection errors and the other
  retriable errors refresh the metadata and send again after `retry_backoff_ms`, until
  `delivery_timeout_ms` since the batch was made.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import time
from collections import deque
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any

import structlog

from protocol.errors import Errors, KafkaError
from protocol.record_batch import NO_PRODUCER_EPOCH, NO_PRODUCER_ID, NO_SEQUENCE
from protocol.rpc.init_producer_id import InitProducerIdRequest
from protocol.rpc.produce import ProduceRequest, ProduceResponse
from tools.client.cluster import ClusterMetadata, ConnectionPool
from tools.client.errors import RETRIABLE, ClientError, DeliveryError, as_error
from tools.client.partitioner import partition_for_key
from tools.client.records import Headers, ProducerRecord, build_batch, record_size

log = structlog.get_logger("tools.client.producer")


@dataclass(frozen=True, slots=True)
class RecordMetadata:
    topic: str
    partition: int
    offset: int
    """-1 with acks=0: the broker does not say."""
    timestamp_ms: int


@dataclass(frozen=True)
class ProducerConfig:
    acks: int = -1
    linger_ms: int = 5
    batch_size: int = 16384
    enable_idempotence: bool = True
    delivery_timeout_ms: int = 120_000
    request_timeout_ms: int = 30_000
    retry_backoff_ms: int = 100
    max_request_size: int = 1048576
    buffer_memory: int = 32 * 1024 * 1024
    max_block_ms: int = 60_000

    def __post_init__(self) -> None:
        if self.acks not in (-1, 0, 1):
            raise ValueError(f"acks must be -1 (all), 0 or 1, not {self.acks}")
        if self.enable_idempotence and self.acks != -1:
            raise ValueError("idempotence needs acks=all (-1); pass enable_idempotence=False for acks 0 or 1")
        if self.batch_size < 1 or self.linger_ms < 0:
            raise ValueError("batch_size must be positive and linger_ms not negative")


@dataclass(eq=False)
class _Batch:
    topic: str
    partition: int
    created: float
    records: list[ProducerRecord] = field(default_factory=list)
    result: BatchResult = field(default_factory=lambda: BatchResult())
    size: int = 0
    encoded: bytes | None = None
    base_sequence: int = NO_SEQUENCE
    attempts: int = 0
    sealed: bool = False
    resend_now: bool = False
    """The last answer named the partition's new leader (KIP-951): no backoff, no Metadata request."""
    sent_epoch: int = -1
    """The leader epoch the metadata gave when the batch was last sent."""
    sent_leader: int = -1
    """The broker the batch was last sent to."""
    behind: int = 0
    """Answers in a row from a leader whose metadata was older than ours (its hint named an older epoch)
    or that named itself at our epoch while still taking the leadership on."""


DeliveryCallback = Callable[[RecordMetadata | None, KafkaError | None], None]


class Producer:
    def __init__(
        self,
        bootstrap_servers: str | list[str],
        *,
        config: ProducerConfig | None = None,
        on_delivery: DeliveryCallback | None = None,
        **overrides: int | bool,
    ) -> None:
        base = config or ProducerConfig()
        if overrides:
            base = ProducerConfig(**{**base.__dict__, **overrides})  # type: ignore[arg-type]
        self.config = base
        self.on_delivery = on_delivery
        self.pool = ConnectionPool(timeout_s=self.config.request_timeout_ms / 1000 + 5)
        self.metadata = ClusterMetadata(bootstrap_servers, self.pool)
        self.producer_id = NO_PRODUCER_ID
        self.producer_epoch = NO_PRODUCER_EPOCH
        self._queues: dict[tuple[str, int], deque[_Batch]] = {}
        self._workers: dict[tuple[str, int], asyncio.Task[None]] = {}
        self._wakeups: dict[tuple[str, int], asyncio.Event] = {}
        self._next_sequence: dict[tuple[str, int], int] = {}
        self._sticky: dict[str, int] = {}
        self._round_robin = itertools.count()
        self._buffered = 0
        self._space = asyncio.Condition()
        self._flushing = 0
        self._closing = False
        self._started = False
        self._refreshing: asyncio.Task[None] | None = None
        self.stats = {"batches": 0, "requests": 0, "retries": 0, "errors": 0, "leader_hints": 0}

    async def __aenter__(self) -> Producer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> None:
        if self._started:
            return
        await self.metadata.refresh([])
        if self.config.enable_idempotence:
            await self._init_producer_id()
        self._started = True

    async def _init_producer_id(self) -> None:
        deadline = time.monotonic() + self.config.max_block_ms / 1000
        last: object = None
        while time.monotonic() < deadline:
            for url in self.metadata.urls():
                try:
                    resp = await self.pool.get(url).call("InitProducerId", InitProducerIdRequest())
                except KafkaError as e:
                    last = e
                    continue
                if resp.ErrorCode == 0:
                    self.producer_id, self.producer_epoch = resp.ProducerId, resp.ProducerEpoch
                    return
                last = as_error(resp.ErrorCode)
            await asyncio.sleep(self.config.retry_backoff_ms / 1000)
            with contextlib.suppress(KafkaError):
                await self.metadata.refresh([])
        raise ClientError(Errors.REQUEST_TIMED_OUT, f"no broker gave a producer id: {last}")

    # ---- sending ----------------------------------------------------------------------------------

    async def send(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        *,
        partition: int | None = None,
        headers: Headers | None = None,
        timestamp_ms: int | None = None,
    ) -> RecordFuture:
        """Queue a record; returns the future of its delivery report. Waits only for buffer space."""
        if self._closing:
            raise ClientError(Errors.INVALID_REQUEST, "the producer is closed")
        if not self._started:
            await self.start()
        size = record_size(key, value, headers) if headers else 21 + len(key or b"") + len(value or b"")
        if size + 61 > self.config.max_request_size:
            raise ClientError(
                Errors.MESSAGE_TOO_LARGE,
                f"record of {size} bytes exceeds max_request_size {self.config.max_request_size}",
            )
        rec = ProducerRecord(
            key, value, _now_ms() if timestamp_ms is None else timestamp_ms, headers or _NO_HEADERS
        )
        p = self._sticky.get(topic) if key is None and partition is None else None
        if p is None:
            p = await self._choose_partition(topic, key, partition)
        if self._buffered + size <= self.config.buffer_memory:
            self._buffered += size
        else:
            await self._reserve(size)
        sticky = key is None and partition is None
        limit = self.config.batch_size
        tp = (topic, p)
        queue = self._queues.setdefault(tp, deque())
        batch = queue[-1] if queue and not queue[-1].sealed else None
        if batch is not None and batch.records and batch.size + size > limit:
            batch.sealed = True
            batch = None
            if sticky:
                # Sticky partitioning: keyless records fill one partition's batch, then move on.
                self._sticky.pop(topic, None)
                p = await self._choose_partition(topic, None, None)
                tp = (topic, p)
                queue = self._queues.setdefault(tp, deque())
                batch = queue[-1] if queue and not queue[-1].sealed else None
                if batch is not None and batch.records and batch.size + size > limit:
                    batch.sealed = True
                    batch = None
        created = batch is None
        if batch is None:
            batch = _Batch(topic, p, time.monotonic())
            queue.append(batch)
        fut = RecordFuture(batch, len(batch.records))
        batch.records.append(rec)
        batch.size += size
        if batch.size >= limit:
            batch.sealed = True
            if sticky:
                self._sticky.pop(topic, None)
        worker = self._workers.get(tp)
        if worker is None or worker.done():
            self._ensure_worker(tp)
        if created or batch.sealed:
            # A new batch starts the worker's linger clock; a full one goes at once.
            self._wakeups[tp].set()
        return fut

    async def send_and_wait(
        self, topic: str, value: bytes | None, key: bytes | None = None, **kw: object
    ) -> RecordMetadata:
        fut = await self.send(topic, value, key, **kw)  # type: ignore[arg-type]
        return await fut

    async def flush(self) -> None:
        """Send everything queued now and wait for every delivery report."""
        pending = [b.result.waiter() for q in self._queues.values() for b in q]
        self._flushing += 1
        try:
            for ev in self._wakeups.values():
                ev.set()
            if pending:
                await asyncio.gather(*pending, return_exceptions=True)
        finally:
            self._flushing -= 1

    async def close(self) -> None:
        if not self._started and not self._workers:
            await self.pool.close()
            return
        await self.flush()
        self._closing = True
        for ev in self._wakeups.values():
            ev.set()
        await asyncio.gather(*self._workers.values(), return_exceptions=True)
        if self._refreshing is not None:
            await asyncio.gather(self._refreshing, return_exceptions=True)
        await self.pool.close()

    async def _reserve(self, size: int) -> None:
        if self._buffered + size <= self.config.buffer_memory or self._buffered == 0:
            self._buffered += size
            return
        async with self._space:
            await asyncio.wait_for(
                self._space.wait_for(lambda: self._buffered + size <= self.config.buffer_memory),
                self.config.max_block_ms / 1000,
            )
            self._buffered += size

    async def _release(self, size: int) -> None:
        self._buffered -= size
        async with self._space:
            self._space.notify_all()

    async def _choose_partition(self, topic: str, key: bytes | None, partition: int | None) -> int:
        count = self.metadata.partition_count(topic)
        deadline = time.monotonic() + self.config.max_block_ms / 1000
        while count is None:
            await self.metadata.refresh([topic, *self.metadata.topics])
            count = self.metadata.partition_count(topic)
            if count is None:
                if time.monotonic() > deadline:
                    raise ClientError(
                        Errors.UNKNOWN_TOPIC_OR_PARTITION, f"topic {topic} not found in metadata"
                    )
                await asyncio.sleep(self.config.retry_backoff_ms / 1000)
        if partition is not None:
            if not 0 <= partition < count:
                raise ClientError(
                    Errors.UNKNOWN_TOPIC_OR_PARTITION,
                    f"{topic} has no partition {partition} (it has {count})",
                )
            return partition
        if key is not None:
            return partition_for_key(key, count)
        sticky = self._sticky.get(topic)
        if sticky is None or sticky >= count:
            sticky = self._sticky[topic] = next(self._round_robin) % count
        return sticky

    # ---- the per-partition sender -----------------------------------------------------------------

    def _ensure_worker(self, tp: tuple[str, int]) -> None:
        if tp not in self._wakeups:
            self._wakeups[tp] = asyncio.Event()
        task = self._workers.get(tp)
        if task is None or task.done():
            self._workers[tp] = asyncio.create_task(self._worker(tp), name=f"producer-{tp[0]}-{tp[1]}")

    async def _worker(self, tp: tuple[str, int]) -> None:
        queue = self._queues[tp]
        wake = self._wakeups[tp]
        linger = self.config.linger_ms / 1000
        while True:
            if not queue:
                if self._closing:
                    return
                wake.clear()
                await wake.wait()
                continue
            batch = queue[0]
            ready = batch.sealed or self._flushing or self._closing or len(queue) > 1
            if not ready:
                wait = batch.created + linger - time.monotonic()
                if wait > 0:
                    wake.clear()
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(wake.wait(), wait)
                    continue
            batch.sealed = True
            await self._deliver(batch)
            queue.popleft()
            await self._release(batch.size)

    def _encode(self, batch: _Batch) -> bytes:
        if batch.encoded is None:
            tp = (batch.topic, batch.partition)
            if self.config.enable_idempotence:
                seq = self._next_sequence.get(tp, 0)
                batch.base_sequence = seq
                self._next_sequence[tp] = increment_sequence(seq, len(batch.records))
                batch.encoded = build_batch(
                    batch.records,
                    producer_id=self.producer_id,
                    producer_epoch=self.producer_epoch,
                    base_sequence=seq,
                )
            else:
                batch.encoded = build_batch(batch.records)
            self.stats["batches"] += 1
        return batch.encoded

    async def _deliver(self, batch: _Batch) -> None:
        cfg = self.config
        deadline = batch.created + cfg.delivery_timeout_ms / 1000
        last: KafkaError | None = None
        while True:
            if time.monotonic() > deadline:
                self._fail(
                    batch,
                    DeliveryError(
                        last.code if last else Errors.REQUEST_TIMED_OUT,
                        f"{batch.topic}-{batch.partition}: not delivered within delivery_timeout_ms={cfg.delivery_timeout_ms}"
                        + (f" (last error: {last})" if last else ""),
                    ),
                )
                return
            if batch.attempts:
                self.stats["retries"] += 1
                if batch.resend_now:
                    batch.resend_now = False
                    self.stats["leader_hints"] += 1
                elif (
                    0 < batch.behind <= LAGGING_LEADER_RETRIES
                    and self._leader_epoch(batch) <= batch.sent_epoch
                ):
                    # The broker our metadata names leader has not heard it is one yet, or is still
                    # taking the leadership on (a produce carries no leader epoch for it to answer
                    # UNKNOWN_LEADER_EPOCH): ask it again shortly rather than back off and ask for
                    # Metadata.
                    await asyncio.sleep(LAGGING_LEADER_RETRY_MS / 1000)
                elif self._leader_epoch(batch) <= batch.sent_epoch:
                    # As Kafka's producer: back off unless the partition has a new leader since the
                    # batch was sent (another batch's answer or refresh may have brought it).
                    await asyncio.sleep(cfg.retry_backoff_ms / 1000)
                    await self._refresh_metadata(batch.topic)
            batch.attempts += 1
            batch.sent_epoch = self._leader_epoch(batch)
            batch.sent_leader = self._leader_id(batch)
            url = self.metadata.leader_url(batch.topic, batch.partition)
            if url is None:
                last = ClientError(
                    Errors.LEADER_NOT_AVAILABLE, f"no leader known for {batch.topic}-{batch.partition}"
                )
                continue
            data = self._encode(batch)
            req = ProduceRequest(
                Acks=cfg.acks,
                TimeoutMs=cfg.request_timeout_ms,
                TopicData=[
                    ProduceRequest.TopicProduceData(
                        Name=batch.topic,
                        PartitionData=[
                            ProduceRequest.PartitionProduceData(Index=batch.partition, Records=data)
                        ],
                    )
                ],
            )
            self.stats["requests"] += 1
            sent_ms = _now_ms()
            try:
                resp: ProduceResponse = await self.pool.get(url).call("Produce", req)
            except KafkaError as e:
                last = e
                if _TRACE is not None:
                    _trace(batch, sent_ms, url, e.code, None)
                continue
            code, base_offset, message, hint = _partition_result(resp, batch)
            if _TRACE is not None and (code is not Errors.NONE or batch.attempts > 1):
                _trace(batch, sent_ms, url, code, hint)
            moved = hint is not None and code in (Errors.NOT_LEADER_OR_FOLLOWER, Errors.FENCED_LEADER_EPOCH)
            # Behind: its metadata names an older leader. Taking over: it names itself, at the epoch
            # we sent for, but has not finished becoming the leader (its image moved between the
            # check and the answer). Either way it is about to lead.
            lagging = moved and (
                0 <= hint.LeaderEpoch < batch.sent_epoch
                or (hint.LeaderId == batch.sent_leader and hint.LeaderEpoch == batch.sent_epoch)
            )
            batch.behind = batch.behind + 1 if lagging else 0
            if moved:
                batch.resend_now = self.metadata.apply_leader_hint(
                    batch.topic, batch.partition, hint.LeaderId, hint.LeaderEpoch, resp.NodeEndpoints
                )
            if code in (Errors.NONE, Errors.DUPLICATE_SEQUENCE_NUMBER):
                self._complete(batch, base_offset if cfg.acks != 0 else -1)
                return
            last = ClientError(code, message or f"{batch.topic}-{batch.partition}: {code.name}")
            if code not in RETRIABLE:
                self._fail(batch, DeliveryError(code, last.message))
                return

    def _leader_epoch(self, batch: _Batch) -> int:
        p = self.metadata.partition(batch.topic, batch.partition)
        return -1 if p is None else p.leader_epoch

    def _leader_id(self, batch: _Batch) -> int:
        p = self.metadata.partition(batch.topic, batch.partition)
        return -1 if p is None else p.leader

    async def _refresh_metadata(self, topic: str) -> None:
        # One refresh at a time serves every partition that asked meanwhile.
        if self._refreshing is None or self._refreshing.done():
            self._refreshing = asyncio.create_task(self._do_refresh(topic))
        await asyncio.shield(self._refreshing)

    async def _do_refresh(self, topic: str) -> None:
        with contextlib.suppress(KafkaError):
            await self.metadata.refresh(sorted({topic, *self.metadata.topics}))

    def _complete(self, batch: _Batch, base_offset: int) -> None:
        batch.result.finish(base_offset, None)
        if self.on_delivery is not None:
            for i in range(len(batch.records)):
                self.on_delivery(RecordFuture(batch, i).result(), None)

    def _fail(self, batch: _Batch, error: KafkaError) -> None:
        self.stats["errors"] += 1
        batch.result.finish(-1, error)
        if self.on_delivery is not None:
            for _ in batch.records:
                self.on_delivery(None, error)


class BatchResult:
    """How one batch ended: its base offset or its error, shared by the futures of its records."""

    __slots__ = ("_waiter", "acked_at", "base_offset", "callbacks", "done", "error")

    def __init__(self) -> None:
        self.acked_at = 0.0
        self.done = False
        self.base_offset = -1
        self.error: KafkaError | None = None
        self.callbacks: list[tuple[Callable[[RecordFuture], object], RecordFuture]] = []
        self._waiter: asyncio.Future[None] | None = None

    def waiter(self) -> asyncio.Future[None]:
        if self._waiter is None:
            self._waiter = asyncio.get_running_loop().create_future()
            if self.done:
                self._waiter.set_result(None)
        return self._waiter

    def finish(self, base_offset: int, error: KafkaError | None) -> None:
        self.acked_at = time.monotonic()
        self.done = True
        self.base_offset = base_offset
        self.error = error
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)
        callbacks, self.callbacks = self.callbacks, []
        for fn, fut in callbacks:
            try:
                fn(fut)
            except Exception:
                log.exception("delivery callback failed")


class RecordFuture:
    """The delivery report of one record: awaitable; done(), result(), exception(), add_done_callback()."""

    __slots__ = ("_batch", "_index")

    def __init__(self, batch: _Batch, index: int) -> None:
        self._batch = batch
        self._index = index

    def done(self) -> bool:
        return self._batch.result.done

    def cancelled(self) -> bool:
        return False

    def exception(self) -> KafkaError | None:
        r = self._batch.result
        if not r.done:
            raise asyncio.InvalidStateError("the record is not acknowledged yet")
        return r.error

    def result(self) -> RecordMetadata:
        b = self._batch
        r = b.result
        if not r.done:
            raise asyncio.InvalidStateError("the record is not acknowledged yet")
        if r.error is not None:
            raise r.error
        offset = r.base_offset + self._index if r.base_offset >= 0 else -1
        return RecordMetadata(b.topic, b.partition, offset, b.records[self._index].timestamp_ms)

    @property
    def first_in_batch(self) -> bool:
        return self._index == 0

    @property
    def batch_records(self) -> int:
        """How many records share this record's batch (and its answer)."""
        return len(self._batch.records)

    @property
    def acked_at(self) -> float:
        """time.monotonic() when the batch was answered (0 before)."""
        return self._batch.result.acked_at

    def add_done_callback(self, fn: Callable[[RecordFuture], object]) -> None:
        """`fn(self)` once the batch is answered (at once, from the loop, if it already is)."""
        r = self._batch.result
        if r.done:
            asyncio.get_running_loop().call_soon(fn, self)
        else:
            r.callbacks.append((fn, self))

    def __await__(self) -> Generator[Any, None, RecordMetadata]:
        r = self._batch.result
        if not r.done:
            yield from r.waiter().__await__()
        return self.result()


def _partition_result(resp: ProduceResponse, batch: _Batch) -> tuple[Errors, int, str | None, Any]:
    """(error, base offset, message, CurrentLeader or None) of the batch's partition in `resp`."""
    for t in resp.Responses:
        if t.Name != batch.topic:
            continue
        for p in t.PartitionResponses:
            if p.Index == batch.partition:
                return as_error(p.ErrorCode), p.BaseOffset, p.ErrorMessage, p.CurrentLeader
    return Errors.UNKNOWN_SERVER_ERROR, -1, "the broker's answer did not name the partition", None


LAGGING_LEADER_RETRY_MS = 20
LAGGING_LEADER_RETRIES = 5
"""A leader whose metadata is behind ours, or that names itself but has not finished taking the
leadership on, is asked again every 20 ms, 5 times at most, before the usual backoff: brokers'
metadata is normally tens of ms apart."""

TRACE_ENV = "KRAFTPY_PRODUCE_TRACE"
_TRACE = os.environ.get(TRACE_ENV) or None
_TRACE_FILE: Any = None


def _trace(batch: _Batch, sent_ms: int, url: str, code: Errors, hint: Any) -> None:
    """When $KRAFTPY_PRODUCE_TRACE names a file, one line there per failed produce attempt and per
    retry's answer, for failover benchmarks to split a stall into its steps:
    `sent_ms answered_ms topic partition attempt url error leader_hint`."""
    global _TRACE_FILE
    leader = f"{hint.LeaderId}/{hint.LeaderEpoch}" if hint is not None and hint.LeaderId >= 0 else "-"
    if _TRACE_FILE is None:
        assert _TRACE is not None
        _TRACE_FILE = open(_TRACE, "a", buffering=1)  # noqa: SIM115 - open for the process's life
    _TRACE_FILE.write(
        f"{sent_ms} {_now_ms()} {batch.topic} {batch.partition} {batch.attempts} {url} {code.name} {leader}\n"
    )


INT32_MAX = (1 << 31) - 1
_NO_HEADERS: Headers = []  # shared by records without headers; never mutated


def increment_sequence(sequence: int, increment: int) -> int:
    """Sequences wrap from INT32_MAX back to 0, as the broker counts them."""
    if sequence > INT32_MAX - increment:
        return increment - (INT32_MAX - sequence) - 1
    return sequence + increment


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


__all__ = ["Producer", "ProducerConfig", "RecordFuture", "RecordMetadata"]
