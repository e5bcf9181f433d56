"""`partition.metadata`: the topic id of a partition dir (storage PartitionMetadataFile).

    version: 0
    topic_id: <22-character base64 Uuid>

Written atomically. It lets a broker tell a recreated topic's dir from the old one's.
"""

from __future__ import annotations

from pathlib import Path

from broker.storage.errors import CorruptCheckpointError
from kraftpy.storage.atomic import atomic_write
from protocol.uuid import InvalidUuidError, Uuid

PARTITION_METADATA_FILE = "partition.metadata"
_VERSION = 0


def write_partition_metadata(partition_dir: Path, topic_id: Uuid) -> None:
    text = f"version: {_VERSION}\ntopic_id: {topic_id}\n"
    atomic_write(partition_dir / PARTITION_METADATA_FILE, text.encode("ascii"))


def read_partition_metadata(partition_dir: Path) -> Uuid | None:
    """The topic id, or None when the file does not exist."""
    path = partition_dir / PARTITION_METADATA_FILE
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        lines = raw.decode("ascii").splitlines()
    except UnicodeDecodeError:
        raise CorruptCheckpointError(path, "not ASCII text") from None
    if len(lines) < 2:
        raise CorruptCheckpointError(path, "expected a version line and a topic_id line")
    fields = {}
    for line in lines[:2]:
        key, sep, value = line.partition(": ")
        if not sep:
            raise CorruptCheckpointError(path, f"malformed line {line!r}")
        fields[key] = value.strip()
    if fields.get("version") != str(_VERSION):
        raise CorruptCheckpointError(path, f"unknown version {fields.get('version')!r}")
    if "topic_id" not in fields:
        raise CorruptCheckpointError(path, "no topic_id line")
    try:
        return Uuid.from_string(fields["topic_id"])
    except InvalidUuidError as e:
        raise CorruptCheckpointError(path, str(e)) from None
