"""The broker's copy of `__cluster_metadata`: fetched from the controller, kept on disk, replayed into images.

`LocalMetadataLog` is a `kraftpy.metalog.MetadataLog` in metadata.log.dir whose writes run on
that dir's own executor (`LogDir.run`) and whose decoding and replay run on a thread of their own
(seconds of CPU for a large fetch must not hold up the dir's probes). An OSError either way is the
metadata dir's failure, which stops the broker (KIP-858 footnote 1).

`MetadataLoader` runs the fetch loop (decisions in `broker.core.metadata_fetch`): long-poll
`Fetch` from where the local log ends, append what comes back as it is (offsets and epochs kept,
CRCs checked), fsync, replay the records into a `MetadataDelta` and hand the new image to
`on_image`. A DivergingEpoch truncates the local log; a SnapshotId loads the snapshot with
`FetchSnapshot` and restarts the log at it; either way the image is rebuilt from what is on disk.
On restart the local log is cleaned by metadata retention and replayed (from its latest snapshot:
the broker writes its own, see `broker.metadata_snapshots`), and fetching resumes where it ended.
"""

from __future__ import annotations

import asyncio
import functools
import math
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import structlog

from broker.controller_channel import ControllerChannel
from broker.core.metadata_fetch import (
    Append,
    LoadSnapshot,
    MetadataFetchState,
    Retry,
    SnapshotDownload,
    SnapshotGoneError,
    Truncate,
)
from broker.metadata_snapshots import BrokerSnapshotter
from broker.storage.errors import LogDirOfflineError
from broker.storage.log_dir import LogDir
from kraftpy.heap import after_load, collector_paused, lasting
from kraftpy.image import MetadataDelta, MetadataImage
from kraftpy.metalog import MetadataLog, MetadataLogConfig, SnapshotId
from protocol.record_batch import iter_batches, metadata_records
from protocol.transport import RpcConnectionError, RpcError

log = structlog.get_logger("broker.metadata")

FETCH_TIMEOUT_S = 10.0
T = TypeVar("T")


def _append(mlog: MetadataLog, data: bytes) -> None:
    # No fsync, as Kafka's observers: the batches are committed on the quorum already, and a broker
    # that loses its unflushed tail fetches it again after recovery cuts it.
    mlog.append_raw_batches(data)


def _replay(data: bytes, delta: MetadataDelta) -> int:
    """Replays `data`'s records into `delta`; returns how many count towards a freeze (`lasting`)."""
    n = 0
    with collector_paused():
        for batch in iter_batches(data):
            if not batch.is_control:
                base = batch.base_offset
                epoch, ts = batch.partition_leader_epoch, batch.max_timestamp
                records = metadata_records(batch)
                for rec, amv in zip(batch.records, records, strict=True):
                    delta.replay(amv, base + rec.offset_delta, epoch=epoch, timestamp_ms=ts)
                n += lasting(records)
            if delta.last_offset is None or delta.last_offset < batch.last_offset:
                # control batches (LeaderChange) move the offset on without records to replay
                delta.last_offset = batch.last_offset
    return n


def _load_image(mlog: MetadataLog) -> MetadataDelta:
    delta = MetadataDelta(MetadataImage.EMPTY)
    with collector_paused():
        n = mlog.replay_into(delta)
        after_load(n)
    latest = mlog.latest_snapshot()
    log.info(
        "metadata image loaded from the local log",
        records=n,
        snapshot_end_offset=latest.offset if latest is not None else None,
    )
    end = mlog.log_end_offset - 1
    if end >= 0 and (delta.last_offset is None or delta.last_offset < end):
        delta.last_offset = end
    return delta


def _settle(mlog: MetadataLog) -> int:
    """Settle a cut damaged tail; the bytes of batches after the latest snapshot (they count towards
    the next one, as the batches Kafka's loader replays at startup do)."""
    mlog.settle_damage()
    latest = mlog.latest_snapshot()
    return mlog.size_from(latest.offset if latest is not None else 0)


def _truncate(mlog: MetadataLog, offset: int) -> None:
    mlog.truncate_to(offset)
    mlog.flush()


