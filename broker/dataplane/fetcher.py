"""Followers copy their leaders' logs (Kafka's ReplicaFetcherManager / ReplicaFetcherThread).

One fetcher task per leader broker carries every partition this broker follows there in one Fetch
at a time: from its log end offset, with the epoch of its last batch (LastFetchedEpoch) and the
leader epoch it believes in (CurrentLeaderEpoch). Per partition, the answer is one of:

- records: appended as they are (the leader gave them offsets and epochs), then the follower's HW
  becomes min(leader HW, its LEO);
- DivergingEpoch: the logs disagree after a leader change; the follower truncates (truncation.py)
  and fetches again;
- OFFSET_OUT_OF_RANGE: the leader's log starts after ours ends (retention): start over there; or
  ours runs past the leader's end: cut back to it;
- FENCED_LEADER_EPOCH / NOT_LEADER_OR_FOLLOWER / UNKNOWN_LEADER_EPOCH / KAFKA_STORAGE_ERROR / other:
  the partition waits `replica.fetch.backoff.ms` (the metadata is moving; a publish restarts it).

A failure of our own log dir takes the partition offline and out of its fetcher.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeVar

import structlog

from broker.dataplane.hosted_partition import HostedPartition, PartitionKey, now_ms
from broker.dataplane.truncation import EpochEnd, truncation_for
from broker.storage import LogDirOfflineError, PartitionLog, UnexpectedAppendOffsetError
from kraftpy.config import SECURITY_PROTOCOLS, TLS_PROTOCOLS
from protocol.errors import Errors, KafkaError
from protocol.record_batch import iter_batch_positions
from protocol.rpc.broker_fetch import (
    FetchRequest,
    FetchResponse,
    ReplicaStateData,
    broker_api_specs,
)
from protocol.rpc.list_offsets import ListOffsetsRequest
from protocol.transport import NO_RETRIES, RpcClient
from protocol.uuid import Uuid

if TYPE_CHECKING:
    from broker.dataplane.settings import ReplicaSettings
    from broker.log_dir_failure import LogDirFailure
    from kraftpy.image import MetadataImage

log = structlog.get_logger("broker.dataplane")

T = TypeVar("T")
FETCH_VERSION = 17

UNKNOWN_LEADER_EPOCH_BACKOFF_MS = 50

_TLS_PROTOCOL_IDS = frozenset(SECURITY_PROTOCOLS[p] for p in TLS_PROTOCOLS)
"""SSL and SASL_SSL, as a registration's endpoint carries them."""


class FetcherHost(Protocol):
    """What the fetchers need from the replica manager that owns them."""

    node_id: int
    settings: ReplicaSettings
    listener_name: str | None
    peer_ssl: ssl.SSLContext | None
    """The client context for leaders whose listener is TLS."""

    @property
    def image(self) -> MetadataImage: ...

    @property
    def broker_epoch(self) -> int: ...

    async def on_local_dir(self, hp: HostedPartition, fn: Callable[..., T], *args: object) -> T: ...

    def follower_progress(self, hp: HostedPartition, leo: int, leader_hw: int, leader_lso: int) -> None: ...


@dataclass(slots=True)
class FetchState:
    hp: HostedPartition
    leader_epoch: int
    fetch_offset: int = -1
    last_fetched_epoch: int = -1
    delayed_until_ms: int = 0
    initialized: bool = False
    last_error: Errors | None = None
    """The error the leader last answered for this partition (logged when it changes, not on every retry)."""


