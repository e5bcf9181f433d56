"""A cluster of three controllers run with the operator's tools: `kraftpy cluster up|kill|start|status`
and `kraftpy metadata quorum describe`. Also what the quorum tool prints, from fixed answers."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.processes import run_kraftpy
from tests.support.raft_logs import committed_prefix
from tools.cli.errors import UserError
from tools.cli.quorum import (
    REPLICATION_HEADERS,
    QuorumInfo,
    Replica,
    parse_addresses,
    replication_rows,
    status_text,
    table_text,
)
from tools.cluster.layout import wait_until

INFO = QuorumInfo(
    cluster_id="abc",
    leader_id=3001,
    leader_epoch=7,
    high_watermark=120,
    voters=(
        Replica(3000, 100, 5_000, 4_000),
        Replica(3001, 121, 9_000, 9_000),
        Replica(3002, 121, 8_990, 8_990),
    ),
    observers=(Replica(1, 120, 8_999, 8_999),),
)


def test_status_prints_kafkas_labels_and_the_slowest_voters_lag() -> None:
    assert status_text(INFO).splitlines() == [
        "ClusterId:              abc",
        "LeaderId:               3001",
        "LeaderEpoch:            7",
        "HighWatermark:          120",
        "MaxFollowerLag:         21",
        "MaxFollowerLagTimeMs:   5000",
        "CurrentVoters:          [3000,3001,3002]",
        "CurrentObservers:       [1]",
    ]


def test_replication_lists_the_leader_then_followers_then_observers() -> None:
    rows = replication_rows(INFO)
    assert [(r[0], r[2], r[5]) for r in rows] == [
        ("3001", "0", "Leader"),
        ("3000", "21", "Follower"),
        ("3002", "0", "Follower"),
        ("1", "1", "Observer"),
    ]
    lines = table_text(REPLICATION_HEADERS, rows).splitlines()
    assert lines[0].split() == list(REPLICATION_HEADERS)
    assert lines[1].split("\t")[0].strip() == "3001" and len(lines) == 5


def test_a_caught_up_quorum_has_no_lag() -> None:
    voters = tuple(Replica(i, 50, 10, 10) for i in (1, 2, 3))
    info = QuorumInfo("c", 2, 1, 50, voters, ())
    assert "MaxFollowerLag:         0" in status_text(info)
    assert "MaxFollowerLagTimeMs:   0" in status_text(info)


@pytest.mark.parametrize("text", ["", "host", "host:", ":9093", "h:0", "h:70000", "h:x"])
def test_bad_bootstrap_controller_is_refused(text: str) -> None:
    with pytest.raises(UserError):
        parse_addresses(text)


def test_bootstrap_controller_takes_a_list() -> None:
    assert parse_addresses("a:1, b:2") == [("a", 1), ("b", 2)]


# ---------------------------------------------------------------------------- the cluster


def _status(work: Path) -> dict[str, Any]:
    return json.loads(run_kraftpy("cluster", "status", "--work-dir", str(work), "--json").stdout)


def _describe(address: str, what: str) -> str:
    return run_kraftpy("metadata", "quorum", "--bootstrap-controller", address, "describe", what).stdout


def _leader(st: dict[str, Any]) -> int | None:
    leaders = [c["node_id"] for c in st["controllers"] if c["leader"]]
    assert len(leaders) <= 1, st["controllers"]
    return leaders[0] if leaders else None


@pytest.mark.system
@pytest.mark.slow
def test_three_controllers_from_the_cluster_tool_survive_a_kill_of_the_leader(tmp_path: Path) -> None:
    work = tmp_path / "cluster"
    where = ("--work-dir", str(work))
    try:
        up = run_kraftpy("cluster", "up", *where, "--brokers", "2", "--dirs", "1", timeout=240)
        assert "controller quorum 3000@" in up.stdout and "healthy and unfenced" in up.stdout
        st = _status(work)
        assert [c["node_id"] for c in st["controllers"]] == [3000, 3001, 3002]
        leader = _leader(st)
        assert leader is not None and st["controller"]["node_id"] == leader
        address = {c["node_id"]: c["address"] for c in st["controllers"]}
        follower = next(n for n in address if n != leader)

        # Asked at a follower, the tool finds the leader.
        status = _describe(address[follower], "--status")
        assert f"LeaderId:               {leader}\n" in status
        assert "CurrentVoters:          [3000,3001,3002]" in status
        assert "CurrentObservers:       [1,2]" in status
        rows = _describe(address[follower], "--replication").splitlines()[1:]
        assert [r.split()[0] for r in rows][:1] == [str(leader)] and rows[0].split()[-1] == "Leader"
        assert sorted(r.split()[-1] for r in rows) == [
            "Follower",
            "Follower",
            "Leader",
            "Observer",
            "Observer",
        ]

        killed_at = time.monotonic()
        assert "killed" in run_kraftpy("cluster", "kill", str(leader), *where).stdout

        def new_leader_known() -> dict[str, Any] | None:
            s = _status(work)
            return s if _leader(s) not in (None, leader) else None

        st = wait_until("a new leader", new_leader_known)
        new_leader = _leader(st)
        elected_s = time.monotonic() - killed_at

        def on_new_leader() -> dict[str, Any] | None:
            s = _status(work)
            brokers = s["brokers"]
            ok = all(
                b["state"] == "unfenced"
                and (b["health"] or {}).get("controller", {}).get("leader_id") == new_leader
                for b in brokers
            )
            return s if ok else None

        st = wait_until("both brokers unfenced and following the new leader", on_new_leader)
        print(f"new leader {new_leader} seen {elected_s:.2f}s after the kill (status polled every 0.2s)")
        assert f"LeaderId:               {new_leader}\n" in _describe(address[follower], "--status")

        # The killed voter comes back as a follower and catches up; the logs agree up to the high watermark.
        run_kraftpy("cluster", "start", str(leader), *where, timeout=120)
        state = json.loads((work / "cluster.json").read_text())
        meta = {n["node_id"]: n["metadata_dir"] for n in state["nodes"] if n["role"] == "controller"}

        def caught_up() -> int | None:
            s = _status(work)
            ends = {c["node_id"]: (c["health"] or {}).get("log_end_offset", -1) for c in s["controllers"]}
            hw = next(c["health"]["high_watermark"] for c in s["controllers"] if c["leader"])
            return hw if all(e >= hw for e in ends.values()) else None

        hw = wait_until("the restarted voter catching up", caught_up)
        prefixes = {n: committed_prefix(Path(meta[n]) / "__cluster_metadata-0", hw) for n in meta}
        assert len(set(prefixes.values())) == 1, {n: len(p) for n, p in prefixes.items()}
        assert len(prefixes[leader]) > 0
        assert _leader(_status(work)) == new_leader
    finally:
        run_kraftpy("cluster", "down", *where, timeout=120)