class LocalMetadataLog:
    def __init__(self, log_dir: LogDir, config: MetadataLogConfig) -> None:
        self.log_dir = log_dir
        self.config = config
        self.log: MetadataLog | None = None
        self.snapshotter: BrokerSnapshotter | None = None
        # Decoding and replaying records is CPU work that can take seconds for a large fetch: it runs
        # on a thread of its own so the dir's executor stays free for disk work (and its probes).
        self._cpu = ThreadPoolExecutor(max_workers=1, thread_name_prefix="metadata-replay")

    async def _on_cpu(self, fn: Callable[..., T], *args: Any) -> T:
        try:
            return await asyncio.get_running_loop().run_in_executor(self._cpu, functools.partial(fn, *args))
        except OSError as e:
            # Reading the log back failed: that is the metadata dir failing.
            self.log_dir.fail(e)
            raise LogDirOfflineError(self.log_dir.path, str(e)) from e

    @property
    def path(self) -> Path:
        return self.log_dir.path

    async def open(self) -> MetadataDelta:
        """Open (recovering a torn tail) and replay snapshot + log; the delta's image is where it ends."""
        self.log = await self.log_dir.run(MetadataLog.open, self.log_dir.path, self.config, timeout=math.inf)
        # A broker's copy is the controllers' to give again: a damaged batch it cut is no loss.
        unsnapshotted = await self.log_dir.run(_settle, self.log)
        self.snapshotter = BrokerSnapshotter(self.log_dir, self.log)
        self.snapshotter.on_applied(unsnapshotted)
        # Metadata retention, as after each snapshot the broker writes: a broker that was down, or
        # whose limits were lowered, sheds what it no longer needs before it fetches more.
        await self.snapshotter.clean()
        return await self._on_cpu(_load_image, self.log)

    # LogPosition for the fetch decisions
    @property
    def log_end_offset(self) -> int:
        assert self.log is not None
        return self.log.log_end_offset

    @property
    def latest_epoch(self) -> int:
        assert self.log is not None
        return self.log.latest_epoch

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        assert self.log is not None
        found = self.log.end_offset_for_epoch(epoch)
        return found.offset, found.epoch

    async def append(self, data: bytes) -> None:
        """Fetched batches, on the dir's executor (no fsync: see `_append`)."""
        assert self.log is not None
        await self.log_dir.run(_append, self.log, data)

    async def replay(self, data: bytes, delta: MetadataDelta) -> int:
        """Replay `data` into `delta` on the replay thread; returns how many records count towards a
        freeze (`kraftpy.heap.lasting`)."""
        return await self._on_cpu(_replay, data, delta)

    async def truncate_to(self, offset: int) -> MetadataDelta:
        assert self.log is not None
        if self.snapshotter is not None:
            await self.snapshotter.wait_idle()
        await self.log_dir.run(_truncate, self.log, offset)
        return await self._on_cpu(_load_image, self.log)

    async def install_snapshot(self, snapshot_id: SnapshotId, data: bytes) -> MetadataDelta:
        assert self.log is not None
        if self.snapshotter is not None:
            await self.snapshotter.wait_idle()
        await self.log_dir.run(self.log.install_snapshot, snapshot_id, data, timeout=math.inf)
        if self.snapshotter is not None:
            self.snapshotter.policy.installed(snapshot_id.offset)
        return await self._on_cpu(_load_image, self.log)

    async def close(self) -> None:
        if self.snapshotter is not None:
            await self.snapshotter.stop()
        self._cpu.shutdown(wait=False, cancel_futures=True)
        if self.log is not None and self.log_dir.online:
            try:
                await self.log_dir.run(self.log.close)
            except Exception as e:
                log.warning("closing the metadata log failed", error=repr(e))


