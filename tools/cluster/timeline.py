"""When each step of a dir failover happened, from the records and logs the cluster wrote.

- detection: the broker's log line saying the dir failed (its own clock, JSON `timestamp`);
- report: the controller's batch holding the BrokerRegistrationChangeRecord without that dir, and
  the PartitionChangeRecords that take the broker's replicas there out of leadership and ISR (the
  controller writes them together, in one batch, for one heartbeat; the batch's time is when it was
  written, before `controller.quorum.append.linger.ms` and the quorum);
- committed: the broker's heartbeat answered (the controller answers once the batch is committed);
- leaders: the last of those PartitionChangeRecords that names a new leader.
All clocks are this machine's, so the differences are meaningful.
"""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass, field
from pathlib import Path

from tools.cluster.metadata import iter_records


@dataclass
class FailoverTimeline:
    fault_ms: int
    broker_id: int
    directory_id: str
    detected_ms: int | None = None
    reported_ms: int | None = None
    reported_offset: int | None = None
    leaders_ms: int | None = None
    last_change_offset: int | None = None
    moved: dict[str, int] = field(default_factory=dict)  # partition -> new leader

    def ms_after_fault(self, t: int | None) -> int | None:
        return None if t is None else t - self.fault_ms


def iso_ms(text: str) -> int | None:
    try:
        dt = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=datetime.UTC)
    return int(dt.timestamp() * 1000)


def log_events(log: str | Path, event: str) -> list[dict[str, object]]:
    """The JSON log lines of `log` whose event is `event`, each with its time as `ts_ms`."""
    try:
        lines = Path(log).read_text(errors="replace").splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        if event not in line or not line.startswith("{"):
            continue
        try:
            d = json.loads(line)
        except ValueError:
            continue
        t = iso_ms(str(d.get("timestamp", "")))
        if d.get("event") == event and t is not None:
            d["ts_ms"] = t
            out.append(d)
    return out


def detection_ms(broker_log: str | Path, dir_path: str, after_ms: int) -> int | None:
    """Time of the broker's first "log dir failed" line for `dir_path` at or after `after_ms`."""
    try:
        lines = Path(broker_log).read_text(errors="replace").splitlines()
    except OSError:
        return None
    for line in lines:
        if "log dir failed" not in line or not line.startswith("{"):
            continue
        try:
            d = json.loads(line)
        except ValueError:
            continue
        if d.get("path") != dir_path:
            continue
        t = iso_ms(str(d.get("timestamp", "")))
        if t is not None and t >= after_ms - 5:
            return t
    return None


def acknowledged_ms(broker_log: str | Path, after_ms: int) -> int | None:
    """Time of the broker's first "controller acknowledged offline log dir" line at or after
    `after_ms`: the heartbeat reporting the dir was answered, which the controller does once the
    records it wrote for it are committed to the quorum."""
    times = [
        int(e["ts_ms"])  # type: ignore[call-overload]
        for e in log_events(broker_log, "controller acknowledged offline log dir")
        if int(e["ts_ms"]) >= after_ms  # type: ignore[call-overload]
    ]
    return min(times, default=None)


def failover_timeline(
    metadata_dir: str | Path,
    *,
    fault_ms: int,
    broker_id: int,
    directory_id: str,
    affected: list[tuple[str, int]],
    leaders: dict[tuple[str, int], int],
    topic_ids: dict[str, str],
    from_offset: int = 0,
) -> FailoverTimeline:
    """`affected`: partitions with `broker_id`'s replica in the failed dir; `leaders`: their leader
    before the fault; `topic_ids`: topic name -> id."""
    tl = FailoverTimeline(fault_ms=fault_ms, broker_id=broker_id, directory_id=directory_id)
    want = {(topic_ids[t], p): (t, p) for t, p in affected if t in topic_ids}
    led_here = {k for k, (t, p) in want.items() if leaders.get((t, p)) == broker_id}
    waiting = set(led_here)
    for rec in iter_records(metadata_dir, from_offset):
        name = rec.type
        r = rec.record
        if name == "BrokerRegistrationChangeRecord" and tl.reported_ms is None:
            dirs = getattr(r, "LogDirs", None)
            gone = dirs is not None and directory_id not in {str(d) for d in dirs}
            if r.BrokerId == broker_id and gone and rec.timestamp_ms >= fault_ms - 5:
                tl.reported_ms, tl.reported_offset = rec.timestamp_ms, rec.offset
        elif name == "PartitionChangeRecord" and rec.timestamp_ms >= fault_ms - 5:
            key = (str(r.TopicId), r.PartitionId)
            if key in want:
                tl.last_change_offset = max(tl.last_change_offset or 0, rec.offset)
                if key in waiting and r.Leader != -2 and r.Leader != broker_id:
                    waiting.discard(key)
                    t, p = want[key]
                    tl.moved[f"{t}-{p}"] = r.Leader
                    if not waiting:
                        tl.leaders_ms = rec.timestamp_ms
        if tl.reported_ms is not None and not waiting and tl.leaders_ms is not None:
            break
    if not led_here:
        tl.leaders_ms = tl.reported_ms
    return tl
