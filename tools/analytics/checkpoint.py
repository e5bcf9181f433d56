"""The record of what an output directory has ingested, so a rerun reads only what is new.

For every file it keeps the byte position where the good data ended, the last offset, and the
position and CRC of the last batch read. A rerun re-reads that one header: if it changed or the
file shrank, the log was truncated and rewritten (a Raft follower does that), so the output is
rebuilt rather than merged with records that no longer exist.

The checkpoint is the commit point of a run: the records of an ingest count only once the
checkpoint lists it, and it is replaced atomically (write to a temp file, then rename).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tools.analytics.errors import AnalysisError, CorruptSpot

CHECKPOINT_FILE = "_checkpoint.json"
FORMAT = 1


@dataclass(slots=True)
class FileState:
    source: str
    size: int  # bytes ingested: the end of the last readable batch
    last_offset: int | None
    last_batch_pos: int | None
    last_batch_crc: int | None


@dataclass(slots=True)
class BaseSnapshot:
    file: str
    end_offset: int
    timestamp: int


@dataclass(slots=True)
class Ingest:
    name: str  # directory under records/, e.g. "ingest=00001"
    records: int
    ranges: int
    files: list[str]


@dataclass(slots=True)
class Checkpoint:
    log_dir: str
    base_snapshot: BaseSnapshot | None = None
    last_offset: int = -1
    files: dict[str, FileState] = field(default_factory=dict)
    ingests: list[Ingest] = field(default_factory=list)
    corrupt: list[CorruptSpot] = field(default_factory=list)

    def next_ingest_name(self, taken: Iterable[str] = ()) -> str:
        """A name after every ingest listed here and every name in `taken` (directories on disk)."""
        numbers = [0]
        for name in [*(i.name for i in self.ingests), *taken]:
            head, _, n = name.partition("=")
            if head == "ingest" and n.isdigit():
                numbers.append(int(n))
        return f"ingest={max(numbers) + 1:05d}"

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "log_dir": self.log_dir,
            "base_snapshot": asdict(self.base_snapshot) if self.base_snapshot else None,
            "last_offset": self.last_offset,
            "files": {k: asdict(v) for k, v in self.files.items()},
            "ingests": [asdict(i) for i in self.ingests],
            "corrupt": [c.to_dict() for c in self.corrupt],
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Checkpoint:
        if d.get("format") != FORMAT:
            raise ValueError(f"unknown checkpoint format {d.get('format')!r}")
        base = d.get("base_snapshot")
        return cls(
            log_dir=d["log_dir"],
            base_snapshot=BaseSnapshot(**base) if base else None,
            last_offset=int(d["last_offset"]),
            files={k: FileState(**v) for k, v in d["files"].items()},
            ingests=[Ingest(**i) for i in d["ingests"]],
            corrupt=[CorruptSpot(**c) for c in d.get("corrupt", [])],
        )


def load_checkpoint(out: Path) -> Checkpoint | None:
    path = out / CHECKPOINT_FILE
    if not path.exists():
        return None
    try:
        return Checkpoint.from_json(json.loads(path.read_text()))
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise AnalysisError(
            f"{path} is unreadable ({e}); remove it or use a fresh --out to analyse from scratch"
        ) from None


def save_checkpoint(out: Path, cp: Checkpoint) -> None:
    write_atomically(out / CHECKPOINT_FILE, json.dumps(cp.to_json(), indent=1).encode())


def write_atomically(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
