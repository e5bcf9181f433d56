"""What the metadata log does not say: dir paths and names, and when a broker noticed a dir fail.

The metadata log knows a directory by its id only. Paths and the `b1/d0` labels `kraftpy cluster`
uses come from a `--dirs FILE` (JSON: {directory id: {"path": ..., "label": ...}}) or from the work
dir of the `kraftpy cluster` the log belongs to, found by walking up from the log dir:
- `cluster.json` (tools/cluster/state.py): each broker's planned log dirs (path, index) and the
  directory ids `storage format` wrote (gone once `cluster down` ran);
- the brokers' logs (`logs/broker-N.log`): the "broker started" line maps each path to its id, and a
  "log dir failed" line tells when the broker noticed a failure (its own clock);
- the brokers' configs (`config/broker-N.properties`): the order of `log.dirs` gives a dir's index,
  and `min.insync.replicas` the brokers' static default.
A real Kafka log dir has none of these: the report shows ids then.

Read on the driver only: a handful of small files.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tools.analytics.errors import AnalysisError

STATE_FILE = "cluster.json"  # tools.cluster.state.STATE_FILE
MAX_PARENTS = 4  # LOGDIR may be <work>/controller-N/meta or <work>/controller-N/meta/__cluster_metadata-0
_BROKER_LOG = re.compile(r"broker-(\d+)\.log$")
_BROKER_CONFIG = re.compile(r"broker-(\d+)\.properties$")
_WANTED = ('"broker started"', '"log dir failed"')


@dataclass(frozen=True, slots=True)
class DirName:
    path: str | None = None
    label: str | None = None
    broker: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "label": self.label, "broker": self.broker}


@dataclass(frozen=True, slots=True)
class Detection:
    """A broker's "log dir failed" line."""

    broker: int
    directory: str | None  # its id, when the line or the names give it
    path: str | None
    timestamp: int


@dataclass(slots=True)
class ClusterContext:
    dirs: dict[str, DirName] = field(default_factory=dict)
    source: str | None = None  # where the names came from, for the report
    work_dir: Path | None = None
    detections: list[Detection] = field(default_factory=list)
    static_min_isr: int | None = None  # min.insync.replicas all brokers' config files agree on
    notices: list[str] = field(default_factory=list)

    def detected(self, broker: int, directory: str, before_ms: int, slack_ms: int = 1_000) -> int | None:
        """When `broker` last noticed `directory` fail, at most `slack_ms` after `before_ms` (the clocks
        of one machine), and not in an earlier failure of it (10 minutes at most before)."""
        path = self.dirs.get(directory, DirName()).path
        times = [
            d.timestamp
            for d in self.detections
            if d.broker == broker
            and (d.directory == directory or (path is not None and d.path == path))
            and before_ms - 600_000 <= d.timestamp <= before_ms + slack_ms
        ]
        return max(times) if times else None


def load_dirs_file(path: str | Path) -> dict[str, DirName]:
    """{directory id: {"path": ..., "label": ..., "broker": ...}} (each key optional), or {id: "label"}."""
    try:
        raw = json.loads(Path(path).read_text())
    except OSError as e:
        raise AnalysisError(f"cannot read --dirs {path}: {e.strerror or e}") from None
    except ValueError as e:
        raise AnalysisError(f"--dirs {path} is not JSON: {e}") from None
    if not isinstance(raw, dict):
        raise AnalysisError(f"--dirs {path}: expected an object of directory id -> {{path, label}}")
    out: dict[str, DirName] = {}
    for dir_id, v in raw.items():
        if isinstance(v, str):
            out[str(dir_id)] = DirName(label=v)
        elif isinstance(v, dict):
            broker = v.get("broker")
            out[str(dir_id)] = DirName(
                path=None if v.get("path") is None else str(v["path"]),
                label=None if v.get("label") is None else str(v["label"]),
                broker=int(broker) if isinstance(broker, int | str) and str(broker).isdigit() else None,
            )
        else:
            raise AnalysisError(f"--dirs {path}: the entry of {dir_id} is neither a label nor an object")
    return out


def find_work_dir(logdir: str | Path) -> Path | None:
    """The `kraftpy cluster` work dir above a metadata log dir: one with cluster.json, or with the
    brokers' logs in logs/ and their configs in config/ (what `cluster down` leaves)."""
    p = Path(logdir).resolve()
    for d in [p, *list(p.parents)[:MAX_PARENTS]]:
        if (d / STATE_FILE).is_file():
            return d
        if (d / "config").is_dir() and any(_BROKER_LOG.search(f.name) for f in _listdir(d / "logs")):
            return d
    return None


def _listdir(d: Path) -> list[Path]:
    try:
        return sorted(d.iterdir())
    except OSError:
        return []


def label(broker: int, index: int) -> str:
    return f"b{broker}/d{index}"  # as tools.cluster.view.dir_label


