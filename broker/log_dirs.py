"""The broker's log dirs: opened on the failure channel, taken stock of at startup, probed while running.

Each `LogDir` reports its first OSError or stall to the `LogDirFailureChannel`; the probe writes a
small file and fsyncs it every log.dir.probe.interval.ms, so a disk that dies while idle is found
within one interval rather than at the next produce.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

import structlog

from broker.core.local_logs import FoundLog, Inventory, classify
from broker.log_dir_failure import LogDirFailureChannel
from broker.partition_dirs import delete_partition_dir, timed_read_found
from broker.startup import BrokerDirs
from broker.storage import LogDirOfflineError
from broker.storage.errors import LogDirResourceError
from broker.storage.log_dir import LogDir
from broker.tasks import BrokerTasks
from kraftpy.heap import after_load, collector_paused
from protocol.uuid import Uuid

PROBE_TIMEOUT_MIN_S = 5.0

log = structlog.get_logger("broker.log_dirs")

D = TypeVar("D")


def open_log_dirs(dirs: BrokerDirs, failures: LogDirFailureChannel) -> tuple[dict[Uuid, LogDir], LogDir]:
    """The online log dirs by id, and metadata.log.dir's (one of them, or its own)."""
    for path, reason in dirs.offline.items():
        failures.record_offline_at_start(path, reason)
    report = failures.maybe_add_offline_log_dir
    log_dirs = {dir_id: LogDir(path, dir_id, on_failure=report) for path, dir_id in dirs.log_dirs.items()}
    if dirs.metadata_is_log_dir:
        return log_dirs, log_dirs[dirs.metadata_dir_id]
    return log_dirs, LogDir(dirs.metadata_dir, dirs.metadata_dir_id, on_failure=report)


SCAN_CHUNK = 2_000
"""Partition dirs read per hop at startup: each hop tells whether the disk or the CPU sets the pace."""
IO_BOUND_S_PER_ENTRY = 40e-6
"""A hop whose thread spent more than this per partition dir outside Python was reading from its disk
(page-cached reads: 3-10 us; a disk's, 100 us and more)."""


async def take_inventory(log_dirs: dict[Uuid, LogDir]) -> Inventory:
    """The partition logs found in the online dirs, classified; deletions left unfinished by the
    last run are finished. Duplicate logs wait for the metadata (`LogPlacement`)."""
    with collector_paused():
        found = await scan_dirs(list(log_dirs.values()), _scan_dir)
        inventory = classify(found)
        after_load(len(found))
    for f in inventory.to_delete:
        ld = log_dirs.get(f.dir_id)
        if ld is not None and ld.online:
            with contextlib.suppress(LogDirOfflineError):
                await ld.run(delete_partition_dir, ld.path, f.name, timeout=math.inf)
    return inventory


async def _scan_dir(ld: LogDir, io_bound: asyncio.Event) -> list[FoundLog]:
    try:
        entries = await ld.run(ld.list_partition_dirs, timeout=math.inf)
        found: list[FoundLog] = []
        for lo in range(0, len(entries), SCAN_CHUNK):
            chunk, waited_s = await ld.run(
                timed_read_found, ld, entries[lo : lo + SCAN_CHUNK], timeout=math.inf
            )
            found += chunk
            if waited_s > IO_BOUND_S_PER_ENTRY:
                io_bound.set()
        return found
    except LogDirOfflineError:
        return []


async def scan_dirs(
    dirs: Sequence[D], scan_one: Callable[[D, asyncio.Event], Awaitable[list[FoundLog]]]
) -> list[FoundLog]:
    """What `scan_one` finds in each dir, in the dirs' order; each dir's reads run on its own thread.

    One dir after another while the reads keep the CPU busy (files in the page cache, flash):
    threads handing the GIL back and forth at every open and read took 2-2.5x as long on two cores
    (100,000 partitions in four dirs: 3.4 s against 1.6 s). As soon as one dir's reads wait on its
    disk (`scan_one` sets the event), every dir left starts at once, as Kafka loads its dirs in
    parallel: then the disks set the pace. A dir that hangs holds startup up either way.
    """
    io_bound = asyncio.Event()
    scans: list[asyncio.Future[list[FoundLog]]] = []
    try:
        for i, d in enumerate(dirs):
            scans.append(asyncio.ensure_future(scan_one(d, io_bound)))
            if io_bound.is_set():
                continue
            switch = asyncio.ensure_future(io_bound.wait())
            await asyncio.wait({scans[-1], switch}, return_when=asyncio.FIRST_COMPLETED)
            switch.cancel()
            if scans[-1].done():
                scans[-1].result()  # a failed scan ends the inventory before the next dir starts
            elif i + 1 < len(dirs):
                log.info(
                    "reading the log dirs left at once: their reads wait on the disk", dirs=len(dirs) - i - 1
                )
        results = await asyncio.gather(*scans)
    finally:
        # A scan that failed takes the others down with it, and they are gone before this returns.
        for t in scans:
            t.cancel()
        await asyncio.gather(*scans, return_exceptions=True)
    return [f for found in results for f in found]


def start_probes(dirs: list[LogDir], interval_ms: int, tasks: BrokerTasks) -> None:
    """Probe each dir until it fails; a failure reaches the channel through `LogDir.run`."""
    interval = interval_ms / 1000
    timeout = max(PROBE_TIMEOUT_MIN_S, 10 * interval)

    async def probe(ld: LogDir) -> None:
        while ld.online:
            await asyncio.sleep(interval)
            # Out of descriptors is logged by the dir and is no reason to stop probing it.
            with contextlib.suppress(LogDirOfflineError, LogDirResourceError):
                await ld.run(ld.probe, timeout=timeout)

    for ld in dirs:
        tasks.spawn(probe(ld), f"probe-{ld.dir_id}")


DESCRIPTORS_PER_PARTITION = 3  # the active segment's .log, .index and .timeindex
DESCRIPTOR_RESERVE = 256  # sockets, the metadata log, checkpoints


def check_open_file_limit(partitions: int) -> None:
    """Say at startup when the open-file limit cannot hold every partition found on disk: running out
    later fails requests (EMFILE) rather than dirs, but the broker cannot serve them."""
    import resource

    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = partitions * DESCRIPTORS_PER_PARTITION + DESCRIPTOR_RESERVE
    if soft != resource.RLIM_INFINITY and soft < need:
        log.error(
            "open-file limit too low for the partitions on disk",
            limit=soft,
            partitions=partitions,
            needed=need,
            hint="raise it (ulimit -n, LimitNOFILE) to at least the number needed",
        )
