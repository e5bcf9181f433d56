"""Broker startup with 4 log dirs and 100,000 replicas: time to unfenced, and what AssignReplicasToDirs cost.

    .venv/bin/python bench/broker_startup.py                 # 100,000 replicas
    .venv/bin/python bench/broker_startup.py --scale 0.01    # 1,000 replicas, for a quick look

Three runs of one real `kraftpy-broker` against a real `kraftpy-controller`:

1. placement while running: the broker is up, topics with every replica on it are created; the
   broker creates the partition dirs, spreads them over its 4 dirs and reports them in batches;
2. cold start on new disks: the broker stops, its 4 log dirs are wiped and formatted again (new
   directory ids), and it starts: from process start to unfenced it must create every replica
   again and have the controller record every one of them (KIP-858: fenced until then);
3. warm restart: once the broker's metadata has caught up with the controller's (as a running
   broker's has: one stopped the moment it is unfenced may still be fetching the records of its own
   assignments, and would fetch and replay them at the restart), stop and start again with the data
   in place (nothing to report).

For each: seconds from process start to unfenced (the broker's own clock, from the start of
`broker.main`; also from the end of imports and dir checks, and the wall clock from spawning the
process until this script sees it running), the CPU seconds the broker and the controller spent
meanwhile (every thread: steadier than the wall clock on a shared machine), AssignReplicasToDirs requests and
bytes sent (msgpack bodies), beside what one request per replica and one request listing every
replica (KIP-589's design) would have cost, in msgpack and in Kafka's binary encoding.

The cold and warm figures are printed beside the goals (cold start <= 10 s, warm restart <= 5 s, at
100,000 replicas; a smaller run gets a linear projection, which its fixed costs inflate).
`--profile DIR` samples the broker and the controller with py-spy during the cold and warm starts.

The broker runs with `--control-plane-only` (no Produce/Fetch/replication) unless `--with-dataplane`
is given: the figures are about registration, placement and fencing. The log dirs live on tmpfs when run as root (one mount, removed at the end), so the figures measure
the protocol and the broker, not this machine's disk; `--disk` picks plain dirs instead.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from broker.core.assignments import Assignment, build_request  # noqa: E402
from protocol.rpc.create_topics import CreateTopicsRequest  # noqa: E402
from protocol.transport import RpcClient, codec  # noqa: E402
from protocol.uuid import Uuid  # noqa: E402
from tools.cluster.configs import write_broker_config, write_controller_config  # noqa: E402
from tools.cluster.launcher import (  # noqa: E402
    ProcessSet,
    cpu_seconds,
    format_storage,
    free_ports,
    get_json,
    wait_for_healthz,
)
from tools.cluster.layout import random_cluster_id  # noqa: E402

BROKER = 2
DIRS = 4
PARTITIONS_PER_TOPIC = 1000
GOAL_REPLICAS = 100_000
GOAL_COLD_S = 10.0
"""Cold start on new disks, process start to unfenced, at GOAL_REPLICAS replicas."""
GOAL_WARM_S = 5.0
"""Warm restart, process start to unfenced, at GOAL_REPLICAS replicas."""


def kafka_binary_size(dirs: int, topics_per_dir: int, partitions: int) -> int:
    """AssignReplicasToDirsRequest v0 in Kafka's flexible binary encoding (body only, no header).

    BrokerId 4 + BrokerEpoch 8 + compact array length + tag section; each directory: Uuid 16 + topic
    array length + tags; each topic: Uuid 16 + partition array length + tags; each partition:
    PartitionIndex 4 + tags 1. Array lengths are unsigned varints (1 byte below 127 entries, 2 below 16,383).
    """

    def uvarint(n: int) -> int:
        size = 1
        while n >= 0x80:
            n >>= 7
            size += 1
        return size

    per_topic_parts = partitions // max(1, dirs * topics_per_dir)
    size = 4 + 8 + uvarint(dirs + 1) + 1
    for _ in range(dirs):
        size += 16 + uvarint(topics_per_dir + 1) + 1
        for _ in range(topics_per_dir):
            size += 16 + uvarint(per_topic_parts + 1) + 1 + per_topic_parts * 5
    return size


def alternatives(replicas: int, topics: int, dir_ids: list[Uuid]) -> dict[str, Any]:
    """What other designs would send to place `replicas` replicas."""
    topic_ids = [Uuid.from_longs(1 + t, 7) for t in range(topics)]
    per_topic = replicas // topics
    one = build_request(BROKER, 1_000_000, [Assignment(topic_ids[0], 0, dir_ids[0], "", 0)])
    one_bytes = len(codec.encode(one.to_wire(0, "msgpack"), "msgpack"))
    everything = [
        Assignment(topic_ids[t], p, dir_ids[(t * per_topic + p) % len(dir_ids)], "", 0)
        for t in range(topics)
        for p in range(per_topic)
    ]
    all_req = build_request(BROKER, 1_000_000, everything)
    all_bytes = len(codec.encode(all_req.to_wire(0, "msgpack"), "msgpack"))
    return {
        "per_replica": {
            "requests": replicas,
            "msgpack_bytes": one_bytes * replicas,
            "kafka_binary_bytes": kafka_binary_size(1, 1, 1) * replicas,
        },
        "list_all": {
            "requests": 1,
            "msgpack_bytes": all_bytes,
            "kafka_binary_bytes": kafka_binary_size(len(dir_ids), topics, replicas),
        },
    }


class Bench:
    def __init__(self, root: Path, replicas: int, *, dataplane: bool = False) -> None:
        self.root = root
        self.dataplane = dataplane
        self.replicas = replicas
        self.topics = max(1, replicas // PARTITIONS_PER_TOPIC)
        self.per_topic = max(1, replicas // self.topics)
        self.procs = ProcessSet(root)
        self.cluster_id = random_cluster_id()
        self.cport, self.bport = free_ports(2)
        self.log_dirs = [root / f"data{i}" for i in range(DIRS)]
        self.broker_config = root / "broker.properties"

    def setup(self) -> None:
        cfg = write_controller_config(
            self.root / "controller.properties", node_id=1, port=self.cport, metadata_dir=self.root / "cmeta"
        )
        format_storage(cfg, self.cluster_id)
        write_broker_config(
            self.broker_config,
            node_id=BROKER,
            port=self.bport,
            log_dirs=self.log_dirs,
            voters={1: self.cport},
            metadata_dir=self.root / "bmeta",
            extra={"broker.heartbeat.interval.ms": 500, "initial.broker.registration.timeout.ms": 600000},
        )
        format_storage(self.broker_config, self.cluster_id)
        self.controller = self.procs.start_controller(cfg, name="controller")
        wait_for_healthz(self.controller, timeout=60)

    def health(self) -> dict[str, Any]:
        try:
            status, body = get_json(f"http://127.0.0.1:{self.bport}/healthz", timeout=5)
        except OSError:
            return {}
        return body if status == 200 and isinstance(body, dict) else {}

    def start_broker(self, name: str, profile: Path | None = None) -> tuple[dict[str, Any], float]:
        t0 = time.monotonic()
        controller_cpu = cpu_seconds([self.controller.pid])
        args = () if self.dataplane else ("--control-plane-only",)
        self.broker = self.procs.start_broker(self.broker_config, name=name, args=args)
        spies = (
            [
                _attach_py_spy(self.broker.pid, profile / f"{name}.txt"),
                _attach_py_spy(self.controller.pid, profile / f"{name}-controller.txt"),
            ]
            if profile is not None
            else []
        )
        try:
            h = self.wait(lambda h: h.get("broker_state") == "RUNNING", "unfenced", timeout=3600)
            # The CPU both processes spent (every thread, user and system): steadier than the
            # wall clock when the two share this machine's cores with each other and the poller.
            h["cpu_seconds"] = {
                "broker": round(cpu_seconds([self.broker.pid]), 2),
                "controller": round(cpu_seconds([self.controller.pid]) - controller_cpu, 2),
            }
        finally:
            for spy in spies:
                _detach_py_spy(spy)
        return h, time.monotonic() - t0

    def wait(self, pred: Any, what: str, timeout: float = 3600) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.broker.alive:
                raise SystemExit(f"broker exited {self.broker.returncode}:\n{self.broker.log_tail(30)}")
            h = self.health()
            if h and pred(h):
                return h
            time.sleep(0.2)
        raise SystemExit(f"timed out waiting for {what}:\n{self.broker.log_tail(30)}")

    def catch_up(self) -> int:
        """Wait until the broker's metadata reaches the controller's committed end as it is now;
        how many records it was behind."""
        status, body = get_json(f"http://127.0.0.1:{self.cport}/healthz", timeout=5)
        if status != 200 or not isinstance(body, dict):
            raise SystemExit(f"the controller's /healthz answered {status}")
        last = int(body["high_watermark"]) - 1
        behind = max(0, last - int(self.health().get("metadata_offset", -1)))
        self.wait(lambda h: h.get("metadata_offset", -1) >= last, "the broker's metadata caught up")
        return behind

    def stop_broker(self) -> None:
        self.broker.terminate(timeout=120)

    async def _create_topics(self) -> None:
        async with RpcClient(f"http://127.0.0.1:{self.cport}", timeout=300) as client:
            T = CreateTopicsRequest
            for t in range(self.topics):
                req = T(
                    Topics=[
                        T.CreatableTopic(
                            Name=f"bench-{t:04d}",
                            Assignments=[
                                T.CreatableReplicaAssignment(PartitionIndex=p, BrokerIds=[BROKER])
                                for p in range(self.per_topic)
                            ],
                        )
                    ]
                )
                resp = await client.call("CreateTopics", req)
                if resp.Topics[0].ErrorCode:
                    raise SystemExit(
                        f"CreateTopics failed: {resp.Topics[0].ErrorCode} {resp.Topics[0].ErrorMessage}"
                    )

    def create_topics(self) -> None:
        asyncio.run(self._create_topics())

    def wipe_and_reformat(self) -> None:
        for d in self.log_dirs:
            shutil.rmtree(d)
        format_storage(self.broker_config, self.cluster_id, ignore_formatted=True)

    def dir_ids(self) -> list[Uuid]:
        from kraftpy.storage import read_meta_properties

        return [read_meta_properties(d).directory_id for d in self.log_dirs]  # type: ignore[misc]


def _attach_py_spy(pid: int, out: Path) -> subprocess.Popen[bytes]:
    """py-spy sampling `pid` until unfenced; collapsed stacks (one line per stack, its sample count).
    Only the thread holding the GIL is sampled: what the process spends its one core on."""
    out.parent.mkdir(parents=True, exist_ok=True)
    py_spy = Path(sys.executable).with_name("py-spy")
    return subprocess.Popen(
        [
            str(py_spy),
            "record",
            "--pid",
            str(pid),
            "--format",
            "raw",
            "--gil",
            "--rate",
            "200",
            "-o",
            str(out),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _detach_py_spy(spy: subprocess.Popen[bytes]) -> None:
    spy.send_signal(signal.SIGINT)  # py-spy writes its output on SIGINT
    try:
        spy.wait(60)
    except subprocess.TimeoutExpired:
        spy.kill()
        spy.wait()


def figures(h: dict[str, Any], before: dict[str, Any] | None = None) -> dict[str, Any]:
    b = before or {}
    return {
        "requests": h["assign_replicas_to_dirs_requests"] - b.get("assign_replicas_to_dirs_requests", 0),
        "assignments": h["assignments_sent"] - b.get("assignments_sent", 0),
        "msgpack_bytes": h["assign_replicas_to_dirs_bytes"] - b.get("assign_replicas_to_dirs_bytes", 0),
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--replicas", type=int, default=100_000)
    p.add_argument("--scale", type=float, default=1.0, help="multiply --replicas (e.g. 0.01)")
    p.add_argument("--disk", choices=["tmpfs", "plain"], default="tmpfs" if os.geteuid() == 0 else "plain")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    p.add_argument("--keep", action="store_true", help="keep the work dir")
    p.add_argument(
        "--profile",
        type=Path,
        metavar="DIR",
        help="sample the broker and the controller during the cold and warm starts with py-spy into "
        "DIR/broker-{cold,warm}[-controller].txt (collapsed stacks of the thread holding the GIL; the "
        "figures then include the sampler's overhead)",
    )
    p.add_argument(
        "--with-dataplane",
        action="store_true",
        help="run the broker's data plane too (it opens every led partition's log: mind the open-file limit)",
    )
    args = p.parse_args()
    replicas = max(DIRS, int(args.replicas * args.scale))

    root = Path(tempfile.mkdtemp(prefix="kraftpy-bench-startup-"))
    mounted = False
    if args.disk == "tmpfs":
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4g", "kraftpy-bench", str(root)], check=True)
        mounted = True
    bench = Bench(root, replicas, dataplane=args.with_dataplane)
    results: dict[str, Any] = {"replicas": bench.topics * bench.per_topic, "dirs": DIRS, "disk": args.disk}
    try:
        bench.setup()
        h, _ = bench.start_broker("broker-empty")
        t0 = time.monotonic()
        bench.create_topics()
        h2 = bench.wait(
            lambda h: (
                h["replicas"].get("replicas") == results["replicas"]
                and h["replicas"].get("unplaced_replicas") == 0
                and h["queued_replica_to_dir_assignments"] == 0
            ),
            "replicas placed",
        )
        results["placement_while_running"] = {
            "seconds_create_to_placed": round(time.monotonic() - t0, 2),
            **figures(h2, h),
            "replicas_by_dir": h2["replicas"]["replicas_by_dir"],
        }

        bench.stop_broker()
        bench.wipe_and_reformat()
        h3, wall3 = bench.start_broker("broker-cold", args.profile)
        results["cold_start_new_disks"] = {
            "seconds_process_start_to_unfenced": h3["seconds_to_unfence"],
            "seconds_server_start_to_unfenced": h3["seconds_from_server_start_to_unfence"],
            "seconds_spawn_to_unfenced_seen": round(wall3, 2),
            "cpu_seconds": h3["cpu_seconds"],
            **figures(h3),
            "replicas_by_dir": h3["replicas"]["replicas_by_dir"],
        }
        dir_ids = bench.dir_ids()
        results["cold_start_new_disks"]["records_behind_when_unfenced"] = bench.catch_up()

        bench.stop_broker()
        h4, wall4 = bench.start_broker("broker-warm", args.profile)
        results["warm_restart"] = {
            "seconds_process_start_to_unfenced": h4["seconds_to_unfence"],
            "seconds_server_start_to_unfenced": h4["seconds_from_server_start_to_unfence"],
            "seconds_spawn_to_unfenced_seen": round(wall4, 2),
            "cpu_seconds": h4["cpu_seconds"],
            **figures(h4),
        }
        results["goals"] = goals(results)
        results["alternatives"] = alternatives(results["replicas"], bench.topics, dir_ids)
        results["batched_kafka_binary_bytes_estimate"] = sum(
            kafka_binary_size(DIRS, bench.topics, n)
            for n in _chunks(results["replicas"], results["cold_start_new_disks"]["requests"])
        )
        bench.stop_broker()
    finally:
        bench.procs.stop_all()
        if mounted and args.keep:
            # tmpfs goes with the unmount: keep the process logs at least
            kept = Path(tempfile.mkdtemp(prefix="kraftpy-bench-startup-logs-"))
            shutil.copytree(root / "logs", kept / "logs", dirs_exist_ok=True)
            print(f"process logs kept: {kept / 'logs'}", file=sys.stderr)
        if mounted:
            with contextlib.suppress(subprocess.CalledProcessError):
                subprocess.run(["umount", str(root)], check=True)
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
        else:
            print(f"work dir kept: {root}", file=sys.stderr)

    if args.json:
        print(json.dumps(results, indent=2))
    else:
        _print(results)
    return 0


def goals(r: dict[str, Any]) -> dict[str, Any]:
    """The measured starts beside the goals; below GOAL_REPLICAS the goal is scaled by replica count
    (the time is per replica), which a smaller run can only hint at."""
    scale = r["replicas"] / GOAL_REPLICAS
    out: dict[str, Any] = {"goal_replicas": GOAL_REPLICAS}
    for key, run, goal in (
        ("cold", "cold_start_new_disks", GOAL_COLD_S),
        ("warm", "warm_restart", GOAL_WARM_S),
    ):
        seconds = r[run]["seconds_process_start_to_unfenced"]
        out[key] = {
            "seconds": seconds,
            "goal_seconds": goal,
            "goal_seconds_scaled": round(goal * scale, 2),
            "met": seconds <= goal if scale >= 1 else None,
            "projected_seconds_at_goal_replicas": round(seconds / scale, 1),
        }
    return out


def _chunks(total: int, requests: int) -> list[int]:
    if requests <= 0:
        return []
    base, extra = divmod(total, requests)
    return [base + (1 if i < extra else 0) for i in range(requests)]


def _cpu(run: dict[str, Any]) -> str:
    cpu = run["cpu_seconds"]
    return f"CPU s: broker {cpu['broker']}, controller {cpu['controller']}"


def _print(r: dict[str, Any]) -> None:
    n = r["replicas"]
    print(f"broker with {r['dirs']} log dirs ({r['disk']}), {n:,} replicas")
    run = r["placement_while_running"]
    print(
        f"  placement while running: {run['seconds_create_to_placed']} s from the first CreateTopics to all placed; "
        f"{run['requests']} AssignReplicasToDirs requests, {run['assignments']:,} assignments, "
        f"{run['msgpack_bytes']:,} bytes; per dir {sorted(run['replicas_by_dir'].values())}"
    )
    cold = r["cold_start_new_disks"]
    print(
        f"  cold start on new disks: {cold['seconds_process_start_to_unfenced']} s from process start to unfenced "
        f"({cold['seconds_server_start_to_unfenced']} s after imports and dir checks, "
        f"{cold['seconds_spawn_to_unfenced_seen']} s spawn to seen running; {_cpu(cold)}); "
        f"{cold['requests']} requests, {cold['assignments']:,} assignments, {cold['msgpack_bytes']:,} bytes; "
        f"its metadata was {cold['records_behind_when_unfenced']:,} records behind the controller's then, "
        "caught up before the warm restart's stop"
    )
    warm = r["warm_restart"]
    print(
        f"  warm restart: {warm['seconds_process_start_to_unfenced']} s from process start to unfenced "
        f"({warm['seconds_server_start_to_unfenced']} s after imports and dir checks, "
        f"{warm['seconds_spawn_to_unfenced_seen']} s spawn to seen running; {_cpu(warm)}); "
        f"{warm['requests']} requests"
    )
    g = r["goals"]
    for key, label in (("cold", "cold start"), ("warm", "warm restart")):
        x = g[key]
        if x["met"] is None:
            verdict = (
                f"goal {x['goal_seconds']} s at {g['goal_replicas']:,}; linear projection "
                f"{x['projected_seconds_at_goal_replicas']} s (scaled goal {x['goal_seconds_scaled']} s)"
            )
        else:
            verdict = (
                f"goal {x['goal_seconds']} s at {g['goal_replicas']:,}: {'met' if x['met'] else 'NOT met'}"
            )
        print(f"  {label}: {x['seconds']} s; {verdict}")
    alt = r["alternatives"]
    print("  AssignReplicasToDirs cost for placing every replica:")
    print(f"    {'design':<34}{'requests':>10}{'msgpack bytes':>16}{'Kafka binary bytes':>20}")
    print(
        f"    {'batched (this broker, cold start)':<34}{cold['requests']:>10,}{cold['msgpack_bytes']:>16,}"
        f"{r['batched_kafka_binary_bytes_estimate']:>20,}"
    )
    for name, key in (
        ("one request per replica", "per_replica"),
        ("one list-all request (KIP-589)", "list_all"),
    ):
        a = alt[key]
        print(f"    {name:<34}{a['requests']:>10,}{a['msgpack_bytes']:>16,}{a['kafka_binary_bytes']:>20,}")


if __name__ == "__main__":
    sys.exit(main())
