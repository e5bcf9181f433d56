"""An asyncio consumer of assigned partitions (no consumer groups): poll from offsets, follow leaders.

    async with Consumer("127.0.0.1:9092") as c:
        c.assign([("orders", 0), ("orders", 1)])
        await c.seek_to_beginning()
        records = await c.poll(timeout_ms=1000)

Each poll sends one Fetch per partition leader (v17, by topic id, with the leader epoch the
consumer believes in) and returns the records below each partition's high watermark, in offset
order per partition. When a leader moves (NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH,
KAFKA_STORAGE_ERROR, a dead broker) the metadata is refreshed and the next poll asks the new one;
positions are kept, so nothing is skipped or read twice. OFFSET_OUT_OF_RANGE resets the position as
`auto_offset_reset` says.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Iterable

import structlog

from protocol.errors import Errors, KafkaError
from protocol.rpc.broker_fetch import FetchRequest, FetchResponse
from protocol.rpc.list_offsets import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    ListOffsetsRequest,
    ListOffsetsResponse,
)
from protocol.uuid import Uuid
from tools.client.cluster import ClusterMetadata, ConnectionPool
from tools.client.errors import STALE_METADATA, ClientError, as_error
from tools.client.records import ConsumerRecord, read_fetched

log = structlog.get_logger("tools.client.consumer")

TopicPartition = tuple[str, int]
FETCH_VERSION = 17


class Consumer:
    def __init__(
        self,
        bootstrap_servers: str | list[str],
        *,
        auto_offset_reset: str = "earliest",
        fetch_max_wait_ms: int = 500,
        fetch_min_bytes: int = 1,
        max_partition_fetch_bytes: int = 1048576,
        fetch_max_bytes: int = 52428800,
        request_timeout_ms: int = 30000,
        retry_backoff_ms: int = 100,
    ) -> None:
        if auto_offset_reset not in ("earliest", "latest", "none"):
            raise ValueError("auto_offset_reset must be earliest, latest or none")
        self.auto_offset_reset = auto_offset_reset
        self.fetch_max_wait_ms = fetch_max_wait_ms
        self.fetch_min_bytes = fetch_min_bytes
        self.max_partition_fetch_bytes = max_partition_fetch_bytes
        self.fetch_max_bytes = fetch_max_bytes
        self.retry_backoff_ms = retry_backoff_ms
        self.pool = ConnectionPool(timeout_s=request_timeout_ms / 1000 + fetch_max_wait_ms / 1000)
        self.metadata = ClusterMetadata(bootstrap_servers, self.pool)
        self._assigned: list[TopicPartition] = []
        self._positions: dict[TopicPartition, int] = {}
        self._high_watermarks: dict[TopicPartition, int] = {}
        self._buffer: deque[ConsumerRecord] = deque()
        self._stale = True
        self._backoff_until = 0.0
        self._corrupt: ClientError | None = None

    async def __aenter__(self) -> Consumer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self.pool.close()

    # ---- assignment and positions -----------------------------------------------------------------

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        self._assigned = list(dict.fromkeys((t, int(p)) for t, p in partitions))
        self._positions = {tp: off for tp, off in self._positions.items() if tp in self._assigned}
        self._buffer = deque(r for r in self._buffer if (r.topic, r.partition) in self._assigned)
        self._stale = True

    def assignment(self) -> list[TopicPartition]:
        return list(self._assigned)

    def position(self, tp: TopicPartition) -> int | None:
        return self._positions.get(tp)

    def high_watermark(self, tp: TopicPartition) -> int | None:
        return self._high_watermarks.get(tp)

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self._positions[tp] = offset
        self._buffer = deque(r for r in self._buffer if (r.topic, r.partition) != tp)
        self._corrupt = None  # a seek is how a caller steps past a corrupt batch

    async def seek_to_beginning(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        offsets = await self.list_offsets(list(partitions or self._assigned), EARLIEST_TIMESTAMP)
        for tp, off in offsets.items():
            self.seek(tp, off)

    async def seek_to_end(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        offsets = await self.list_offsets(list(partitions or self._assigned), LATEST_TIMESTAMP)
        for tp, off in offsets.items():
            self.seek(tp, off)

    async def beginning_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        return await self.list_offsets(list(partitions), EARLIEST_TIMESTAMP)

    async def end_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """The high watermark of each partition: where a consumer of everything committed would stop."""
        return await self.list_offsets(list(partitions), LATEST_TIMESTAMP)

    async def list_offsets(
        self, partitions: list[TopicPartition], timestamp: int, *, timeout_ms: int = 30000
    ) -> dict[TopicPartition, int]:
        """ListOffsets from each partition's leader, retrying through leader changes."""
        deadline = time.monotonic() + timeout_ms / 1000
        out: dict[TopicPartition, int] = {}
        todo = list(partitions)
        last: object = None
        while todo:
            if self._stale:
                await self._refresh()
            by_leader: dict[str, list[TopicPartition]] = {}
            for tp in todo:
                url = self.metadata.leader_url(*tp)
                if url is not None:
                    by_leader.setdefault(url, []).append(tp)
            results = await asyncio.gather(
                *(self._list_offsets_from(url, tps, timestamp) for url, tps in by_leader.items())
            )
            for found in results:
                for tp, (code, offset) in found.items():
                    if code is Errors.NONE:
                        out[tp] = offset
                    else:
                        last = code
            todo = [tp for tp in todo if tp not in out]
            if todo:
                self._stale = True
                if time.monotonic() > deadline:
                    raise ClientError(
                        Errors.REQUEST_TIMED_OUT,
                        f"ListOffsets for {todo} did not succeed in time (last: {last})",
                    )
                await asyncio.sleep(self.retry_backoff_ms / 1000)
        return out

    async def _list_offsets_from(
        self, url: str, tps: list[TopicPartition], timestamp: int
    ) -> dict[TopicPartition, tuple[Errors, int]]:
        by_topic: dict[str, list[ListOffsetsRequest.ListOffsetsPartition]] = {}
        for topic, p in tps:
            info = self.metadata.partition(topic, p)
            by_topic.setdefault(topic, []).append(
                ListOffsetsRequest.ListOffsetsPartition(
                    PartitionIndex=p,
                    CurrentLeaderEpoch=info.leader_epoch if info is not None else -1,
                    Timestamp=timestamp,
                )
            )
        req = ListOffsetsRequest(
            Topics=[ListOffsetsRequest.ListOffsetsTopic(Name=t, Partitions=ps) for t, ps in by_topic.items()]
        )
        try:
            resp: ListOffsetsResponse = await self.pool.get(url).call("ListOffsets", req)
        except KafkaError as e:
            return {tp: (e.code, -1) for tp in tps}
        out: dict[TopicPartition, tuple[Errors, int]] = {}
        for t in resp.Topics:
            for p in t.Partitions:
                out[(t.Name, p.PartitionIndex)] = (as_error(p.ErrorCode), p.Offset)
        return out

    # ---- polling ----------------------------------------------------------------------------------

    async def poll(self, timeout_ms: int = 1000, max_records: int | None = None) -> list[ConsumerRecord]:
        """Records from the assigned partitions; waits up to `timeout_ms` when there are none."""
        deadline = time.monotonic() + timeout_ms / 1000
        while not self._buffer:
            if self._corrupt is not None:
                corrupt, self._corrupt = self._corrupt, None
                raise corrupt
            await self._fetch_once(max(0, int((deadline - time.monotonic()) * 1000)))
            if not self._buffer and self._corrupt is None and time.monotonic() >= deadline:
                break
        n = len(self._buffer) if max_records is None else min(max_records, len(self._buffer))
        return [self._buffer.popleft() for _ in range(n)]

    async def _refresh(self) -> None:
        topics = sorted({t for t, _ in self._assigned})
        try:
            await self.metadata.refresh(topics)
            self._stale = False
        except KafkaError:
            pass  # the next fetch tries again

    async def _ensure_positions(self) -> None:
        missing = [tp for tp in self._assigned if tp not in self._positions]
        if not missing:
            return
        if self.auto_offset_reset == "none":
            raise ClientError(
                Errors.OFFSET_OUT_OF_RANGE, f"no position for {missing} and auto_offset_reset=none"
            )
        ts = EARLIEST_TIMESTAMP if self.auto_offset_reset == "earliest" else LATEST_TIMESTAMP
        for tp, off in (await self.list_offsets(missing, ts)).items():
            self._positions.setdefault(tp, off)

    async def _fetch_once(self, wait_ms: int) -> None:
        if not self._assigned:
            await asyncio.sleep(wait_ms / 1000)
            return
        now = time.monotonic()
        if now < self._backoff_until:
            await asyncio.sleep(min(self._backoff_until - now, wait_ms / 1000))
        if self._stale:
            await self._refresh()
        await self._ensure_positions()
        by_leader: dict[str, list[TopicPartition]] = {}
        for tp in self._assigned:
            url = self.metadata.leader_url(*tp)
            if url is None:
                self._stale = True
                continue
            by_leader.setdefault(url, []).append(tp)
        if not by_leader:
            self._backoff_until = time.monotonic() + self.retry_backoff_ms / 1000
            return
        await asyncio.gather(*(self._fetch_from(url, tps, wait_ms) for url, tps in by_leader.items()))

    async def _fetch_from(self, url: str, tps: list[TopicPartition], wait_ms: int) -> None:
        topics: dict[str, list[FetchRequest.FetchPartition]] = {}
        ids: dict[Uuid, str] = {}
        for topic, p in tps:
            t = self.metadata.topics.get(topic)
            info = self.metadata.partition(topic, p)
            if t is None or info is None:
                self._stale = True
                continue
            ids[t.topic_id] = topic
            topics.setdefault(topic, []).append(
                FetchRequest.FetchPartition(
                    Partition=p,
                    CurrentLeaderEpoch=info.leader_epoch,
                    FetchOffset=self._positions[(topic, p)],
                    PartitionMaxBytes=self.max_partition_fetch_bytes,
                )
            )
        if not topics:
            return
        req = FetchRequest(
            MaxWaitMs=wait_ms,
            MinBytes=self.fetch_min_bytes,
            MaxBytes=self.fetch_max_bytes,
            Topics=[
                FetchRequest.FetchTopic(TopicId=self.metadata.topics[t].topic_id, Partitions=ps)
                for t, ps in topics.items()
            ],
        )
        try:
            resp: FetchResponse = await self.pool.get(url).call("Fetch", req, FETCH_VERSION)
        except KafkaError:
            self._stale = True
            self._backoff_until = time.monotonic() + self.retry_backoff_ms / 1000
            return
        for t in resp.Responses:
            topic = ids.get(t.TopicId)
            if topic is None:
                continue
            for pd in t.Partitions:
                self._take(topic, pd)

    def _take(self, topic: str, pd: FetchResponse.PartitionData) -> None:
        tp = (topic, pd.PartitionIndex)
        if tp not in self._positions or tp not in self._assigned:
            return
        code = as_error(pd.ErrorCode)
        if code is Errors.NONE:
            position = self._positions[tp]
            if pd.HighWatermark >= 0:
                self._high_watermarks[tp] = pd.HighWatermark
            if pd.Records:
                fetched = read_fetched(topic, tp[1], pd.Records, position)
                self._buffer.extend(fetched.records)
                self._positions[tp] = fetched.next_offset
                if fetched.corrupt is not None and self._corrupt is None:
                    # Raised once the good records before it are delivered, as Kafka's consumer does;
                    # the position stays at the corrupt batch until the caller seeks past it.
                    self._corrupt = ClientError(
                        Errors.CORRUPT_MESSAGE, f"{fetched.corrupt}; seek past it to read on"
                    )
            return
        if code is Errors.OFFSET_OUT_OF_RANGE:
            log.info(
                "fetch offset out of range, resetting",
                partition=f"{topic}-{tp[1]}",
                policy=self.auto_offset_reset,
            )
            if self.auto_offset_reset == "none":
                raise ClientError(code, f"offset {self._positions[tp]} of {topic}-{tp[1]} is out of range")
            del self._positions[tp]
            return
        if code in STALE_METADATA:
            self._stale = True
            self._backoff_until = time.monotonic() + self.retry_backoff_ms / 1000
            return
        raise ClientError(code, f"fetching {topic}-{tp[1]} failed: {code.name}")


async def consume_all(
    bootstrap: str,
    topic: str,
    *,
    partitions: list[int] | None = None,
    idle_ms: int = 3000,
    timeout_s: float = 120,
) -> list[ConsumerRecord]:
    """Read a topic from the beginning up to its current end (the high watermarks when called)."""
    async with Consumer(bootstrap) as c:
        await c.metadata.refresh([topic])
        count = c.metadata.partition_count(topic)
        if count is None:
            raise ClientError(Errors.UNKNOWN_TOPIC_OR_PARTITION, f"topic {topic} not found")
        tps = [(topic, p) for p in (partitions if partitions is not None else range(count))]
        c.assign(tps)
        ends = await c.end_offsets(tps)
        await c.seek_to_beginning()
        out: list[ConsumerRecord] = []
        deadline = time.monotonic() + timeout_s
        while any((c.position(tp) or 0) < ends[tp] for tp in tps):
            if time.monotonic() > deadline:
                raise ClientError(Errors.REQUEST_TIMED_OUT, "did not reach the end of the topic in time")
            try:
                out.extend(await c.poll(timeout_ms=idle_ms))
            except ClientError as e:
                if e.code is Errors.CORRUPT_MESSAGE:
                    raise  # waiting will not mend it
        return out
