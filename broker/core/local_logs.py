"""What a broker finds in its online log dirs at startup, sorted into what it means (no I/O here).

The shell lists each dir's partition dirs and reads their `partition.metadata`; `classify` turns
that into one `LocalFiles` per partition name (its current log and its future log, each with the
dir holding it and the topic id on disk) plus the dirs to clean up:

- a partition log without `partition.metadata` is kept as the partition's current log with no topic
  id: if the metadata places that partition here the broker adopts it (writes the file again), else
  it is a stray, renamed aside; never a reason to refuse to start (KAFKA-16814, field bug 20). Kafka
  treats every such log as a stray, and so hid the acknowledged records of a replica that had lost
  only that file;
- a future log without it is a stray: an unfinished copy is not worth guessing about;
- `-delete` dirs are finished off; `-stray` dirs are left for the operator;
- the same partition's current log in two dirs (a dir dropped from `log.dirs`, its replicas made
  again elsewhere, then the dir restored; or a copy by hand) is left for the metadata to settle:
  the copy in the dir it assigns is kept and the others are strays. Kafka refuses to start
  ("Duplicate log directories") until someone deletes a copy by hand.
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
    """From partition.metadata; None when the file is missing or unreadable."""

    @property
    def key(self) -> tuple[str, int]:
        return (self.topic, self.partition)


@dataclass
class LocalFiles:
    current: FoundLog | None = None
    future: FoundLog | None = None
    duplicates: list[FoundLog] = field(default_factory=list)
    """Other current logs of the same partition, in other dirs: which one is kept, the metadata decides."""

    def currents(self) -> list[FoundLog]:
        return ([self.current] if self.current is not None else []) + self.duplicates


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


def duplicate_message(logs: Iterable[FoundLog], paths: dict[Uuid, str]) -> str:
    logs = list(logs)
    where = " and ".join(paths.get(f.dir_id, str(f.dir_id)) for f in logs)
    return (
        f"Duplicate log directories for {logs[0].topic}-{logs[0].partition} are found in {where}, and the metadata "
        "assigns the replica to none of them. It is likely because the log directory was copied; remove all but "
        "one and restart."
    )


def classify(found: Iterable[FoundLog]) -> Inventory:
    inv = Inventory()
    found = list(found)
    # A handful of dirs hold every log: name each dir once, not once per log.
    dir_names = {d: str(d) for d in {f.dir_id for f in found}}
    kinds = {k: k.value for k in LogKind}
    for log in sorted(
        found, key=lambda f: (f.topic, f.partition, kinds[f.kind], dir_names[f.dir_id], f.name)
    ):
        if log.kind is LogKind.DELETE:
            inv.to_delete.append(log)
            continue
        if log.kind is LogKind.STRAY:
            inv.kept_strays.append(log)
            continue
        if log.topic_id is None and log.kind is not LogKind.LOG:
            inv.strays.append(log)
            continue
        key = (log.topic, log.partition)
        files = inv.partitions.get(key)
        if files is None:
            files = inv.partitions[key] = LocalFiles()
        if log.kind is LogKind.LOG:
            if files.current is not None and (files.current.topic_id is None) != (log.topic_id is None):
                # One copy knows its topic id and the other lost it: the one without is the stray.
                if files.current.topic_id is None:
                    inv.strays.append(files.current)
                    files.current = log
                else:
                    inv.strays.append(log)
                continue
            if files.current is not None:
                files.duplicates.append(log)
                continue
            files.current = log
        elif files.future is None:
            files.future = log
        else:
            # Two future logs: keep one, the other is an abandoned copy.
            inv.strays.append(log)
    return inv