class MetadataLoader:
    def __init__(
        self,
        local: LocalMetadataLog,
        client: ControllerChannel,
        cluster_id: str,
        broker_id: int,
        on_image: Callable[[MetadataImage, MetadataDelta | None], None],
    ) -> None:
        """`on_image(image, delta)`: a new image; `delta` is what changed, or None when the image was
        rebuilt from scratch (after truncation or a snapshot)."""
        self.local = local
        self.client = client
        self.state = MetadataFetchState(cluster_id, broker_id)
        self.on_image = on_image
        self.image = MetadataImage.EMPTY
        self._delta: MetadataDelta | None = None
        self.fetches = 0
        self.errors = 0

    def start_from(self, delta: MetadataDelta) -> None:
        self.image = delta.apply()
        self._delta = delta.next_delta(self.image)

    async def run(self) -> None:
        while True:
            req = self.state.next_request(self.local)
            try:
                resp = await self.client.call("Fetch", req, timeout=FETCH_TIMEOUT_S)
            except (RpcConnectionError, RpcError) as e:
                self.errors += 1
                log.debug("metadata fetch failed", error=str(e))
                await asyncio.sleep(0.2)
                continue
            self.fetches += 1
            outcome = self.state.handle(resp, self.local)
            if isinstance(outcome, Append):
                if outcome.records:
                    await self._append(outcome.records)
                self.maybe_snapshot()
            elif isinstance(outcome, Truncate):
                log.warning(
                    "metadata log diverges from the controller's; truncating",
                    offset=outcome.offset,
                    diverging_epoch=outcome.diverging_epoch,
                )
                self._rebuilt(await self.local.truncate_to(outcome.offset))
            elif isinstance(outcome, LoadSnapshot):
                await self._load_snapshot(outcome)
            elif isinstance(outcome, Retry) and outcome.delay_ms:
                log.debug("metadata fetch retry", reason=outcome.reason)
                await asyncio.sleep(outcome.delay_ms / 1000)

    async def _append(self, data: bytes) -> None:
        assert self._delta is not None
        delta = self._delta
        await self.local.append(data)
        # One pause from the replay to the freeze: with the collector back on in between, its next
        # young pass would walk every object the replay made, just before after_load freezes them.
        # (The append stays outside: a hung disk would hold the pause as long.)
        with collector_paused():
            lasting_records = await self.local.replay(data, delta)
            if self.local.snapshotter is not None:
                self.local.snapshotter.on_applied(len(data))
            # The new image and what the broker derives from it: objects per changed partition
            self.image = delta.apply()
            self._delta = delta.next_delta(self.image)
            self.on_image(self.image, delta)
            # Once per fetch, counting what replay counted: the objects of the replay and of the
            # publish alike are frozen when these add up to a large change.
            after_load(lasting_records)

    def maybe_snapshot(self) -> None:
        """Checked after every fetch: the high watermark a snapshot waits for may come without
        records, and retention's minute (kraftpy.raft.cleaning) runs whether records come or not."""
        snapshotter = self.local.snapshotter
        if snapshotter is not None and self._delta is not None:
            snapshotter.maybe_snapshot(self.image, self.state.high_watermark, self._delta.in_transaction)
            snapshotter.maybe_clean()

    def _rebuilt(self, delta: MetadataDelta) -> None:
        self.image = delta.apply()
        self._delta = delta.next_delta(self.image)
        self.on_image(self.image, None)

    async def _load_snapshot(self, outcome: LoadSnapshot) -> None:
        log.info("loading the controller's snapshot", end_offset=outcome.end_offset, epoch=outcome.epoch)
        download = SnapshotDownload(self.state, outcome.end_offset, outcome.epoch)
        while not download.done:
            try:
                resp = await self.client.call(
                    "FetchSnapshot", download.next_request(), timeout=FETCH_TIMEOUT_S
                )
                retry = download.handle(resp)
            except (RpcConnectionError, RpcError) as e:
                log.debug("snapshot fetch failed", error=str(e))
                await asyncio.sleep(0.2)
                continue
            except SnapshotGoneError as e:
                log.warning("snapshot vanished; fetching again", error=str(e))
                return
            if retry is not None:
                await asyncio.sleep(retry.delay_ms / 1000)
        sid = SnapshotId(outcome.end_offset, outcome.epoch)
        self._rebuilt(await self.local.install_snapshot(sid, download.data()))

    def describe(self) -> dict[str, Any]:
        return {
            "metadata_offset": self.image.offset,
            "log_end_offset": self.local.log_end_offset if self.local.log is not None else -1,
            "high_watermark": self.state.high_watermark,
            "leader_epoch": self.state.leader_epoch,
        }
