"""Names of partition dirs inside a log dir (Kafka's LocalLog / UnifiedLog naming).

Broker-only: the metadata log has one fixed dir and never moves, deletes or strays it.

- `<topic>-<partition>`: a partition's log;
- `<topic>-<partition>.<32 hex>-future`: the copy being built by an intra-broker move (KIP-113);
- `<topic>-<partition>.<32 hex>-delete`: a log being deleted (the topic part may be cut short so the
  name fits in 255 bytes, as Kafka does);
- `<topic>-<partition>.<32 hex>-stray`: a log the broker found but the metadata does not place here.
"""

from __future__ import annotations

import re
import uuid
from enum import Enum
from typing import NamedTuple

METADATA_TOPIC = "__cluster_metadata"
MAX_NAME_LENGTH = 255


class TopicPartition(NamedTuple):
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


class DirKind(Enum):
    LOG = ""
    FUTURE = "-future"
    DELETE = "-delete"
    STRAY = "-stray"


_SUFFIXED = re.compile(r"^(?P<tp>\S+)\.(?P<uid>[0-9a-f]{32})(?P<suffix>-future|-delete|-stray)$")
_PARTITION = re.compile(r"^(?P<topic>\S+)-(?P<partition>\d+)$")
_SUFFIXES = (DirKind.FUTURE.value, DirKind.DELETE.value, DirKind.STRAY.value)


class PartitionDirName(NamedTuple):
    """A parsed partition dir name. For a `-delete` dir the topic may be a cut-short prefix.

    A tuple rather than a frozen dataclass: a broker's start parses one per partition dir, and a
    frozen dataclass's construction cost more than the parse."""

    name: str
    topic_partition: TopicPartition
    kind: DirKind = DirKind.LOG
    unique_id: str | None = None


def log_dir_name(tp: TopicPartition) -> str:
    return f"{tp.topic}-{tp.partition}"


def _unique_id() -> str:
    return uuid.uuid4().hex


def future_dir_name(tp: TopicPartition, unique_id: str | None = None) -> str:
    return f"{log_dir_name(tp)}.{unique_id or _unique_id()}{DirKind.FUTURE.value}"


def stray_dir_name(tp: TopicPartition, unique_id: str | None = None) -> str:
    return f"{log_dir_name(tp)}.{unique_id or _unique_id()}{DirKind.STRAY.value}"


def delete_dir_name(tp: TopicPartition, unique_id: str | None = None) -> str:
    suffix = f"-{tp.partition}.{unique_id or _unique_id()}{DirKind.DELETE.value}"
    return tp.topic[: MAX_NAME_LENGTH - len(suffix)] + suffix


def parse_partition_dir_name(name: str) -> PartitionDirName | None:
    """The partition a dir name stands for, or None when the name is not a partition dir."""
    if name.endswith(_SUFFIXES):
        m = _SUFFIXED.match(name)
        if m is None:
            return None
        base, unique_id, kind = m["tp"], m["uid"], DirKind(m["suffix"])
    else:
        base, unique_id, kind = name, None, DirKind.LOG
    m = _PARTITION.match(base)
    if m is None:
        return None
    topic, partition = m.groups()
    return PartitionDirName(name, TopicPartition(topic, int(partition)), kind, unique_id)
