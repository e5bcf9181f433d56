"""Kafka's versioned text checkpoint files (server-common CheckpointFile).

Layout: a version line, a count line, then one entry per line with space-separated fields.
Written to `<name>.tmp`, fsynced, renamed over the old file, and the dir fsynced, so a crash
leaves the old file or the new one. A missing or empty file reads as no entries; anything else
that does not parse raises CorruptCheckpointError (not OSError: the disk is fine, the text is not).
The broker's offset checkpoints and every log's leader-epoch-checkpoint are such files.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from kraftpy.log.errors import CorruptCheckpointError
from kraftpy.storage.atomic import atomic_write

CURRENT_VERSION = 0


def write_checkpoint(path: Path, entries: Iterable[Sequence[object]], version: int = CURRENT_VERSION) -> None:
    rows = [" ".join(str(field) for field in entry) for entry in entries]
    text = "".join(f"{line}\n" for line in (str(version), str(len(rows)), *rows))
    atomic_write(path, text.encode("utf-8"))


def read_checkpoint(path: Path, fields: int, version: int = CURRENT_VERSION) -> list[list[str]]:
    """Each entry as its `fields` text fields; [] when the file is missing or empty."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return []
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise CorruptCheckpointError(path, "not UTF-8 text") from None
    return parse_checkpoint(text, path, fields, version)


def parse_checkpoint(
    text: str, path: Path | str, fields: int, version: int = CURRENT_VERSION
) -> list[list[str]]:
    """The entries of a checkpoint file's text; errors name `path`."""
    lines = text.splitlines()
    if not lines:
        return []
    if lines[0].strip() != str(version):
        raise CorruptCheckpointError(path, f"unknown version {lines[0].strip()!r}, expected {version}")
    if len(lines) < 2:
        raise CorruptCheckpointError(path, "no entry count line")
    try:
        count = int(lines[1].strip())
    except ValueError:
        raise CorruptCheckpointError(path, f"malformed entry count {lines[1]!r}") from None
    body = lines[2:]
    if len(body) != count:
        raise CorruptCheckpointError(path, f"header says {count} entries, file has {len(body)}")
    entries = []
    for i, line in enumerate(body, start=3):
        parts = line.split()
        if len(parts) != fields:
            raise CorruptCheckpointError(path, f"malformed line {i}: {line!r}")
        entries.append(parts)
    return entries


def parse_int(path: Path | str, text: str, what: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise CorruptCheckpointError(path, f"{what} {text!r} is not a number") from None
