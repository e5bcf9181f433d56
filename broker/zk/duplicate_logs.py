"""A partition's log in two dirs of a ZooKeeper-mode broker, settled from the logs themselves.

How it happens: a dir is dropped from `log.dirs` (or unreadable at startup without being counted
offline), the controller's LeaderAndIsr makes the broker create its replicas again in another dir and
fetch them from their leaders, then the dir is restored. Kafka's LogManager refuses to start
("Duplicate log directories ... found in both"), and a KRaft broker keeps the copy in the dir the
metadata assigns; ZooKeeper's metadata names no dir, so only the copies can tell.

One copy is kept when the others' histories are part of it, by the leader-epoch rule followers
truncate with: the copy that went further (highest leader epoch of its batches, then log end offset)
is kept if, for each other copy, that copy's last epoch starts at the same offset in it (allowing
for either log starting inside that epoch). Records of the other copy past where that epoch ends in
the kept one were never copied by a later leader; as a follower the other copy would truncate them
anyway, so keeping the first loses nothing the dropped dir would have kept, and they stay on disk.
The others are renamed `-stray`, never deleted. When that does not hold (the copies diverged, e.g.
a log made again empty while this broker led: acknowledged records may be in either) or a copy
cannot be read, nothing is decided: the replica stays offline, both copies untouched, until the
operator moves one aside.
"""

from __future__ import annotations

import contextlib
import math
import os
from dataclasses import dataclass
from pathlib import Path

import structlog

from broker.core.local_logs import FoundLog, Inventory
from broker.storage import LogDirOfflineError
from broker.storage.log_dir import LogDir
from kraftpy.log.batch_io import iter_file_batches
from kraftpy.log.loader import segment_files
from protocol.record_batch import CorruptBatchError, TruncatedBatchError
from protocol.uuid import Uuid

log = structlog.get_logger("broker.zk")


@dataclass(frozen=True)
class CopyExtent:
    """What one copy of a partition's log holds, from its batch headers."""

    path: str
    first_offset: int
    """The first batch's base offset (the log end offset when it holds no batch)."""
    log_end_offset: int
    epochs: tuple[tuple[int, int], ...]
    """(leader epoch, offset of its first batch), in offset order, as the batches carry them."""

    @property
    def latest_epoch(self) -> int:
        return self.epochs[-1][0] if self.epochs else -1

    def end_offset_for(self, epoch: int) -> int | None:
        """Where `epoch` ends in this copy: the next epoch's start, or the log end for the last one."""
        for i, (e, _start) in enumerate(self.epochs):
            if e == epoch:
                return self.epochs[i + 1][1] if i + 1 < len(self.epochs) else self.log_end_offset
        return None

    def start_of(self, epoch: int) -> int | None:
        return next((start for e, start in self.epochs if e == epoch), None)


def read_extent(partition_dir: Path) -> CopyExtent:
    """Batch headers only, nothing written (a torn tail ends the scan, as recovery would cut it).
    A damaged header raises CorruptBatchError."""
    bases, _ = segment_files(os.listdir(partition_dir))
    epochs: list[tuple[int, int]] = []
    first: int | None = None
    end = bases[-1] if bases else 0
    for base in bases:
        seg = partition_dir / f"{base:020d}.log"
        fd = os.open(seg, os.O_RDONLY)
        try:
            size = os.fstat(fd).st_size
            with contextlib.suppress(TruncatedBatchError):
                for _pos, h, _ in iter_file_batches(fd, 0, size, whole=False):
                    if first is None:
                        first = h.base_offset
                    if not epochs or epochs[-1][0] != h.partition_leader_epoch:
                        epochs.append((h.partition_leader_epoch, h.base_offset))
                    end = h.last_offset + 1
        finally:
            os.close(fd)
    return CopyExtent(str(partition_dir), end if first is None else first, end, tuple(epochs))


