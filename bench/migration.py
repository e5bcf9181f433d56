"""A ZooKeeper → KRaft migration of a cluster with many partitions: the copy, then dual-write lag.

    .venv/bin/python bench/migration.py [--partitions 10000] [--topics 10] [--brokers 3] [--rate 10]
                                        [--seconds 20] [--work-dir DIR]

A ZooKeeper-mode cluster (Debian's ZooKeeper, brokers with 2 plain log dirs each) gets `--partitions`
partitions over `--topics` topics (replication factor 1, so the brokers' own startup stays short);
then `kraftpy migrate`'s steps add one KRaft controller and roll the brokers into migration mode.
Figures:
- copy: seconds from the driver leaving WAIT_FOR_BROKERS (every broker registered) to the copy
  committed ("Finished initial migration"), read from the active controller's log; and the copy
  alone (reading ZooKeeper, writing the transaction);
- dual-write lag: topics are created at `--rate` per second for `--seconds` through the controller's
  CreateTopics; the lag of one is the time from the controller's answer (committed in KRaft) to its
  `/brokers/topics/<t>` appearing in ZooKeeper (a kazoo watch). p50 and p99.
Needs Java and Debian's zookeeper package.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tools.cluster.cluster import LocalCluster
from tools.cluster.migrate import plan
from tools.cluster.migrate.runner import Migration
from tools.cluster.spec import FAST_BROKER_SETTINGS, ClusterSpec

GOALS = {
    "copy_s": 30.0,  # 10,000 partitions from WAIT_FOR_BROKERS to the copy committed
    "lag_p99_ms": 1000.0,
}


def _ts(line: dict) -> float:  # type: ignore[type-arg]
    return dt.datetime.fromisoformat(line["timestamp"].replace("Z", "+00:00")).timestamp()


def _controller_events(log: Path) -> list[dict]:  # type: ignore[type-arg]
    out = []
    for raw in log.read_text(errors="replace").splitlines():
        try:
            out.append(json.loads(raw))
        except ValueError:
            continue
    return out


def _copy_figures(log: Path) -> tuple[float | None, float | None]:
    events = _controller_events(log)
    left_wait = next(
        (
            e
            for e in events
            if e.get("event") == "migration driver state" and e.get("old") == "WAIT_FOR_BROKERS"
        ),
        None,
    )
    started = next(
        (e for e in events if e.get("event") == "starting the initial migration of ZK metadata to KRaft"),
        None,
    )
    done = next(
        (e for e in events if e.get("event") == "Finished initial migration of ZK metadata to KRaft"), None
    )
    if done is None:
        return None, None
    total = _ts(done) - _ts(left_wait) if left_wait else None
    # The shell's own figure runs from before it reads ZooKeeper to the commit.
    copy = done.get("seconds")
    if copy is None and started is not None:
        copy = _ts(done) - _ts(started)
    return total, copy


def _create_topics(url: str, names: list[str], rate: float, answered: dict[str, float]) -> None:
    from protocol.rpc.create_topics import CreateTopicsRequest as T
    from protocol.transport import RpcClient

    async def run() -> None:
        client = RpcClient(url, timeout=30)
        try:
            start = time.monotonic()
            for i, name in enumerate(names):
                await asyncio.sleep(max(0.0, start + i / rate - time.monotonic()))
                req = T(
                    Topics=[T.CreatableTopic(Name=name, NumPartitions=1, ReplicationFactor=1)],
                    TimeoutMs=30000,
                )
                resp = await client.call("CreateTopics", req)
                if resp.Topics[0].ErrorCode == 0:
                    answered[name] = time.time()
        finally:
            await client.close()

    asyncio.run(run())


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--partitions", type=int, default=10_000)
    ap.add_argument("--topics", type=int, default=10)
    ap.add_argument("--brokers", type=int, default=3)
    ap.add_argument("--rate", type=float, default=10.0, help="topics created per second during dual write")
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--work-dir", type=Path)
    args = ap.parse_args()
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="kraftpy-bench-migration-"))
    cluster = LocalCluster.up(
        work / "cluster",
        ClusterSpec(brokers=args.brokers, dirs=2, zookeeper=True, broker_config=dict(FAST_BROKER_SETTINGS)),
        timeout=180,
    )
    from kazoo.client import KazooClient

    zk = KazooClient(hosts=cluster.state.zookeeper)
    zk.start(timeout=10)
    try:
        per_topic = args.partitions // args.topics
        t0 = time.monotonic()
        for i in range(args.topics):
            cluster.create_topic(f"bench-{i}", per_topic, 1, timeout=300)
        print(
            f"created {per_topic * args.topics} partitions in ZooKeeper mode in {time.monotonic() - t0:.1f} s"
        )

        migration = Migration(cluster, say=lambda m: print(f"  {m}"), timeout=600)
        for step in (plan.ADD_CONTROLLERS, plan.ROLL_BROKERS_MIGRATION, plan.WAIT_MIGRATION):
            t = time.monotonic()
            migration.run(step, controllers=1)
            print(f"step {step}: {time.monotonic() - t:.1f} s")
        node, _ = migration.active_status()
        assert node is not None
        total, copy = _copy_figures(Path(node.log))

        arrived: dict[str, float] = {}
        lock = threading.Lock()

        def on_children(children: list[str]) -> None:
            now = time.time()
            with lock:
                for c in children:
                    arrived.setdefault(c, now)

        zk.ChildrenWatch("/brokers/topics", on_children)
        names = [f"dual-{i}" for i in range(int(args.rate * args.seconds))]
        answered: dict[str, float] = {}
        _create_topics(f"http://{node.host}:{node.port}", names, args.rate, answered)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not all(n in arrived for n in answered):
            time.sleep(0.05)
        lags = [max(0.0, (arrived[n] - answered[n]) * 1000) for n in answered if n in arrived]
        missing = [n for n in answered if n not in arrived]

        print()
        print(f"{'figure':<52}{'measured':>14}{'goal':>12}")
        print(
            f"{'copy: WAIT_FOR_BROKERS left -> copy committed (s)':<52}{_fmt(total):>14}{GOALS['copy_s']:>12.1f}"
        )
        print(f"{'copy alone: read ZooKeeper + commit (s)':<52}{_fmt(copy):>14}{'':>12}")
        print(f"{'dual-write lag p50 (ms)':<52}{_fmt(_pct(lags, 0.5)):>14}{'':>12}")
        print(f"{'dual-write lag p99 (ms)':<52}{_fmt(_pct(lags, 0.99)):>14}{GOALS['lag_p99_ms']:>12.0f}")
        print(
            f"{'topics created / mirrored / missing':<52}{f'{len(answered)}/{len(lags)}/{len(missing)}':>14}"
        )
        if lags:
            print(f"{'dual-write lag mean (ms)':<52}{statistics.mean(lags):>14.1f}")
        return 0 if not missing else 1
    finally:
        zk.stop()
        zk.close()
        cluster.down()
        if args.work_dir is None:
            shutil.rmtree(work, ignore_errors=True)


def _fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f}"


if __name__ == "__main__":
    sys.exit(main())
