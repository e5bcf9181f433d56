"""What a broker finds in its online log dirs at startup, sorted into what it means (no I/O here).

The shell lists each dir's partition dirs and reads their `partition.metadata`; `classify` turns
that into one `LocalFiles` per partition name (its current log and its future log, each with the
dir holding it and the topic id on disk) plus the dirs to clean up:

- a partition dir without `partition.metadata` cannot be matched to a topic id: it is a stray,
  renamed aside rather than a reason to refuse to start (KAFKA-16814, field bug 20);
- `-delete` dirs are finished off; `-stray` dirs are left for the operator;
- the same partition's current log in two dirs is a conflict the broker cannot settle by itself
  (Kafka refuses to start too): `classify` raises DuplicateLogError naming both.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum

from protocol.uuid import Uuid


class LogKind(Enum):
    LOG = "log"
    FUTURE = "future"
    DELETE = "delete"
    STRAY = "stray"


@dataclass(frozen=True)
class FoundLog:
    """One partition dir in one log dir."""

    dir_id: Uuid
    name: str
    """The partition dir's own name, e.g. `orders-3` or `orders-3.<hex>-future`."""
    topic: str
    partition: int
    kind: LogKind
    topic_id: Uuid | None
    """From partition.metadata; None when the file is missing."""

    @property
    def key(self) -> tuple[str, int]:
        return (self.topic, self.partition)


@dataclass
class LocalFiles:
    current: FoundLog | None = None
    future: FoundLog | None = None


@dataclass
class Inventory:
    partitions: dict[tuple[str, int], LocalFiles] = field(default_factory=dict)
    strays: list[FoundLog] = field(default_factory=list)
    """Logs to rename aside (`-stray`): no topic id on disk, or (later) not wanted by the metadata."""
    to_delete: list[FoundLog] = field(default_factory=list)
    """`-delete` dirs left by an interrupted deletion."""
    kept_strays: list[FoundLog] = field(default_factory=list)
    """`-stray` dirs from earlier runs, left alone."""

    def files(self, topic: str, partition: int) -> LocalFiles | None:
        return self.partitions.get((topic, partition))

    def replica_counts(self) -> dict[Uuid, int]:
        counts: dict[Uuid, int] = {}
        for f in self.partitions.values():
            for log in (f.current, f.future):
                if log is not None:
                    counts[log.dir_id] = counts.get(log.dir_id, 0) + 1
        return counts


class DuplicateLogError(RuntimeError):
    """The same partition has a current log in two dirs."""


def classify(found: Iterable[FoundLog], paths: dict[Uuid, str] | None = None) -> Inventory:
    inv = Inventory()
    paths = paths or {}
    for log in sorted(found, key=lambda f: (f.topic, f.partition, f.kind.value, str(f.dir_id), f.name)):
        if log.kind is LogKind.DELETE:
            inv.to_delete.append(log)
            continue
        if log.kind is LogKind.STRAY:
            inv.kept_strays.append(log)
            continue
        if log.topic_id is None:
            inv.strays.append(log)
            continue
        files = inv.partitions.setdefault(log.key, LocalFiles())
        if log.kind is LogKind.LOG:
            if files.current is not None:
                a = paths.get(files.current.dir_id, str(files.current.dir_id))
                b = paths.get(log.dir_id, str(log.dir_id))
                raise DuplicateLogError(
                    f"Duplicate log directories for {log.topic}-{log.partition} are found in both {a} and {b}. "
                    "It is likely because the log directory was copied; remove one of them and restart."
                )
            files.current = log
        elif files.future is None:
            files.future = log
        else:
            # Two future logs: keep one, the other is an abandoned copy.
            inv.strays.append(log)
    return inv