def shares_history(kept: CopyExtent, other: CopyExtent) -> bool:
    """Whether `other`'s history is part of `kept`'s, by the leader-epoch rule followers truncate
    with: `other`'s last epoch starts at the same offset in `kept` (allowing for either log starting
    inside it). One leader writes each epoch, so everything before agrees too."""
    if not other.epochs:
        return True  # no batches: nothing to lose
    epoch, start = other.epochs[-1]
    kept_start = kept.start_of(epoch)
    if kept_start is None:
        return False
    return (
        kept_start == start
        # `other` starts inside the epoch: its first batches are older than its own log start.
        or (start == other.first_offset and kept_start <= start)
        # `kept` starts inside it: what `other` has below that was deleted by retention elsewhere
        # (a follower starts at its leader's log start).
        or (kept_start == kept.first_offset and kept_start >= start)
    )


def past_end(kept: CopyExtent, other: CopyExtent) -> int:
    """How many offsets of `other` lie past where its last epoch ends in `kept`: records its leader
    appended that no later leader had, which `other` would truncate as a follower too."""
    if not other.epochs:
        return 0
    end = kept.end_offset_for(other.epochs[-1][0])
    return max(other.log_end_offset - end, 0) if end is not None else 0


def choose(copies: list[CopyExtent]) -> CopyExtent | None:
    """The copy to keep (highest leader epoch, then log end offset), or None when another copy's
    history is not part of it: the copies diverged and either may hold acknowledged records."""
    best = max(sorted(copies, key=lambda c: c.path), key=lambda c: (c.latest_epoch, c.log_end_offset))
    if all(c is best or shares_history(best, c) for c in copies):
        return best
    return None


def describe(c: CopyExtent) -> str:
    return f"{c.path} (leader epoch {c.latest_epoch}, log end offset {c.log_end_offset})"


async def settle_duplicates(inventory: Inventory, log_dirs: dict[Uuid, LogDir]) -> None:
    """Keep one copy of each partition found in several dirs where the copies show which (see the
    module's rule); the others join `inventory.strays` (renamed `-stray` at the first metadata).
    Partitions left undecided keep their duplicates, and the log placement keeps them offline."""
    for files in inventory.partitions.values():
        if not files.duplicates:
            continue
        found = files.currents()
        name = f"{found[0].topic}-{found[0].partition}"
        extents: dict[FoundLog, CopyExtent] = {}
        unreadable: list[str] = []
        for f in found:
            ld = log_dirs.get(f.dir_id)
            path = (ld.path if ld is not None else Path(str(f.dir_id))) / f.name
            try:
                if ld is None:
                    raise LogDirOfflineError(str(path), "dir not open")
                extents[f] = await ld.run(read_extent, path, timeout=math.inf)
            except (OSError, CorruptBatchError, LogDirOfflineError) as e:
                unreadable.append(f"{path}: {e}")
        if unreadable:
            log.error(
                "partition log found in more than one dir, and a copy cannot be read; the replica stays "
                "offline with both copies untouched until one is removed",
                partition=name,
                copies=[str(log_dirs[f.dir_id].path / f.name) for f in found if f.dir_id in log_dirs],
                unreadable=unreadable,
            )
            continue
        keep = choose(list(extents.values()))
        if keep is None:
            log.error(
                "partition log found in more than one dir, and the copies diverged (their leader "
                "epochs disagree), so either may hold acknowledged records. The replica stays offline "
                "with both copies untouched; move aside the one to drop and restart",
                partition=name,
                copies=[describe(c) for c in extents.values()],
            )
            continue
        kept = next(f for f, c in extents.items() if c is keep)
        others = [f for f in found if f is not kept]
        log.warning(
            "partition log found in more than one dir; keeping the copy whose history holds the "
            "others', the others are renamed -stray",
            partition=name,
            kept=describe(keep),
            strays=[describe(extents[f]) for f in others],
            # Offsets only a stray holds, past where its last leader epoch ends in the kept copy.
            stray_only_offsets=sum(past_end(keep, extents[f]) for f in others),
        )
        files.current, files.duplicates = kept, []
        inventory.strays.extend(others)


__all__ = ["CopyExtent", "choose", "past_end", "read_extent", "settle_duplicates", "shares_history"]
