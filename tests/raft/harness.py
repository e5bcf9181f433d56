"""Nodes over in-memory logs, and a small scripted cluster that delivers messages by hand.

`Node` is what a shell would be: it persists each `Ready` before it sends, applies what is committed,
and on a crash keeps only its `MemoryLog` (log, snapshot, quorum-state).
"""

from __future__ import annotations

import ast
import random
from collections.abc import Callable, Iterable

from kraftpy.raft.config import QuorumConfig
from kraftpy.raft.core import RaftCore
from kraftpy.raft.memory_log import MemoryLog
from kraftpy.raft.messages import Entry, Envelope, Message
from kraftpy.raft.ready import Ready
from kraftpy.raft.state import Role

CLUSTER_ID = "kraftpy-raft-test-cluster"

# Short timeouts keep scripted and simulated runs small; their ratios follow Kafka's defaults.
FAST = dict(
    election_timeout_ms=100,
    fetch_timeout_ms=200,
    election_backoff_max_ms=100,
    request_timeout_ms=50,
    retry_backoff_ms=10,
    fetch_idle_ms=20,
    election_backoff_step_ms=10,
    max_fetch_records=8,
)


def quorum_config(voters: Iterable[int], **overrides: int) -> QuorumConfig:
    settings = {**FAST, **overrides}
    return QuorumConfig(cluster_id=CLUSTER_ID, voters=frozenset(voters), **settings)


def decode_state(state: bytes) -> list[tuple[int, int, bytes]]:
    """The test state machine's snapshot format: the repr of its list of (offset, epoch, data)."""
    return ast.literal_eval(state.decode())


class Node:
    def __init__(self, node_id: int, config: QuorumConfig, seed: int, now_ms: int = 0) -> None:
        self.id = node_id
        self.config = config
        self.rng = random.Random(seed)
        self.store = MemoryLog(config.voters)
        self.core = self._new_core(now_ms)
        # The replicated state machine: every committed (offset, epoch, data), in order.
        self.machine: list[tuple[int, int, bytes]] = []
        self.readies: list[Ready] = []

    def _new_core(self, now_ms: int) -> RaftCore:
        return RaftCore(
            self.config, self.id, self.store.quorum_state, self.store.view(), self.store, self.rng, now_ms
        )

    def restart(self, now_ms: int) -> None:
        """A crash loses everything volatile; the state machine reloads from the latest snapshot."""
        self.core = self._new_core(now_ms)
        snapshot = self.store.latest_snapshot()
        self.machine = decode_state(snapshot.state) if snapshot else []

    def handle(self, ready: Ready) -> list[Envelope]:
        self.readies.append(ready)
        self.store.persist(ready)
        if ready.apply_snapshot is not None:
            self.machine = decode_state(ready.apply_snapshot.state)
        for entry in ready.committed:
            if entry.offset != len(self.machine):
                raise AssertionError(f"node {self.id} applies {entry.offset} after {len(self.machine)}")
            # One row per record, so a row's index is its offset; a batch's data sits on its first row.
            for i in range(entry.count):
                self.machine.append((entry.offset + i, entry.epoch, entry.data if i == 0 else b""))
        return ready.messages

    def snapshot_state(self, end_offset: int) -> bytes:
        return repr(self.machine[:end_offset]).encode()

    @property
    def role(self) -> Role:
        return self.core.role

    def entries(self) -> list[Entry]:
        return list(self.store.entries)


def checked_tick(core: RaftCore, now: int) -> Ready:
    """`core.tick(now)`, holding the core to what `next_tick_ms` promised: a tick before it changes
    nothing and sends nothing (the controller's shell skips those ticks)."""
    due = core.next_tick_ms()
    before = (core.role, core.epoch, core.leader_id, core.voted_id, core.high_watermark, due)
    ready = core.tick(now)
    if now < due:
        after = (core.role, core.epoch, core.leader_id, core.voted_id, core.high_watermark)
        assert ready == Ready(high_watermark=ready.high_watermark), (now, due, ready)
        assert after == before[:-1] and core.next_tick_ms() == due, (now, before, after)
    return ready


class ScriptedCluster:
    """Messages wait in `inflight` until a test delivers, drops or inspects them; time moves only on request."""

    def __init__(self, voters: Iterable[int], observers: Iterable[int] = (), **overrides: int) -> None:
        config = quorum_config(voters, **overrides)
        self.nodes = {i: Node(i, config, seed=i) for i in sorted({*config.voters, *observers})}
        self.now = 0
        self.inflight: list[Envelope] = []
        self.down: set[int] = set()

    def __getitem__(self, node_id: int) -> Node:
        return self.nodes[node_id]

    def _out(self, node: Node, ready: Ready) -> Ready:
        self.inflight.extend(node.handle(ready))
        return ready

    def tick(self, node_id: int) -> Ready:
        return self._out(self.nodes[node_id], checked_tick(self.nodes[node_id].core, self.now))

    def tick_all(self) -> None:
        for node_id in self.nodes:
            if node_id not in self.down:
                self.tick(node_id)

    def inject(self, source: int, destination: int, message: Message) -> Ready:
        node = self.nodes[destination]
        return self._out(node, node.core.step(Envelope(source, destination, message), self.now))

    def take(self, where: Callable[[Envelope], bool] = lambda e: True) -> list[Envelope]:
        taken = [e for e in self.inflight if where(e)]
        self.inflight = [e for e in self.inflight if not where(e)]
        return taken

    def deliver(self, where: Callable[[Envelope], bool] = lambda e: True) -> list[Envelope]:
        """Deliver the matching messages now in flight (not the ones their delivery produces)."""
        batch = self.take(where)
        for envelope in batch:
            if envelope.destination in self.down or envelope.source in self.down:
                continue
            node = self.nodes[envelope.destination]
            self._out(node, node.core.step(envelope, self.now))
        return batch

    def stabilize(self, limit: int = 1000) -> None:
        for _ in range(limit):
            if not self.inflight:
                return
            self.deliver()
        raise AssertionError("messages still flowing")

    def run(self, ms: int, step: int = 5) -> None:
        """Advance the clock, ticking every live node and delivering everything at once."""
        end = self.now + ms
        while self.now < end:
            self.now += step
            self.tick_all()
            self.stabilize()

    def leaders(self) -> list[int]:
        return [i for i, n in self.nodes.items() if n.role is Role.LEADER and i not in self.down]

    def propose(self, leader: int, *records: bytes) -> Ready:
        node = self.nodes[leader]
        return self._out(node, node.core.append(list(records), self.now))