class ReplicaFetcher:
    def __init__(
        self, manager: FetcherHost, source_id: int, corrupt: dict[PartitionKey, str] | None = None
    ) -> None:
        """`corrupt`: partitions whose fetched data fails its checks, with why (shared by the
        manager's fetchers); they are retried with backoff, as Kafka's fetcher retries them."""
        self.manager = manager
        self.source_id = source_id
        self.partitions: dict[PartitionKey, FetchState] = {}
        self.corrupt: dict[PartitionKey, str] = corrupt if corrupt is not None else {}
        self._changed = asyncio.Event()
        self._joined = asyncio.Event()
        """A partition was added, or one delayed briefly is due: a fetch the leader holds (a long
        poll over the others) is given up, so that it does not wait up to replica.fetch.wait.max.ms."""
        self._task: asyncio.Task[None] | None = None
        self._client: RpcClient | None = None
        self._client_url: str | None = None

    def add(self, hp: HostedPartition, leader_epoch: int) -> None:
        self.partitions[hp.key] = FetchState(hp, leader_epoch)
        self._changed.set()
        self._joined.set()
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name=f"replica-fetcher-{self.source_id}")

    def remove(self, key: PartitionKey) -> bool:
        found = self.partitions.pop(key, None) is not None
        self.corrupt.pop(key, None)
        self._changed.set()
        return found

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        if self._client is not None:
            await self._client.close()
            self._client = None

    def _leader_url(self) -> str | None:
        """The leader's base URL; https when its registration says the listener is TLS."""
        broker = self.manager.image.cluster.brokers.get(self.source_id)
        if broker is None:
            return None
        ep = broker.listener(self.manager.listener_name) if self.manager.listener_name else None
        if ep is None and broker.listeners:
            ep = broker.listeners[0]
        if ep is None:
            return None
        host = ep.host or "127.0.0.1"
        scheme = "https" if ep.security_protocol in _TLS_PROTOCOL_IDS else "http"
        return f"{scheme}://{host}:{ep.port}"

    def _client_for(self, url: str) -> RpcClient:
        if self._client is None or self._client_url != url:
            if self._client is not None:
                old = self._client
                asyncio.get_running_loop().create_task(old.close())
            self._client = RpcClient(
                url,
                ssl=self.manager.peer_ssl if url.startswith("https://") else None,
                specs=broker_api_specs(),
                retry=NO_RETRIES,
                timeout=self.manager.settings.fetch_wait_max_ms / 1000
                + self.manager.settings.request_timeout_ms / 1000,
            )
            self._client_url = url
        return self._client

    async def _run(self) -> None:
        while True:
            await self._fetch_while_following()
            client, self._client = self._client, None
            if client is not None:
                await client.close()
            # A partition added while the client closed found this task still running and
            # started no other: it is carried from here.
            if not self.partitions:
                return

    async def _fetch_while_following(self) -> None:
        backoff_ms = self.manager.settings.fetch_backoff_ms
        while self.partitions:
            now = now_ms()
            # Cleared before `ready` is read: a partition added while this fetch is prepared (its
            # first position is read on the dir's thread) is not in it, and must not wait for it.
            self._joined.clear()
            ready = [fs for fs in self.partitions.values() if fs.delayed_until_ms <= now]
            if not ready:
                wake = min(fs.delayed_until_ms for fs in self.partitions.values())
                self._changed.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), max(wake - now, 1) / 1000)
                continue
            for fs in ready:
                if not fs.initialized:
                    await self._initialize(fs)
            ready = [fs for fs in ready if fs.initialized and fs.hp.key in self.partitions]
            if not ready:
                continue
            url = self._leader_url()
            if url is None:
                self._delay(ready, backoff_ms)
                continue
            req = self._build_request(ready)
            try:
                resp = await self._fetch_unless_joined(url, req)
                if resp is None:
                    continue  # asked again at once, with the partition that joined
            except KafkaError as e:
                log.info("fetch from leader failed", leader=self.source_id, error=str(e))
                self._delay(ready, backoff_ms)
                continue
            if resp.ErrorCode != 0:
                log.info("fetch refused by leader", leader=self.source_id, error=_name(resp.ErrorCode))
                self._delay(ready, backoff_ms)
                continue
            by_key = {fs.hp.key: fs for fs in ready}
            work = []
            for topic in resp.Responses:
                for pd in topic.Partitions:
                    fs = by_key.get((topic.TopicId, pd.PartitionIndex))
                    if fs is not None:
                        work.append(self._handle(fs, pd))
            await asyncio.gather(*work)

    async def _fetch_unless_joined(self, url: str, req: FetchRequest) -> FetchResponse | None:
        """The leader's answer, or None when a partition joined first (the fetch is dropped: what
        it carried is asked for again)."""
        call = asyncio.ensure_future(self._client_for(url).call("Fetch", req, FETCH_VERSION))
        joined = asyncio.ensure_future(self._joined.wait())
        try:
            await asyncio.wait((call, joined), return_when=asyncio.FIRST_COMPLETED)
        finally:
            joined.cancel()
            if not call.done():
                call.cancel()
                await asyncio.gather(call, return_exceptions=True)
        if call.cancelled():
            return None
        resp: FetchResponse = call.result()
        return resp

    def _delay(self, states: list[FetchState], ms: int) -> None:
        until = now_ms() + ms
        for fs in states:
            fs.delayed_until_ms = until

    def _build_request(self, ready: list[FetchState]) -> FetchRequest:
        settings = self.manager.settings
        topics: dict[Uuid, list[FetchRequest.FetchPartition]] = {}
        for fs in ready:
            topics.setdefault(fs.hp.tp.topic_id, []).append(
                FetchRequest.FetchPartition(
                    Partition=fs.hp.tp.partition,
                    CurrentLeaderEpoch=fs.leader_epoch,
                    FetchOffset=fs.fetch_offset,
                    LastFetchedEpoch=fs.last_fetched_epoch,
                    LogStartOffset=fs.hp.state.log_start_offset,
                    PartitionMaxBytes=settings.fetch_max_bytes,
                )
            )
        return FetchRequest(
            ReplicaState=ReplicaStateData(
                ReplicaId=self.manager.node_id, ReplicaEpoch=self.manager.broker_epoch
            ),
            MaxWaitMs=settings.fetch_wait_max_ms,
            MinBytes=1,
            MaxBytes=settings.fetch_max_bytes * max(len(ready), 1),
            Topics=[FetchRequest.FetchTopic(TopicId=t, Partitions=ps) for t, ps in topics.items()],
        )

    async def _on_dir(self, fs: FetchState, fn: Callable[..., T], *args: object) -> T:
        local = await fs.hp.usable()
        if local is None:
            raise LogDirOfflineError(str(fs.hp.tp), "the partition is offline")
        return await self.manager.on_local_dir(fs.hp, fn, local.log, *args)

    async def _initialize(self, fs: FetchState) -> None:
        try:
            fs.fetch_offset, fs.last_fetched_epoch = await self._on_dir(fs, _position)
            fs.initialized = True
        except (LogDirOfflineError, KafkaError):
            self.remove(fs.hp.key)
        except Exception:
            log.exception("follower fetch state unreadable", partition=str(fs.hp.tp))
            self._delay([fs], self.manager.settings.fetch_backoff_ms)

    async def _handle(self, fs: FetchState, pd: FetchResponse.PartitionData) -> None:
        if self.partitions.get(fs.hp.key) is not fs:
            return  # removed or replaced while the fetch was out
        code = _code(pd.ErrorCode)
        settings = self.manager.settings
        try:
            if code is Errors.NONE:
                if pd.DivergingEpoch is not None:
                    await self._truncate(fs, EpochEnd(pd.DivergingEpoch.Epoch, pd.DivergingEpoch.EndOffset))
                    return
                if pd.Records:
                    leo, epoch = await self._on_dir(fs, _append_fetched, pd.Records, pd.LogStartOffset)
                else:
                    leo, epoch = fs.fetch_offset, fs.last_fetched_epoch
                if self.partitions.get(fs.hp.key) is not fs:
                    return
                if self.corrupt.pop(fs.hp.key, None) is not None:
                    log.info("follower fetch past the corrupt data", partition=str(fs.hp.tp), offset=leo)
                fs.fetch_offset, fs.last_fetched_epoch = leo, epoch
                self.manager.follower_progress(fs.hp, leo, pd.HighWatermark, pd.LogStartOffset)
            elif code is Errors.OFFSET_OUT_OF_RANGE:
                await self._out_of_range(fs, pd)
            elif code is Errors.UNKNOWN_LEADER_EPOCH:
                self._delay([fs], UNKNOWN_LEADER_EPOCH_BACKOFF_MS)
                asyncio.get_running_loop().call_later(
                    UNKNOWN_LEADER_EPOCH_BACKOFF_MS / 1000, self._joined.set
                )
            else:
                if code is not Errors.NOT_LEADER_OR_FOLLOWER and code is not fs.last_error:
                    # The leader's disk failing under the partition is worth a warning; the
                    # retries that follow are not worth a line each.
                    (log.warning if code is Errors.KAFKA_STORAGE_ERROR else log.info)(
                        "follower fetch error",
                        partition=str(fs.hp.tp),
                        leader=self.source_id,
                        error=code.name,
                    )
                fs.last_error = code
                self._delay([fs], settings.fetch_backoff_ms)
        except LogDirOfflineError:
            self.remove(fs.hp.key)
        except KafkaError as e:
            if e.code is Errors.CORRUPT_MESSAGE:
                # The replica cannot catch up past this batch: say so once, loudly, and keep it
                # visible (FailedPartitionsCount, /healthz) until a fetch gets past it.
                reason = f"offset {fs.fetch_offset} from leader {self.source_id}: {e.message or e.code.name}"
                if fs.hp.key not in self.corrupt:
                    log.error("follower fetched corrupt data", partition=str(fs.hp.tp), reason=reason)
                self.corrupt[fs.hp.key] = f"{fs.hp.tp}: {reason}"
            else:
                log.warning("follower append failed", partition=str(fs.hp.tp), error=str(e))
            self._delay([fs], settings.fetch_backoff_ms)
        except Exception:
            # A bug: this partition waits, the others of this leader keep going; the next metadata
            # publish starts it over. (A log closed under us is a KafkaError, handled above.)
            log.exception("follower fetch handling failed", partition=str(fs.hp.tp))
            self._delay([fs], settings.fetch_backoff_ms)

    async def _truncate(self, fs: FetchState, diverging: EpochEnd) -> None:
        hw = fs.hp.state.high_watermark
        leo, epoch, cut = await self._on_dir(fs, _truncate_for_divergence, diverging, hw)
        log.info(
            "truncated after a leader change",
            partition=str(fs.hp.tp),
            leader=self.source_id,
            diverging_epoch=diverging.epoch,
            diverging_end_offset=diverging.end_offset,
            truncated_to=cut,
        )
        if self.partitions.get(fs.hp.key) is fs:
            fs.fetch_offset, fs.last_fetched_epoch = leo, epoch
            fs.hp.state.truncated(leo)

    async def _out_of_range(self, fs: FetchState, pd: FetchResponse.PartitionData) -> None:
        if pd.LogStartOffset >= 0 and fs.fetch_offset < pd.LogStartOffset:
            target = pd.LogStartOffset
            leo, epoch = await self._on_dir(fs, _restart_at, target)
        else:
            leader_end = await self._leader_end_offset(fs)
            if leader_end is None:
                self._delay([fs], self.manager.settings.fetch_backoff_ms)
                return
            leo, epoch = await self._on_dir(fs, _truncate_to, leader_end)
        log.info("follower fetch offset out of range, reset", partition=str(fs.hp.tp), log_end_offset=leo)
        if self.partitions.get(fs.hp.key) is fs:
            fs.fetch_offset, fs.last_fetched_epoch = leo, epoch
            fs.hp.state.truncated(leo)

    async def _leader_end_offset(self, fs: FetchState) -> int | None:
        url = self._leader_url()
        if url is None:
            return None
        req = ListOffsetsRequest(
            ReplicaId=self.manager.node_id,
            Topics=[
                ListOffsetsRequest.ListOffsetsTopic(
                    Name=fs.hp.tp.topic_name,
                    Partitions=[
                        ListOffsetsRequest.ListOffsetsPartition(
                            PartitionIndex=fs.hp.tp.partition,
                            CurrentLeaderEpoch=fs.leader_epoch,
                            Timestamp=-1,
                        )
                    ],
                )
            ],
        )
        try:
            resp = await self._client_for(url).call("ListOffsets", req)
        except KafkaError:
            return None
        for t in resp.Topics:
            for p in t.Partitions:
                if p.ErrorCode == 0:
                    return p.Offset
        return None


