"""The broker's log dirs: opened on the failure channel, taken stock of at startup, probed while running.

Each `LogDir` reports its first OSError or stall to the `LogDirFailureChannel`; the probe writes a
small file and fsyncs it every log.dir.probe.interval.ms, so a disk that dies while idle is found
within one interval rather than at the next produce.
"""

from __future__ import annotations

import asyncio
import contextlib
import math

import structlog

from broker.core.local_logs import FoundLog, Inventory, classify
from broker.log_dir_failure import LogDirFailureChannel
from broker.partition_dirs import delete_partition_dir, scan
from broker.startup import BrokerDirs
from broker.storage import LogDirOfflineError
from broker.storage.errors import LogDirResourceError
from broker.storage.log_dir import LogDir
from broker.tasks import BrokerTasks
from kraftpy.heap import after_load, collector_paused
from protocol.uuid import Uuid

PROBE_TIMEOUT_MIN_S = 5.0

log = structlog.get_logger("broker.log_dirs")


def open_log_dirs(dirs: BrokerDirs, failures: LogDirFailureChannel) -> tuple[dict[Uuid, LogDir], LogDir]:
    """The online log dirs by id, and metadata.log.dir's (one of them, or its own)."""
    for path, reason in dirs.offline.items():
        failures.record_offline_at_start(path, reason)
    report = failures.maybe_add_offline_log_dir
    log_dirs = {dir_id: LogDir(path, dir_id, on_failure=report) for path, dir_id in dirs.log_dirs.items()}
    if dirs.metadata_is_log_dir:
        return log_dirs, log_dirs[dirs.metadata_dir_id]
    return log_dirs, LogDir(dirs.metadata_dir, dirs.metadata_dir_id, on_failure=report)


async def take_inventory(log_dirs: dict[Uuid, LogDir]) -> Inventory:
    """The partition logs found in the online dirs, classified; deletions left unfinished by the
    last run are finished. Duplicate logs wait for the metadata (`LogPlacement`)."""

    async def one(ld: LogDir) -> list[FoundLog]:
        try:
            return await ld.run(scan, ld, timeout=math.inf)
        except LogDirOfflineError:
            return []

    with collector_paused():
        # One dir after another, each on its own thread. Reading a partition.metadata per
        # partition is GIL-bound on a cached or flash disk, and threads handing the GIL back and
        # forth at every open and read took 2-2.5x as long on two cores (100,000 partitions in
        # four dirs: 3.4 s against 1.6 s). A dir that hangs holds startup up either way: the
        # inventory needs every dir.
        found = [f for ld in log_dirs.values() for f in await one(ld)]
        inventory = classify(found)
        after_load(len(found))
    for f in inventory.to_delete:
        ld = log_dirs.get(f.dir_id)
        if ld is not None and ld.online:
            with contextlib.suppress(LogDirOfflineError):
                await ld.run(delete_partition_dir, ld.path, f.name, timeout=math.inf)
    return inventory


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
