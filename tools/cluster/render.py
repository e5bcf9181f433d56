"""A ClusterView as rich tables (status, the demo's live view) or as plain text (logs, errors)."""

from __future__ import annotations

import io
from collections.abc import Sequence

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from tools.cluster.view import ClusterView, DirView, NodeView, PartitionView


def _size(n: int | None) -> str:
    if n is None:
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


def _node_style(n: NodeView) -> str:
    if n.process != "running":
        return "red"
    if n.role == "broker" and n.state != "unfenced":
        return "yellow"
    return "green" if n.healthy else "yellow"


def nodes_table(view: ClusterView) -> Table:
    t = Table(title="nodes", title_justify="left")
    for col in ("node", "address", "kafka", "pid", "process", "state", "epoch", "dirs"):
        t.add_column(col, no_wrap=True)
    for n in view.nodes:
        style = _node_style(n)
        process = n.process if n.process != "running" or n.healthy else "running, not serving"
        if n.role == "controller":
            # A healthy voter that is not the leader replays the log as a hot standby.
            state = "active" if n.leader else "standby" if n.healthy else "-"
            raft = (n.health or {}).get("raft") or {}
            hw = (n.health or {}).get("high_watermark")
            epoch = f"{raft.get('leader_epoch')}, hw {hw}" if hw is not None else "-"
            dirs = "-"
        elif n.role == "zookeeper":
            state, epoch, dirs = ("serving" if n.healthy else "-"), "-", "-"
        elif (n.health or {}).get("mode") == "zookeeper":
            # A ZooKeeper-mode broker: registered or not, and whether it is the controller.
            h = n.health or {}
            state = "registered" if h.get("registered") else "not registered"
            if (h.get("controller") or {}).get("active"):
                state += ", controller"
            epoch = str(h.get("broker_epoch", "-"))
            dirs = f"{n.online_dirs}/{n.dirs} online"
        else:
            state, epoch, dirs = (
                n.state,
                str(n.epoch) if n.epoch >= 0 else "-",
                f"{n.online_dirs}/{n.dirs} online",
            )
        if view.migration is not None and n.role != "zookeeper" and n.node_id in view.migration.node_phases:
            state += f"; {view.migration.node_phases[n.node_id]}"
        t.add_row(
            f"{n.role} {n.node_id}",
            n.address,
            n.bootstrap or "-",
            str(n.pid or "-"),
            Text(process, style="red" if n.process != "running" else ""),
            Text(state, style=style),
            epoch,
            dirs,
        )
    return t


def _dir_style(d: DirView) -> str:
    if d.status == "offline" or d.fault:
        return "red"
    return "green" if d.status == "online" else "yellow"


def dirs_table(view: ClusterView) -> Table:
    t = Table(title="log dirs", title_justify="left")
    for col in ("dir", "status", "fault", "directory.id", "used", "path"):
        t.add_column(col, no_wrap=True)
    for d in view.dirs:
        used = _size(d.used_bytes) + (f" / {_size(d.size_bytes)}" if d.size_bytes else "")
        path = d.path
        if path.startswith(view.work_dir + "/"):
            path = path[len(view.work_dir) + 1 :]
        t.add_row(
            d.label,
            Text(d.status, style=_dir_style(d)),
            Text(d.fault or "-", style="red" if d.fault else ""),
            d.directory_id or "-",
            used,
            path,
        )
    return t


def _ids(xs: Sequence[int]) -> str:
    return ",".join(str(x) for x in xs) or "-"


def partitions_table(
    view: ClusterView, topics: Sequence[str] | None = None, limit: int | None = None
) -> Table:
    t = Table(title="partitions", title_justify="left")
    for col in ("topic", "partition", "leader", "epoch", "replicas", "isr", "offline", "directories"):
        t.add_column(col)
    shown: list[PartitionView] = [p for p in view.partitions if topics is None or p.topic in topics]
    extra = 0
    if limit is not None and len(shown) > limit:
        extra = len(shown) - limit
        shown = shown[:limit]
    for p in shown:
        leader = Text(str(p.leader), style="red" if p.leader < 0 else "")
        offline = Text(_ids(p.offline), style="red" if p.offline else "")
        isr_style = "yellow" if len(p.isr) < len(p.replicas) else ""
        t.add_row(
            p.topic,
            str(p.partition),
            leader if p.leader >= 0 else Text("none", style="red"),
            str(p.leader_epoch),
            _ids(p.replicas),
            Text(_ids(p.isr), style=isr_style),
            offline,
            " ".join(p.directories),
        )
    if extra:
        t.caption = f"... and {extra} more"
    return t


def header(view: ClusterView) -> Text:
    text = Text.assemble(
        ("kraftpy cluster ", "bold"),
        f"{view.work_dir} ({view.mode})\ncluster id {view.cluster_id}, metadata log offset {view.metadata_offset}",
    )
    m = view.migration
    if m is not None:
        reported = f"{m.state}, driver {m.driver or '-'}" if m.state else "not reported by a controller"
        text.append(f"\nZooKeeper to KRaft migration: {m.phase}; migration state {reported}")
    return text


def render(view: ClusterView, topics: Sequence[str] | None = None, limit: int | None = None) -> Group:
    parts: list[object] = [header(view), nodes_table(view), dirs_table(view)]
    if view.partitions:
        parts.append(partitions_table(view, topics, limit))
    for note in view.notes:
        parts.append(Text(note, style="yellow"))
    return Group(*parts)  # type: ignore[arg-type]


def render_text(view: ClusterView, width: int = 160) -> str:
    buf = io.StringIO()
    Console(file=buf, width=width, force_terminal=False, color_system=None).print(render(view))
    return buf.getvalue()
