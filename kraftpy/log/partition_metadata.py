"""`partition.metadata`: the topic id of a partition dir (`version: 0` / `topic_id: <base64>`).

Byte for byte what Kafka writes (no newline after the id), replaced atomically by `atomic_write`.
It lets a broker tell a recreated topic's dir from the old one's; the metadata log's holds the fixed
metadata topic id.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

from kraftpy.log.errors import CorruptCheckpointError
from kraftpy.storage.atomic import atomic_write
from protocol.uuid import Uuid

PARTITION_METADATA_FILE = "partition.metadata"


def format_partition_metadata(topic_id: Uuid) -> bytes:
    return f"version: 0\ntopic_id: {topic_id}".encode("ascii")


def write_partition_metadata(partition_dir: str | Path, topic_id: Uuid) -> None:
    atomic_write(f"{os.fspath(partition_dir)}/{PARTITION_METADATA_FILE}", format_partition_metadata(topic_id))


_PREFIX = b"version: 0\ntopic_id: "


@functools.lru_cache(maxsize=4096)
def _topic_id(text: str) -> Uuid:
    return Uuid.from_string(text)


def read_partition_metadata(partition_dir: str | Path) -> Uuid | None:
    """The topic id of a partition dir, or None when it has no partition.metadata."""
    return read_partition_metadata_file(os.path.join(partition_dir, PARTITION_METADATA_FILE))


def read_partition_metadata_file(path: str | Path) -> Uuid | None:
    """The topic id in the file, or None when it does not exist.

    Plain os calls on a str path: a broker reads one of these per partition dir at startup.
    """
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        chunks = []
        while chunk := os.read(fd, 4096):
            chunks.append(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if data.startswith(_PREFIX) and b"\n" not in data[len(_PREFIX) :]:
        # The file as written here and by Kafka; the topic id is the same for all of a topic's dirs.
        try:
            return _topic_id(data[len(_PREFIX) :].strip().decode("ascii"))
        except (UnicodeDecodeError, ValueError):
            pass  # the general path below names the problem
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError:
        raise CorruptCheckpointError(path, "not ASCII text") from None
    fields = {}
    for line in text.splitlines():
        if ":" in line:
            key, value = line.split(":", 1)
            fields[key.strip()] = value.strip()
    if fields.get("version") != "0" or "topic_id" not in fields:
        raise CorruptCheckpointError(path, "not a version 0 partition.metadata file")
    try:
        return Uuid.from_string(fields["topic_id"])
    except ValueError as e:
        raise CorruptCheckpointError(path, f"bad topic id: {e}") from None
