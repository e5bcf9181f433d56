"""etcd-raft style scripted interactions: `testdata/*.txt` holds stanzas of commands, `----`, and the
expected output (every Ready, in the order the shell handles it). RAFT_REWRITE=1 rewrites the
expected output from what the core did, for review in the diff.

Commands:
  cluster voters=1,2,3 [observers=4,5]   start a fresh cluster at time 0
  advance <ms>                           move the clock
  tick <id>...                           tick these nodes now
  deliver [from=<id>] [to=<id>]          deliver the matching messages in flight (one round)
  drop [from=<id>] [to=<id>]             lose the matching messages in flight
  stabilize                              deliver until nothing is in flight
  propose <id> <record>...               append records on a leader
  resign <id>                            graceful resignation
  snapshot <id>                          snapshot a node's state machine at its applied offset
  crash <id> / restart <id>              lose volatile state / come back from the stored log
  status                                 role, epoch, leader, vote, log and high watermark of every node
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields, is_dataclass
from pathlib import Path

from kraftpy.raft.messages import Entry, Envelope, Snapshot
from kraftpy.raft.ready import Ready
from tests.raft.harness import CLUSTER_ID, ScriptedCluster, checked_tick


def render_value(value: object) -> str:
    if isinstance(value, Entry):
        return f"{value.offset}@{value.epoch}:{value.data.decode()}"
    if isinstance(value, bytes):
        return f"<{len(value)} bytes>"
    if isinstance(value, tuple):
        return "[" + ",".join(render_value(v) for v in value) + "]"
    if hasattr(value, "name") and isinstance(getattr(value, "value", None), int):
        return str(value.name)
    if is_dataclass(value) and not isinstance(value, type):
        return "(" + " ".join(f"{f.name}={render_value(getattr(value, f.name))}" for f in fields(value)) + ")"
    return str(value)


def render_envelope(envelope: Envelope) -> str:
    message = envelope.message
    parts = [
        f"{f.name}={render_value(getattr(message, f.name))}"
        for f in fields(message)
        if not (f.name == "ClusterId" and getattr(message, f.name) == CLUSTER_ID)
        and not (f.name in ("Records", "UnalignedRecords") and not getattr(message, f.name))
        and getattr(message, f.name) is not None
    ]
    return f"{envelope.source}->{envelope.destination} {type(message).__name__} " + " ".join(parts)


def render_snapshot(snapshot: Snapshot) -> str:
    return f"end={snapshot.snapshot_id.EndOffset} epoch={snapshot.snapshot_id.Epoch}"


def render_ready(node_id: int, ready: Ready) -> list[str]:
    out = []
    p = f"{node_id}:"
    if ready.install_snapshot:
        out.append(f"{p} install snapshot {render_snapshot(ready.install_snapshot)}")
    if ready.truncate_to is not None:
        out.append(f"{p} truncate to {ready.truncate_to}")
    if ready.appends:
        out.append(f"{p} append {render_value(tuple(ready.appends))}")
    if ready.local_snapshot:
        out.append(f"{p} snapshot {render_snapshot(ready.local_snapshot)}")
    if ready.quorum_state:
        q = ready.quorum_state
        out.append(f"{p} persist quorum-state epoch={q.leader_epoch} leader={q.leader_id} voted={q.voted_id}")
    out.extend(f"{p} send {render_envelope(e)}" for e in ready.messages)
    if ready.apply_snapshot:
        out.append(f"{p} apply snapshot {render_snapshot(ready.apply_snapshot)}")
    if ready.committed:
        out.append(f"{p} commit {render_value(tuple(ready.committed))} hw={ready.high_watermark}")
    return out


class Interaction:
    def __init__(self) -> None:
        self.cluster = ScriptedCluster([1])
        self.out: list[str] = []

    def _record(self, node_id: int, ready: Ready) -> None:
        self.out.extend(render_ready(node_id, ready))

    def _matches(self, args: dict[str, str]) -> Callable[[Envelope], bool]:
        def where(e: Envelope) -> bool:
            return ("from" not in args or e.source == int(args["from"])) and (
                "to" not in args or e.destination == int(args["to"])
            )

        return where

    def _deliver(self, args: dict[str, str]) -> None:
        c = self.cluster
        for envelope in c.take(self._matches(args)):
            if envelope.destination in c.down:
                self.out.append(f"dropped {render_envelope(envelope)} (node down)")
                continue
            node = c[envelope.destination]
            ready = node.core.step(envelope, c.now)
            c.inflight.extend(node.handle(ready))
            self._record(envelope.destination, ready)

    def run(self, command: str) -> str:
        self.out = []
        words = command.split()
        name, positional = words[0], [w for w in words[1:] if "=" not in w]
        args = dict(w.split("=", 1) for w in words[1:] if "=" in w)
        c = self.cluster
        if name == "cluster":
            voters = [int(v) for v in args["voters"].split(",")]
            observers = [int(v) for v in args.get("observers", "").split(",") if v]
            self.cluster = ScriptedCluster(voters, observers)
        elif name == "advance":
            c.now += int(positional[0])
            self.out.append(f"now={c.now}")
        elif name == "tick":
            for node_id in map(int, positional):
                ready = checked_tick(c[node_id].core, c.now)
                c.inflight.extend(c[node_id].handle(ready))
                self._record(node_id, ready)
        elif name == "deliver":
            self._deliver(args)
        elif name == "drop":
            self.out.extend(f"dropped {render_envelope(e)}" for e in c.take(self._matches(args)))
        elif name == "stabilize":
            while c.inflight:
                self._deliver({})
        elif name == "propose":
            node_id = int(positional[0])
            ready = c[node_id].core.append([r.encode() for r in positional[1:]], c.now)
            c.inflight.extend(c[node_id].handle(ready))
            self._record(node_id, ready)
        elif name == "resign":
            node_id = int(positional[0])
            ready = c[node_id].core.resign(c.now)
            c.inflight.extend(c[node_id].handle(ready))
            self._record(node_id, ready)
        elif name == "snapshot":
            node = c[int(positional[0])]
            ready = node.core.create_snapshot(
                node.core.applied, node.snapshot_state(node.core.applied), c.now
            )
            c.inflight.extend(node.handle(ready))
            self._record(node.id, ready)
        elif name == "crash":
            c.down.add(int(positional[0]))
        elif name == "restart":
            node_id = int(positional[0])
            c.down.discard(node_id)
            c[node_id].restart(c.now)
        elif name == "status":
            for node_id, node in c.nodes.items():
                core = node.core
                state = "down" if node_id in c.down else core.role.value
                self.out.append(
                    f"{node_id}: {state} epoch={core.epoch} leader={core.leader_id} voted={core.voted_id} "
                    f"log=[{node.store.log_start},{node.store.end_offset}) hw={core.high_watermark} "
                    f"applied={len(node.machine)}"
                )
        else:
            raise ValueError(f"unknown command {name!r}")
        return "\n".join(self.out) + ("\n" if self.out else "")


def run_file(path: Path, rewrite: bool) -> list[tuple[str, str, str]]:
    """Run every stanza; return (command, expected, actual) for those that differ."""
    interaction = Interaction()
    mismatches = []
    rewritten: list[str] = []
    lines = path.read_text().splitlines(keepends=True)
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip() or line.startswith("#"):
            rewritten.append(line)
            i += 1
            continue
        command = line.strip()
        i += 1
        if i >= len(lines) or lines[i].strip() != "----":
            raise ValueError(f"{path.name}: expected ---- after {command!r}")
        i += 1
        expected = []
        while i < len(lines) and lines[i].strip():
            expected.append(lines[i])
            i += 1
        actual = interaction.run(command)
        if "".join(expected) != actual:
            mismatches.append((command, "".join(expected), actual))
        rewritten.extend([line, "----\n", actual])
    if rewrite:
        path.write_text("".join(rewritten))
    return mismatches