class ReplicaFetcherManager:
    def __init__(self, manager: FetcherHost) -> None:
        self.manager = manager
        self.fetchers: dict[int, ReplicaFetcher] = {}
        self._by_partition: dict[PartitionKey, int] = {}
        self.corrupt: dict[PartitionKey, str] = {}

    def add(self, hp: HostedPartition, leader: int, leader_epoch: int) -> None:
        self.remove(hp.key)
        fetcher = self.fetchers.get(leader)
        if fetcher is None:
            fetcher = self.fetchers[leader] = ReplicaFetcher(self.manager, leader, self.corrupt)
        fetcher.add(hp, leader_epoch)
        self._by_partition[hp.key] = leader

    def remove(self, key: PartitionKey) -> None:
        leader = self._by_partition.pop(key, None)
        if leader is not None and leader in self.fetchers:
            self.fetchers[leader].remove(key)

    def failed_partitions(self) -> list[str]:
        """Followed partitions whose fetched data fails its checks, each with why."""
        return sorted(self.corrupt.values())

    def on_dir_failure(self, failure: LogDirFailure) -> None:
        """Stop copying into the logs of a failed dir (subscribed to the LogDirFailureChannel)."""
        for fetcher in self.fetchers.values():
            for key, fs in list(fetcher.partitions.items()):
                local = fs.hp.local
                if local is not None and local.log_dir.dir_id == failure.dir_id:
                    self.remove(key)

    async def stop(self) -> None:
        await asyncio.gather(*(f.stop() for f in self.fetchers.values()), return_exceptions=True)
        self.fetchers.clear()
        self._by_partition.clear()


