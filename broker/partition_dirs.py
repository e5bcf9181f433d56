"""Sync operations on the partition dirs inside one log dir, each meant for one `LogDir.run` hop.

An OSError always propagates unchanged: `LogDir.run` turns it into that dir's failure. Anything
else means a bad file, never a bad disk.
"""

from __future__ import annotations

import os
import resource
import shutil
import time
from collections.abc import Sequence
from pathlib import Path

import structlog

from broker.core.local_logs import FoundLog, LogKind
from broker.storage import CorruptCheckpointError, InconsistentTopicIdError
from broker.storage.dir_names import (
    DirKind,
    PartitionDirName,
    TopicPartition,
    delete_dir_name,
    log_dir_name,
    parse_partition_dir_name,
    stray_dir_name,
)
from broker.storage.log_dir import LogDir
from kraftpy.heap import collector_paused
from kraftpy.log.partition_metadata import (
    PARTITION_METADATA_FILE,
    read_partition_metadata,
    read_partition_metadata_file,
    write_partition_metadata,
)
from kraftpy.storage.atomic import fsync_dir
from protocol.uuid import Uuid

log = structlog.get_logger("broker.log_manager")

_KINDS = {
    DirKind.LOG: LogKind.LOG,
    DirKind.FUTURE: LogKind.FUTURE,
    DirKind.DELETE: LogKind.DELETE,
    DirKind.STRAY: LogKind.STRAY,
}


def read_found(log_dir: LogDir, entries: Sequence[PartitionDirName]) -> list[FoundLog]:
    """These partition dirs of `log_dir` (from `list_partition_dirs`, all or a slice: a startup takes
    stock of a large dir in a few hops), with the topic id from each one's partition.metadata.

    A missing or unreadable partition.metadata gives topic_id None (a stray, field bug 20).
    """
    out: list[FoundLog] = []
    root = str(log_dir.path)
    for entry in entries:
        kind = _KINDS[entry.kind]
        topic_id: Uuid | None = None
        if kind in (LogKind.LOG, LogKind.FUTURE):
            try:
                topic_id = read_partition_metadata_file(f"{root}/{entry.name}/{PARTITION_METADATA_FILE}")
            except CorruptCheckpointError as e:
                log.warning("unreadable partition.metadata, treating the log as stray", error=str(e))
        out.append(
            FoundLog(
                log_dir.dir_id,
                entry.name,
                entry.topic_partition.topic,
                entry.topic_partition.partition,
                kind,
                topic_id,
            )
        )
    return out


def timed_read_found(log_dir: LogDir, entries: Sequence[PartitionDirName]) -> tuple[list[FoundLog], float]:
    """`read_found`, with the seconds per entry this thread spent outside Python (in the kernel or
    waiting on the disk): a few microseconds when the files are in the page cache, ten times
    that and more when the reads go to the disk, and that part threads can share."""
    wall, user = time.perf_counter(), resource.getrusage(resource.RUSAGE_THREAD).ru_utime
    found = read_found(log_dir, entries)
    wall = time.perf_counter() - wall
    user = resource.getrusage(resource.RUSAGE_THREAD).ru_utime - user
    return found, max(wall - user, 0.0) / max(len(entries), 1)


def create_partitions(root: Path, partitions: Sequence[tuple[str, int, Uuid]]) -> list[tuple[str, int]]:
    """Create `<topic>-<partition>/partition.metadata` for each; returns those created (or already there).

    The segment files come with the first open of the partition log. One fsync of `root` covers
    every new entry.
    """
    done: list[tuple[str, int]] = []
    base = str(root)
    with collector_paused():
        _create_all(base, partitions, done)
    if done:
        fsync_dir(root)
    return done


def _create_all(base: str, partitions: Sequence[tuple[str, int, Uuid]], done: list[tuple[str, int]]) -> None:
    for topic, partition, topic_id in partitions:
        path = os.path.join(base, log_dir_name(TopicPartition(topic, partition)))
        try:
            os.mkdir(path)
            stored = None  # a dir just made holds nothing yet
        except FileExistsError:
            stored = read_partition_metadata(path)
        if stored is None:
            write_partition_metadata(path, topic_id)
        elif stored != topic_id:
            raise InconsistentTopicIdError(Path(path), stored, topic_id)
        done.append((topic, partition))


def rename_stray(root: Path, name: str) -> str:
    """Move a partition dir aside as `<topic>-<p>.<uid>-stray` (kept for the operator)."""
    parsed = parse_partition_dir_name(name)
    if parsed is None:
        raise ValueError(f"{name!r} is not a partition dir")
    new = stray_dir_name(parsed.topic_partition)
    os.rename(root / name, root / new)
    fsync_dir(root)
    return new


def delete_partition_dir(root: Path, name: str) -> None:
    """Delete a partition dir: renamed to `-delete` first so a crash part-way is finished at the next start."""
    path = root / name
    if not path.exists():
        return
    parsed = parse_partition_dir_name(name)
    if parsed is not None and parsed.kind is not DirKind.DELETE:
        doomed = root / delete_dir_name(parsed.topic_partition)
        os.rename(path, doomed)
        fsync_dir(root)
        path = doomed
    shutil.rmtree(path)
    fsync_dir(root)


def promote_future(future_root: Path, future_name: str, topic: str, partition: int) -> None:
    """Rename a future log to the partition's current name in its own log dir."""
    target = future_root / log_dir_name(TopicPartition(topic, partition))
    os.rename(future_root / future_name, target)
    fsync_dir(future_root)
