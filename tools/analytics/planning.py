"""Decide what a run must read: everything, or only what grew since the checkpoint.

Pure driver-side logic over file listings and the checkpoint; scanning happens afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from protocol.record_batch import BATCH_OVERHEAD, CorruptBatchError, decode_batch
from tools.analytics.checkpoint import BaseSnapshot, Checkpoint
from tools.analytics.errors import AnalysisError
from tools.analytics.logdir import LogFiles, SnapshotFile, choose_base_snapshot
from tools.analytics.splitting import SEGMENT, SNAPSHOT, header_at, read_batch_at


@dataclass(frozen=True, slots=True)
class ScanTask:
    path: Path
    source: str
    start: int
    min_offset: int
    tail_may_be_partial: bool
    snapshot_end_offset: int = -1
    snapshot_timestamp: int = -1


@dataclass(slots=True)
class Plan:
    tasks: list[ScanTask]
    base_snapshot: BaseSnapshot | None
    after_offset: int  # the last offset already ingested (-1 for none)
    rebuild: bool
    reason: str | None = None
    notices: list[str] = field(default_factory=list)


def snapshot_timestamp(snapshot: SnapshotFile) -> int:
    """LastContainedLogTimestamp from the snapshot's header batch, or -1 when it has none."""
    from protocol.control_records import SnapshotHeaderRecord, control_records

    try:
        batch = decode_batch(read_batch_at(snapshot.path, 0))
        if not batch.is_control:
            return -1
        for rec in control_records(batch):
            msg = getattr(rec, "message", rec)
            if isinstance(msg, SnapshotHeaderRecord):
                return int(msg.LastContainedLogTimestamp)
    except (CorruptBatchError, ValueError):
        return -1
    return -1


def _first_offset(files: LogFiles) -> int | None:
    for seg in files.segments:
        if seg.size >= BATCH_OVERHEAD:
            try:
                return header_at(seg.path, 0).base_offset
            except CorruptBatchError:
                return seg.base_offset
    return None


def _fresh(files: LogFiles, reason: str | None, rebuild: bool) -> Plan:
    segments = [s for s in files.segments if s.size > 0]
    log_start = _first_offset(files) if segments else None
    base = choose_base_snapshot(files, log_start)
    notices: list[str] = []
    tasks: list[ScanTask] = []
    min_offset = 0
    base_state: BaseSnapshot | None = None
    if base is not None:
        ts = snapshot_timestamp(base)
        base_state = BaseSnapshot(base.name, base.end_offset, ts)
        min_offset = base.end_offset
        tasks.append(ScanTask(base.path, SNAPSHOT, 0, 0, False, base.end_offset, ts))
        notices.append(
            f"the log starts at offset {log_start if log_start is not None else 'none'}: the state before "
            f"offset {base.end_offset} comes from snapshot {base.name}"
        )
    elif log_start:
        notices.append(
            f"the log starts at offset {log_start} and no snapshot covers the offsets before it: "
            "state from before that offset is unknown"
        )
    for i, seg in enumerate(segments):
        tasks.append(ScanTask(seg.path, SEGMENT, 0, min_offset, i == len(segments) - 1))
    return Plan(tasks, base_state, -1, rebuild, reason, notices)


def plan_ingest(files: LogFiles, cp: Checkpoint | None, *, full: bool) -> Plan:
    """What to scan: all files for a fresh output, only growth for one with a checkpoint.

    A checkpointed file that shrank or whose last batch changed means the log was truncated and
    rewritten; new offsets that do not follow the ingested ones mean segments were deleted unread.
    Either way the output is rebuilt from scratch, and the reason is given.
    """
    log_dir = str(files.directory.resolve())
    if cp is None:
        return _fresh(files, None, rebuild=False)
    if full:
        return _fresh(files, "a full rebuild was asked for", rebuild=True)
    if cp.log_dir != log_dir:
        raise AnalysisError(
            f"the output directory holds the analysis of another log ({cp.log_dir}); "
            "use another --out, or --full to replace it"
        )
    by_name = {s.name: s for s in files.segments}
    tasks: list[ScanTask] = []
    segments = [s for s in files.segments if s.size > 0]
    last_name = segments[-1].name if segments else None
    grew = False
    for name, st in cp.files.items():
        if st.source != SEGMENT:
            continue
        seg = by_name.get(name)
        if seg is None:
            continue  # removed by retention after it was read: nothing lost
        if seg.size < st.size:
            return _fresh(files, f"{name} shrank from {st.size} to {seg.size} bytes since the last run", True)
        if st.last_batch_pos is not None:
            try:
                h = header_at(seg.path, st.last_batch_pos)
                same = h.crc == st.last_batch_crc and h.last_offset == st.last_offset
            except CorruptBatchError:
                same = False
            if not same:
                return _fresh(
                    files, f"{name} was rewritten since the last run (its last read batch changed)", True
                )
        if seg.size > st.size:
            grew = True
            tasks.append(ScanTask(seg.path, SEGMENT, st.size, cp.last_offset + 1, name == last_name))
    new = [s for s in segments if s.name not in cp.files]
    for seg in new:
        if seg.base_offset <= cp.last_offset:
            return _fresh(files, f"new segment {seg.name} overlaps offsets already ingested", True)
    if new and not grew and new[0].base_offset > cp.last_offset + 1:
        return _fresh(
            files,
            f"offsets {cp.last_offset + 1}..{new[0].base_offset - 1} were deleted before this output read them",
            True,
        )
    for seg in new:
        tasks.append(ScanTask(seg.path, SEGMENT, 0, cp.last_offset + 1, seg.name == last_name))
    tasks.sort(key=lambda t: (by_name[t.path.name].base_offset, t.start))
    return Plan(tasks, cp.base_snapshot, cp.last_offset, rebuild=False)
