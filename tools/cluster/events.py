"""What changed between two views of the cluster, as one line per change (for the demo's event log)."""

from __future__ import annotations

from tools.cluster.view import ClusterView


def _ids(xs: tuple[int, ...]) -> str:
    return "[" + ",".join(str(x) for x in xs) + "]"


def diff_views(old: ClusterView | None, new: ClusterView) -> list[str]:
    if old is None:
        return []
    out: list[str] = []
    if old.leader_id != new.leader_id and new.leader_id is not None:
        out.append(f"active controller: {old.leader_id or 'none'} -> {new.leader_id}")
    old_nodes = {n.name: n for n in old.nodes}
    for n in new.nodes:
        o = old_nodes.get(n.name)
        if o is None:
            continue
        if o.process != n.process:
            out.append(f"{n.role} {n.node_id}: process {o.process} -> {n.process}")
        if n.role == "broker" and o.state != n.state:
            out.append(f"broker {n.node_id}: {o.state} -> {n.state}")
    old_dirs = {d.path: d for d in old.dirs}
    for d in new.dirs:
        o = old_dirs.get(d.path)
        if o is None:
            continue
        if o.fault != d.fault:
            out.append(f"dir {d.label}: disk {o.fault or 'healthy'} -> {d.fault or 'healthy'}")
        if o.status != d.status:
            out.append(f"dir {d.label}: {o.status} -> {d.status} in the controller's metadata")
    old_parts = {(p.topic, p.partition): p for p in old.partitions}
    for p in new.partitions:
        o = old_parts.get((p.topic, p.partition))
        name = f"{p.topic}-{p.partition}"
        if o is None:
            out.append(f"{name}: created, leader {p.leader}, replicas {_ids(p.replicas)}")
            continue
        if o.leader != p.leader:
            new_leader = str(p.leader) if p.leader >= 0 else "none"
            old_leader = str(o.leader) if o.leader >= 0 else "none"
            out.append(f"{name}: leader {old_leader} -> {new_leader} (epoch {p.leader_epoch})")
        if o.isr != p.isr:
            out.append(f"{name}: ISR {_ids(o.isr)} -> {_ids(p.isr)}")
        if o.offline != p.offline:
            out.append(f"{name}: offline replicas {_ids(o.offline)} -> {_ids(p.offline)}")
        elif o.directories != p.directories and not any(x == "UNASSIGNED" for x in p.directories):
            out.append(f"{name}: directories {' '.join(p.directories)}")
    return out
