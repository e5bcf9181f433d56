"""What the Raft client reads from and writes to the metadata log: blocking calls for the log's thread.

Nothing here may run on the event loop. A multi-voter leader reads and snapshots its log the same
way, so these survive a change of quorum; only the election lives with the single-voter client.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from controller.raft_fetch import EpochEntry, OffsetAndEpoch

if TYPE_CHECKING:
    from kraftpy.metalog.files import SnapshotId
    from kraftpy.metalog.log import MetadataLog


@dataclass(frozen=True)
class LogView:
    """The parts of the log's state Fetch looks at, taken after every change of them."""

    log_start_offset: int = 0
    epochs: tuple[EpochEntry, ...] = ()
    snapshot_sizes: dict[OffsetAndEpoch, int] = field(default_factory=dict)

    @property
    def snapshots(self) -> tuple[OffsetAndEpoch, ...]:
        return tuple(sorted(self.snapshot_sizes))


def read_view(mlog: MetadataLog) -> LogView:
    sizes = {}
    for sid in mlog.snapshot_ids():
        with contextlib.suppress(OSError):
            sizes[OffsetAndEpoch(sid.offset, sid.epoch)] = mlog.snapshot_size(sid)
    return LogView(mlog.log_start_offset, tuple(mlog.epoch_entries()), sizes)


def read_committed(mlog: MetadataLog, offset: int, max_bytes: int, high_watermark: int) -> bytes:
    """Whole batches from the one holding `offset`, none reaching the high watermark."""
    from protocol.record_batch import read_batch_header

    if offset >= high_watermark:
        return b""
    data = mlog.read(offset, max(0, max_bytes))
    pos = 0
    while pos < len(data):
        h = read_batch_header(data, pos)
        if h.last_offset >= high_watermark:
            break
        pos += h.size
    return data[:pos]


def read_snapshot_chunk(mlog: MetadataLog, sid: OffsetAndEpoch, position: int, length: int) -> bytes | None:
    from kraftpy.log.errors import LogError
    from kraftpy.metalog.files import SnapshotId

    try:
        return mlog.read_snapshot_bytes(SnapshotId(sid.offset, sid.epoch), position, length)
    except (OSError, LogError):
        # Deleted by retention meanwhile: the follower asks again from the latest snapshot.
        return None


def write_snapshot(mlog: MetadataLog, records: list[Any], end_offset: int, timestamp_ms: int) -> SnapshotId:
    epoch = mlog.epoch_for_offset(end_offset - 1)
    if epoch is None:
        latest = mlog.latest_snapshot()
        epoch = latest.epoch if latest is not None else 0
    sid = mlog.write_snapshot(records, end_offset, epoch, timestamp_ms)
    mlog.maybe_clean()
    return sid
