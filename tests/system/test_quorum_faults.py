"""A fault run of a three-voter controller quorum, each voter on a host of its own (network namespaces).

While a client in a fourth namespace keeps a broker heartbeating and creates topics one after
another, the run injects at least FAULTS random faults on the controllers: kill -9 (and a restart),
SIGSTOP for a while then SIGCONT, and cutting a voter's cable at the switch for a while. Then every
voter is brought back and the client waits until they agree on a leader. Afterwards: every voter's
log verifies (`kraftpy metadata verify`), their committed prefixes are byte-identical, and every
CreateTopics the client saw acknowledged is in that prefix.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.processes import ManagedProcess, ProcessSet, format_storage, random_cluster_id, run_kraftpy
from tests.support.raft_logs import committed_prefix
from tests.system.conftest import require_netns
from tools.cluster import netns
from tools.cluster.configs import controller_props, voters_string, with_extra, write_config
from tools.cluster.launcher import node_command
from tools.cluster.layout import wait_until

pytestmark = [pytest.mark.system, pytest.mark.real, pytest.mark.slow]

FAULTS = int(os.environ.get("QUORUM_FAULTS", "50"))
PORT = 9093
VOTERS = (1, 2, 3)
CLIENT_HOST = 4


def host(i: int) -> str:
    return f"10.200.0.{10 + i}"


class FaultRun:
    def __init__(self, root: Path, procs: ProcessSet, prefix: str, seed: int) -> None:
        self.root, self.procs, self.prefix = root, procs, prefix
        self.rng = random.Random(seed)
        self.cluster_id = random_cluster_id()
        self.voters = voters_string({i: f"{host(i)}:{PORT}" for i in VOTERS})
        self.proc: dict[int, ManagedProcess] = {}
        self.starts = dict.fromkeys(VOTERS, 0)
        self.faults: list[str] = []
        for i in VOTERS:
            props = controller_props(
                node_id=i, port=PORT, metadata_dir=self.meta(i), voters=self.voters, host=host(i)
            )
            config = write_config(self.config(i), with_extra(props, {"metadata.max.idle.interval.ms": 500}))
            format_storage(config, self.cluster_id)

    def config(self, i: int) -> Path:
        return self.root / f"controller-{i}.properties"

    def meta(self, i: int) -> Path:
        return self.root / f"controller-{i}"

    def log_dir(self, i: int) -> Path:
        return self.meta(i) / "__cluster_metadata-0"

    def start(self, i: int) -> None:
        self.starts[i] += 1
        argv = netns.wrap(node_command("controller", self.config(i)), netns.node_name(self.prefix, i))
        self.proc[i] = self.procs.start(f"controller-{i}-run{self.starts[i]}", argv)

    def inject(self) -> None:
        victim = self.rng.choice(VOTERS)
        kind = self.rng.choice(("kill", "pause", "cut"))
        hold = self.rng.uniform(0.2, 3.0)
        proc = self.proc[victim]
        self.faults.append(f"{kind} {victim} {hold:.1f}s")
        if kind == "kill":
            proc.kill9()
            time.sleep(hold)
            self.start(victim)
        elif kind == "pause":
            proc.signal_group(signal.SIGSTOP)
            time.sleep(hold)
            proc.signal_group(signal.SIGCONT)
        else:
            netns.set_link(self.prefix, victim, up=False)
            time.sleep(hold)
            netns.set_link(self.prefix, victim, up=True)
        time.sleep(self.rng.uniform(0.1, 1.5))


@pytest.fixture
def hosts(tmp_path: Path) -> Iterator[tuple[str, ProcessSet]]:
    """The voters' network namespaces (and one for the client) and the processes started in them;
    everything the test started is gone afterwards, whatever happened."""
    require_netns()
    prefix = f"kq{uuid.uuid4().hex[:6]}"
    procs = ProcessSet(tmp_path)
    netns.create(prefix, len(VOTERS) + 1)
    netns.add_blackhole_route()
    try:
        yield prefix, procs
    finally:
        procs.stop_all()
        netns.kill_processes_in([n for n in netns.list_namespaces() if n.startswith(prefix)])
        netns.destroy(prefix)
        netns.remove_blackhole_route(prefix)


def test_fifty_random_faults_lose_nothing_committed(tmp_path: Path, hosts: tuple[str, ProcessSet]) -> None:
    prefix, procs = hosts
    run = FaultRun(tmp_path, procs, prefix, seed=int(os.environ.get("QUORUM_FAULT_SEED", "0")) or None)
    for i in VOTERS:
        run.start(i)
    out = tmp_path / "workload"
    seconds_guess = FAULTS * 2.4 + 10
    client = procs.start(
        "workload",
        netns.wrap(
            [
                sys.executable,
                "-m",
                "tests.support.quorum_workload",
                "--voters",
                run.voters,
                "--cluster-id",
                run.cluster_id,
                "--out",
                str(out),
                "--seconds",
                str(seconds_guess),
            ],
            netns.node_name(prefix, CLIENT_HOST),
        ),
    )
    acknowledged = out / "acknowledged.txt"
    # Faults begin once the cluster works: a leader, the broker registered, a first topic acknowledged.
    wait_until(
        "the first acknowledged topic", lambda: acknowledged.exists() and acknowledged.read_text().strip(), 60
    )
    for _ in range(FAULTS):
        run.inject()
    assert client.wait(timeout=seconds_guess + 200) == 0, client.log_tail()
    final = json.loads((out / "final.json").read_text())
    print(f"\nquorum fault run: faults={len(run.faults)} ({', '.join(run.faults)}) final={final}")
    assert final["converged"], final
    assert final["acknowledged"] > 0, final

    for i in VOTERS:
        run.proc[i].terminate()
    for i in VOTERS:
        verified = run_kraftpy("metadata", "verify", str(run.log_dir(i)), check=False)
        assert verified.returncode == 0, verified.stdout + verified.stderr
    hw = final["high_watermark"]
    prefixes = {committed_prefix(run.log_dir(i), hw) for i in VOTERS}
    assert len(prefixes) == 1, "the voters' committed prefixes differ"

    dumped = run_kraftpy("metadata", "dump", "--json", str(run.log_dir(final["leader"]))).stdout
    created = set()
    for line in dumped.splitlines():
        if line.strip():
            rec = json.loads(line)
            if rec["type"] == "TopicRecord" and rec["offset"] < hw:
                created.add(rec["data"]["Name"])
    acked = set(acknowledged.read_text().split())
    assert acked <= created, f"acknowledged but lost: {sorted(acked - created)[:10]}"


def _quorum_state(run: FaultRun, i: int) -> tuple[int, int]:
    from kraftpy.metalog.checkpoints import read_quorum_state

    state = read_quorum_state(run.log_dir(i) / "quorum-state")
    return (state.leader_id, state.leader_epoch) if state is not None else (-1, 0)


def _logs_agree(run: FaultRun) -> bool:
    logs = [b"".join(p.read_bytes() for p in sorted(run.log_dir(i).glob("*.log"))) for i in VOTERS]
    longest = max(logs, key=len)
    return all(longest.startswith(e) for e in logs)


def test_a_leader_cut_off_from_the_others_resigns_and_a_new_one_is_elected(
    tmp_path: Path, hosts: tuple[str, ProcessSet]
) -> None:
    """Multi-host mode: the active controller's cable is cut. Within two fetch timeouts (4 s) the others
    elect a new leader; the old one resigns (check-quorum), and what it appended alone is never
    committed: once the cable is back, the voters' logs agree byte for byte up to the high watermark."""
    prefix, procs = hosts
    run = FaultRun(tmp_path, procs, prefix, seed=1)
    for i in VOTERS:
        run.start(i)
    old, epoch = wait_until(
        "a leader",
        lambda: next(
            (
                s
                for s in (_quorum_state(run, i) for i in VOTERS)
                if s[0] >= 0 and _quorum_state(run, s[0]) == s
            ),
            None,
        ),
        30,
    )  # type: ignore[misc]
    # Cut only once it is the active controller: its LeaderChange is committed, so the followers
    # fetch from it.
    wait_until(
        "it to be active, followed by the others",
        lambda: (
            "became the active controller" in run.proc[old].log_text()
            and all(_quorum_state(run, i) == (old, epoch) for i in VOTERS)
        ),
        30,
    )
    t0 = time.monotonic()
    netns.set_link(prefix, old, up=False)
    others = [i for i in VOTERS if i != old]
    new = wait_until(
        "a new leader among the others",
        lambda: next(
            (i for i in others if _quorum_state(run, i)[0] == i and _quorum_state(run, i)[1] > epoch),
            None,
        ),
        10,
        interval=0.02,
    )
    # The time is shown, not asserted (the goal is two fetch timeouts, 4 s).
    elected_s = time.monotonic() - t0
    wait_until(
        "the old leader to resign",
        lambda: "resigned as the active controller" in run.proc[old].log_text(),
        30,
    )
    netns.set_link(prefix, old, up=True)
    wait_until("the old leader to follow the new one", lambda: _quorum_state(run, old)[0] == new, 20)
    # The old leader's lone appends are cut once it follows: every voter's log becomes a prefix of
    # the longest.
    wait_until("the voters' logs to agree", lambda: _logs_agree(run), 30)
    # Killed, not stopped: a graceful stop would hand leadership around and append on the way.
    for i in VOTERS:
        run.proc[i].kill9()
    assert _logs_agree(run)
    print(f"\nnew leader {new} elected {elected_s:.2f}s after cutting {old}")
