"""The cluster as the controller's metadata log describes it, read from disk without touching the network.

The log is opened read-only while the controller appends to it: a batch being written shows up as a
torn tail and is left out, so the image is the log as of a moment ago. Reading files is the same in
local and multi-host mode, and needs nothing from any process.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_QUIET = ("kraftpy.metalog.log", "kraftpy.metalog")


@dataclass(frozen=True)
class TimedRecord:
    offset: int
    timestamp_ms: int
    record: Any  # the metadata record (ApiMessageAndVersion.message)

    @property
    def type(self) -> str:
        return type(self.record).__name__


def _quiet() -> None:
    # A read-only open during an append reports a torn tail; it is expected here, not news.
    for name in _QUIET:
        logging.getLogger(name).setLevel(logging.ERROR)


def read_image(metadata_dir: str | Path, attempts: int = 3) -> Any | None:
    """The MetadataImage the controller's log ends in, or None while there is no log yet."""
    from kraftpy.image import MetadataDelta, MetadataImage
    from kraftpy.metalog import MetadataLog

    _quiet()
    last: Exception | None = None
    for _ in range(attempts):
        try:
            with MetadataLog.open(Path(metadata_dir), read_only=True) as log:
                delta = MetadataDelta(MetadataImage.EMPTY, strict=False)
                log.replay_into(delta)
                return delta.apply()
        except FileNotFoundError:
            return None
        except Exception as e:  # a segment rolled or removed mid-read: read again
            last = e
    if last is not None and "no such metadata log directory" in str(last):
        return None
    if last is not None and "no segment files" in str(last):
        return None
    raise last if last is not None else RuntimeError("unreachable")


def known_leader(metadata_dirs: Sequence[str | Path]) -> tuple[int, int] | None:
    """(leader id, epoch) of the newest epoch any voter's quorum-state names a leader for; None if none.

    A file read, so it works whichever processes are up; it lags an election by the time the voters
    take to write their new epoch, which is a few milliseconds."""
    from kraftpy.log.errors import LogError
    from kraftpy.metalog.checkpoints import read_quorum_state
    from kraftpy.metalog.files import QUORUM_STATE, partition_dir

    best: tuple[int, int] | None = None
    for d in metadata_dirs:
        try:
            state = read_quorum_state(partition_dir(d) / QUORUM_STATE)
        except (LogError, OSError):
            continue
        if state is None or state.leader_id < 0:
            continue
        if best is None or state.leader_epoch > best[1]:
            best = (state.leader_id, state.leader_epoch)
    return best


def iter_records(metadata_dir: str | Path, from_offset: int = 0) -> Iterator[TimedRecord]:
    """Every metadata record from `from_offset` on, with its batch's append time (no snapshot)."""
    from kraftpy.metalog import MetadataLog

    _quiet()
    with MetadataLog.open(Path(metadata_dir), read_only=True) as log:
        start = max(from_offset, log.log_start_offset)
        for offset, amv, batch in log.entries(from_snapshot=False, from_offset=start):
            message = getattr(amv, "message", amv)
            yield TimedRecord(offset, batch.timestamp_ms, message)
