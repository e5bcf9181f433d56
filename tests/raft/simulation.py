"""A seeded simulation of three voters and two observers over a faulty network, on a simulated clock.

One seed fixes everything: the network's drops, delays, duplicates (and so reorderings), crashes that
keep only the persisted log and quorum-state, partitions, graceful resignations, proposals and local
snapshots. Invariants are checked after every step of the clock.
"""

from __future__ import annotations

import heapq
import random
from dataclasses import dataclass, field

from kraftpy.raft.messages import Envelope, VoteResponse
from kraftpy.raft.ready import Ready
from kraftpy.raft.state import Role
from tests.raft.harness import Node, checked_tick, quorum_config

VOTERS = (1, 2, 3)
OBSERVERS = (4, 5)
STEP_MS = 10
DURATION_MS = 2000
# After this the network heals and every node is up, so a schedule must also end with the quorum
# recovered: one leader, and every node caught up with what it committed.
QUIET_AFTER_MS = 1100
LAST_PROPOSAL_MS = DURATION_MS - 300
LEADER = 0  # a fault aimed at whoever leads when it fires
SNAPSHOT_EVERY = 12  # applied records beyond the log start before a node snapshots


@dataclass
class Faults:
    drop: float
    duplicate: float
    max_delay_ms: int
    crashes: list[tuple[int, int, int]]  # (at ms, node, down for ms)
    partitions: list[tuple[int, int, int]]  # (at ms, node, isolated for ms)
    resigns: list[int]  # at ms, the current leader resigns gracefully

    @classmethod
    def draw(cls, rng: random.Random) -> Faults:
        # Faults aimed at the leader are the ones that make elections between unequal logs.
        targets = [LEADER, LEADER, LEADER, *VOTERS, *OBSERVERS]

        def events(most: int) -> list[tuple[int, int, int]]:
            out = []
            for _ in range(rng.randint(0, most)):
                at = rng.randrange(0, QUIET_AFTER_MS - 100)
                out.append((at, rng.choice(targets), min(rng.randint(30, 500), QUIET_AFTER_MS - at)))
            return sorted(out)

        return cls(
            drop=rng.choice([0.0, 0.02, 0.1, 0.25]),
            duplicate=rng.choice([0.0, 0.05, 0.2]),
            max_delay_ms=rng.choice([1, 10, 25, 40]),
            crashes=events(3),
            partitions=events(2),
            resigns=sorted(rng.randrange(0, QUIET_AFTER_MS) for _ in range(rng.randint(0, 1))),
        )

    def describe(self) -> str:
        return (
            f"drop={self.drop} dup={self.duplicate} delay<={self.max_delay_ms}ms "
            f"crashes={self.crashes} partitions={self.partitions} resigns={self.resigns}"
        )


@dataclass
class Outcome:
    seed: int
    faults: Faults
    violations: list[str] = field(default_factory=list)
    committed: int = 0
    epochs: int = 0
    messages: int = 0
    dropped: int = 0
    duplicated: int = 0
    crashes: int = 0
    snapshots_installed: int = 0
    leader_at_end: int = -1

    def line(self) -> str:
        return (
            f"seed={self.seed} {self.faults.describe()} | messages={self.messages} dropped={self.dropped} "
            f"duplicated={self.duplicated} crashes={self.crashes} epochs={self.epochs} committed={self.committed} "
            f"snapshot_installs={self.snapshots_installed} leader_at_end={self.leader_at_end} "
            f"violations={len(self.violations)}"
        )


