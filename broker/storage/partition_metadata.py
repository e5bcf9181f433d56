"""`partition.metadata`: the topic id of a partition dir (`version: 0` / `topic_id: <base64>`).

The format is kraftpy.metalog's (byte for byte what Kafka writes); here it is written atomically
with the shared helper and a bad file raises CorruptCheckpointError. It lets a broker tell a
recreated topic's dir from the old one's.
"""

from __future__ import annotations

from pathlib import Path

from broker.storage.errors import CorruptCheckpointError
from kraftpy.metalog.checkpoints import format_partition_metadata
from kraftpy.metalog.checkpoints import read_partition_metadata as _read
from kraftpy.metalog.errors import MetadataLogError
from kraftpy.storage.atomic import atomic_write
from protocol.uuid import Uuid

PARTITION_METADATA_FILE = "partition.metadata"


def write_partition_metadata(partition_dir: Path, topic_id: Uuid) -> None:
    atomic_write(partition_dir / PARTITION_METADATA_FILE, format_partition_metadata(topic_id))


def read_partition_metadata(partition_dir: Path) -> Uuid | None:
    """The topic id, or None when the file does not exist."""
    path = partition_dir / PARTITION_METADATA_FILE
    try:
        return _read(path)
    except (MetadataLogError, ValueError) as e:
        raise CorruptCheckpointError(path, str(e)) from None