def discover(logdir: str | Path, dirs_file: str | Path | None = None) -> ClusterContext:
    """Names from `dirs_file` first, then from the cluster work dir above `logdir` (if any)."""
    ctx = ClusterContext()
    given = load_dirs_file(dirs_file) if dirs_file is not None else {}
    work = find_work_dir(logdir)
    sources = []
    if work is not None:
        ctx.work_dir = work
        found, what = _from_work_dir(work, ctx)
        if found:
            ctx.dirs.update(found)
            sources.append(f"the cluster work dir {work} ({', '.join(what)})")
    if given:
        for dir_id, name in given.items():
            old = ctx.dirs.get(dir_id, DirName())
            ctx.dirs[dir_id] = DirName(
                path=name.path or old.path, label=name.label or old.label, broker=name.broker or old.broker
            )
        sources.insert(0, f"--dirs {dirs_file}")
    ctx.source = " and ".join(sources) if sources else None
    return ctx


def _from_work_dir(work: Path, ctx: ClusterContext) -> tuple[dict[str, DirName], list[str]]:
    found: dict[str, DirName] = {}
    what: list[str] = []
    index_of = _config_indexes(work, ctx)  # (broker, path) -> index
    state = _read_json(work / STATE_FILE)
    if state is not None:
        ids = {str(k): str(v) for k, v in (state.get("directory_ids") or {}).items()}
        for n in state.get("nodes") or []:
            if n.get("role") != "broker":
                continue
            for d in n.get("log_dirs") or []:
                dir_id = ids.get(str(d.get("path")))
                if dir_id:
                    broker, index = int(n["node_id"]), int(d.get("index", 0))
                    found[dir_id] = DirName(path=str(d["path"]), label=label(broker, index), broker=broker)
        if found:
            what.append(STATE_FILE)
    from_logs = 0
    for log in _listdir(work / "logs"):
        m = _BROKER_LOG.search(log.name)
        if m is None:
            continue
        broker = int(m.group(1))
        for event in _events(log):
            if event.get("event") == "broker started":
                dirs = event.get("log_dirs") or {}
                for i, (path, dir_id) in enumerate(dirs.items()):
                    if str(dir_id) in found:
                        continue
                    index = index_of.get((broker, str(path)), i)
                    found[str(dir_id)] = DirName(path=str(path), label=label(broker, index), broker=broker)
                    from_logs += 1
            elif event.get("event") == "log dir failed":
                ts = _iso_ms(str(event.get("timestamp", "")))
                if ts is not None:
                    dir_id = event.get("dir_id")
                    ctx.detections.append(
                        Detection(
                            broker=broker,
                            directory=None if dir_id in (None, "None") else str(dir_id),
                            path=None if event.get("path") is None else str(event["path"]),
                            timestamp=ts,
                        )
                    )
    if from_logs:
        what.append("the brokers' logs")
    if ctx.detections:
        what.append("failure times from the brokers' logs")
    return found, what


def _config_indexes(work: Path, ctx: ClusterContext) -> dict[tuple[int, str], int]:
    out: dict[tuple[int, str], int] = {}
    min_isr: set[str] = set()
    brokers = 0
    for f in _listdir(work / "config"):
        m = _BROKER_CONFIG.search(f.name)
        if m is None:
            continue
        props = _properties(f)
        brokers += 1
        broker = int(m.group(1))
        for i, path in enumerate(p.strip() for p in props.get("log.dirs", "").split(",") if p.strip()):
            out[(broker, path)] = i
        if "min.insync.replicas" in props:
            min_isr.add(props["min.insync.replicas"])
        else:
            min_isr.add("1")  # Kafka's default
    if brokers and len(min_isr) == 1:
        value = min_isr.pop()
        if value.isdigit():
            ctx.static_min_isr = int(value)
    elif len(min_isr) > 1:
        ctx.notices.append(
            f"the brokers' config files in {work / 'config'} disagree on min.insync.replicas "
            f"({', '.join(sorted(min_isr))}): not used"
        )
    return out


def _properties(path: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return out
    for line in lines:
        line = line.strip()
        if not line or line.startswith(("#", "!")) or "=" not in line:
            continue
        k, v = line.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        d = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return d if isinstance(d, dict) else None


def _events(log: Path) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    try:
        with log.open(errors="replace") as f:
            for line in f:
                if not line.startswith("{") or not any(w in line for w in _WANTED):
                    continue
                try:
                    d = json.loads(line)
                except ValueError:
                    continue
                if isinstance(d, dict):
                    out.append(d)
    except OSError:
        pass
    return out


def _iso_ms(text: str) -> int | None:
    try:
        t = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if t.tzinfo is None:
        t = t.replace(tzinfo=dt.UTC)
    return int(t.timestamp() * 1000)