def _code(value: int) -> Errors:
    try:
        return Errors(value)
    except ValueError:
        return Errors.UNKNOWN_SERVER_ERROR


def _name(value: int) -> str:
    return _code(value).name


# ---- work done on the follower's log dir thread ---------------------------------------------------


def _latest_epoch(log: PartitionLog) -> int:
    epoch = log.latest_epoch
    return -1 if epoch is None else epoch


def _position(log: PartitionLog) -> tuple[int, int]:
    return log.log_end_offset, _latest_epoch(log)


def _append_fetched(log: PartitionLog, records: bytes, leader_log_start: int) -> tuple[int, int]:
    """Append what the leader sent, skipping batches we already hold (a refetch after truncation)."""
    leo = log.log_end_offset
    start = None
    for pos, h in iter_batch_positions(records):
        if h.last_offset < leo:
            continue
        if h.base_offset < leo:
            # Our log ends inside this batch of the leader's: take the whole batch again.
            log.truncate_to(h.base_offset)
        start = pos
        break
    if start is not None:
        try:
            log.append_as_follower(records[start:] if start else records)
        except UnexpectedAppendOffsetError as e:
            raise KafkaError(Errors.UNKNOWN_SERVER_ERROR, str(e)) from None
    if leader_log_start > log.log_start_offset:
        log.increment_log_start_offset(min(leader_log_start, log.log_end_offset))
    return log.log_end_offset, _latest_epoch(log)


def _truncate_for_divergence(
    log: PartitionLog, diverging: EpochEnd, high_watermark: int
) -> tuple[int, int, int]:
    local = log.end_offset_for_epoch(diverging.epoch) if diverging.epoch >= 0 else None
    decision = truncation_for(
        diverging,
        EpochEnd(local.leader_epoch, local.end_offset) if local is not None else None,
        log.log_end_offset,
        high_watermark,
    )
    log.truncate_to(max(decision.offset, 0))
    return log.log_end_offset, _latest_epoch(log), decision.offset


def _truncate_to(log: PartitionLog, offset: int) -> tuple[int, int]:
    log.truncate_to(max(offset, 0))
    return log.log_end_offset, _latest_epoch(log)


def _restart_at(log: PartitionLog, offset: int) -> tuple[int, int]:
    log.truncate_fully_and_start_at(offset)
    return log.log_end_offset, _latest_epoch(log)