class Simulation:
    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.faults = Faults.draw(self.rng)
        config = quorum_config(VOTERS)
        self.nodes = {i: Node(i, config, seed=seed * 31 + i) for i in (*VOTERS, *OBSERVERS)}
        self.now = 0
        self.queue: list[tuple[int, int, Envelope]] = []
        self.seq = 0
        self.down_until: dict[int, int] = {}
        self.isolated_until: dict[int, int] = {}
        self.outcome = Outcome(seed, self.faults)
        # What the invariants remember across steps.
        self.leader_of_epoch: dict[int, int] = {}
        self.committed: list[tuple[int, int, bytes]] = []
        self.last_hw: dict[int, int] = dict.fromkeys(self.nodes, 0)
        self.was_leader: dict[int, bool] = dict.fromkeys(self.nodes, False)
        self.next_payload = 0
        self.trace: list[str] = []

    # ---- the world ----------------------------------------------------------------------------

    def _up(self, node_id: int) -> bool:
        return self.down_until.get(node_id, -1) <= self.now

    def _connected(self, node_id: int) -> bool:
        return self._up(node_id) and self.isolated_until.get(node_id, -1) <= self.now

    def _send(self, envelopes: list[Envelope]) -> None:
        quiet = self.now >= QUIET_AFTER_MS
        for envelope in envelopes:
            self.outcome.messages += 1
            if not quiet and self.rng.random() < self.faults.drop:
                self.outcome.dropped += 1
                continue
            copies = 2 if not quiet and self.rng.random() < self.faults.duplicate else 1
            self.outcome.duplicated += copies - 1
            for _ in range(copies):
                self.seq += 1
                # Delays stay below the timeouts (100 ms election, 200 ms fetch) as on a LAN; a longer
                # outage is a partition. Once quiet, the network is fast as well as reliable.
                at = self.now + self.rng.randint(1, 5 if quiet else self.faults.max_delay_ms)
                heapq.heappush(self.queue, (at, self.seq, envelope))

    def _handle(self, node_id: int, ready: Ready) -> None:
        node = self.nodes[node_id]
        if ready.apply_snapshot is not None:
            self.outcome.snapshots_installed += 1
        messages = node.handle(ready)
        self._check_persisted_before_sent(node_id, messages)
        self._send(messages)
        if ready.apply_snapshot is not None:
            self._check_prefix(node_id, node.machine, "installed snapshot")
        for entry in ready.committed:
            # Row by row, as the harness's state machine stores a batch.
            for i in range(entry.count):
                row = (entry.offset + i, entry.epoch, entry.data if i == 0 else b"")
                self._check_committed(node_id, entry.offset + i, row)

    def _crash(self, node_id: int, down_for: int) -> None:
        if not self._up(node_id):
            return
        self.outcome.crashes += 1
        self.down_until[node_id] = self.now + down_for
        self.trace.append(f"{self.now}: crash {node_id} for {down_for}ms")

    def _restart_due(self) -> None:
        for node_id, until in list(self.down_until.items()):
            if until <= self.now:
                del self.down_until[node_id]
                node = self.nodes[node_id]
                node.restart(self.now)
                self.last_hw[node_id] = node.core.high_watermark
                self.was_leader[node_id] = False
                self._check_prefix(node_id, node.machine, "restart")
                self.trace.append(
                    f"{self.now}: restart {node_id} as {node.role.value} epoch {node.core.epoch}"
                )

    def _target(self, node_id: int) -> int | None:
        if node_id != LEADER:
            return node_id
        leaders = [i for i in VOTERS if self._up(i) and self.nodes[i].role is Role.LEADER]
        return leaders[0] if leaders else None

    def run(self) -> Outcome:
        crashes, partitions, resigns = (
            list(self.faults.crashes),
            list(self.faults.partitions),
            list(self.faults.resigns),
        )
        while self.now < DURATION_MS and len(self.outcome.violations) < 5:
            self.now += STEP_MS
            while crashes and crashes[0][0] <= self.now:
                _, node_id, down_for = crashes.pop(0)
                target = self._target(node_id)
                if target is not None:
                    self._crash(target, down_for)
            while partitions and partitions[0][0] <= self.now:
                _, node_id, isolated_for = partitions.pop(0)
                target = self._target(node_id)
                if target is not None:
                    self.isolated_until[target] = self.now + isolated_for
                    self.trace.append(f"{self.now}: isolate {target} for {isolated_for}ms")
            self._restart_due()
            while self.queue and self.queue[0][0] <= self.now:
                _, _, envelope = heapq.heappop(self.queue)
                if self._connected(envelope.destination) and self._connected(envelope.source):
                    node = self.nodes[envelope.destination]
                    self._handle(envelope.destination, node.core.step(envelope, self.now))
            for node_id, node in self.nodes.items():
                if self._up(node_id):
                    self._handle(node_id, checked_tick(node.core, self.now))
            leaders = [i for i in VOTERS if self._up(i) and self.nodes[i].role is Role.LEADER]
            if resigns and resigns[0] <= self.now:
                resigns.pop(0)
                for leader in leaders:
                    self.trace.append(f"{self.now}: leader {leader} resigns")
                    self._handle(leader, self.nodes[leader].core.resign(self.now))
            elif leaders and self.now % 30 == 0 and self.now <= LAST_PROPOSAL_MS:
                self._propose(leaders[0])
            self._maybe_snapshot()
            self._check_step()
        self.outcome.committed = len(self.committed)
        self.outcome.epochs = len(self.leader_of_epoch)
        self._check_recovered()
        return self.outcome

    def _check_recovered(self) -> None:
        if self.outcome.violations:
            return
        final = [i for i in VOTERS if self.nodes[i].role is Role.LEADER]
        if len(final) != 1:
            self._violation(f"no single leader after the quiet period: {final}")
            return
        self.outcome.leader_at_end = leader = final[0]
        hw = self.nodes[leader].core.high_watermark
        if hw != self.nodes[leader].store.end_offset:
            self._violation(
                f"leader {leader} has not committed its log: hw {hw}, end {self.nodes[leader].store.end_offset}"
            )
        behind = {i: n.core.high_watermark for i, n in self.nodes.items() if n.core.high_watermark != hw}
        if behind:
            self._violation(f"nodes behind leader {leader} (hw {hw}) after the quiet period: {behind}")

    def _propose(self, leader: int) -> None:
        records = []
        for _ in range(self.rng.randint(1, 3)):
            self.next_payload += 1
            records.append(f"r{self.next_payload}".encode())
        # Batches of one to three records, as the controller appends one batch per operation.
        counts = [self.rng.randint(1, 3) for _ in records]
        self._handle(leader, self.nodes[leader].core.append(records, self.now, counts=counts))

    def _maybe_snapshot(self) -> None:
        for node_id, node in self.nodes.items():
            core = node.core
            if self._up(node_id) and core.applied - core.view.log_start >= SNAPSHOT_EVERY:
                self._handle(
                    node_id, core.create_snapshot(core.applied, node.snapshot_state(core.applied), self.now)
                )

    # ---- invariants ---------------------------------------------------------------------------

    def _violation(self, text: str) -> None:
        self.outcome.violations.append(f"t={self.now} {text}")

    def _check_persisted_before_sent(self, node_id: int, messages: list[Envelope]) -> None:
        """What a message says of the sender's epoch and vote is already in its stored quorum-state."""
        stored = self.nodes[node_id].store.quorum_state
        for envelope in messages:
            message = envelope.message
            epoch = getattr(message, "LeaderEpoch", None)
            if epoch is None:
                epoch = getattr(message, "CandidateEpoch", None)
            if epoch is not None and epoch > stored.leader_epoch:
                self._violation(f"node {node_id} sent epoch {epoch} with {stored} stored: {envelope}")
            if (
                isinstance(message, VoteResponse)
                and message.VoteGranted
                and (stored.voted_id != envelope.destination or stored.leader_epoch != message.LeaderEpoch)
            ):
                self._violation(f"node {node_id} granted a vote it has not stored ({stored}): {envelope}")

    def _check_committed(self, node_id: int, offset: int, entry: tuple[int, int, bytes]) -> None:
        if offset < len(self.committed):
            if self.committed[offset] != entry:
                self._violation(
                    f"node {node_id} committed {entry} where {self.committed[offset]} was committed"
                )
        elif offset == len(self.committed):
            self.committed.append(entry)
        else:
            self._violation(f"node {node_id} committed {offset} past the known prefix {len(self.committed)}")

    def _check_prefix(self, node_id: int, machine: list[tuple[int, int, bytes]], why: str) -> None:
        for entry in machine:
            self._check_committed(node_id, entry[0], entry)

    def _check_step(self) -> None:
        self._check_majority_holds_committed()
        for node_id, node in self.nodes.items():
            if not self._up(node_id):
                continue
            core = node.core
            if core.role is Role.LEADER:
                known = self.leader_of_epoch.setdefault(core.epoch, node_id)
                if known != node_id:
                    self._violation(f"two leaders in epoch {core.epoch}: {known} and {node_id}")
                if not self.was_leader[node_id]:
                    self._check_leader_completeness(node_id)
            self.was_leader[node_id] = core.role is Role.LEADER
            if core.high_watermark < self.last_hw[node_id]:
                self._violation(
                    f"node {node_id} high watermark fell {self.last_hw[node_id]} -> {core.high_watermark}"
                )
            self.last_hw[node_id] = core.high_watermark
            if len(node.machine) != core.applied:
                self._violation(
                    f"node {node_id} applied {len(node.machine)} but the core says {core.applied}"
                )

    def _check_majority_holds_committed(self) -> None:
        """The last committed record is in a majority of the voters' stored logs (or their snapshots):
        observers never count toward the high watermark."""
        if not self.committed:
            return
        offset, epoch, data = last = self.committed[-1]
        holders = 0
        for node_id in VOTERS:
            store = self.nodes[node_id].store
            if offset < store.log_start:
                holders += 1
            elif offset < store.end_offset:
                entry = store.batch_at(offset)
                assert entry is not None
                row_data = entry.data if offset == entry.offset else b""
                holders += (entry.epoch, row_data) == (epoch, data)
        if holders < len(VOTERS) // 2 + 1:
            self._violation(f"committed {last} is stored on only {holders} voters")

    def _check_leader_completeness(self, node_id: int) -> None:
        """A new leader's log holds every committed record: nothing committed can be lost."""
        store = self.nodes[node_id].store
        if store.end_offset < len(self.committed):
            self._violation(
                f"leader {node_id} ends at {store.end_offset}, below committed {len(self.committed)}"
            )
            return
        for entry in store.entries:
            if entry.offset >= len(self.committed):
                break
            if self.committed[entry.offset] != (entry.offset, entry.epoch, entry.data) or (
                entry.end > len(self.committed)
                and entry.end > store.log_start
                and any(self.committed[o][1] != entry.epoch for o in range(entry.offset, len(self.committed)))
            ):
                self._violation(
                    f"leader {node_id} holds {entry} over committed {self.committed[entry.offset]}"
                )
