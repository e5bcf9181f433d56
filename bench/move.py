"""Moving a replica between a broker's two disks (AlterReplicaLogDirs) while production continues,
beside a raw file copy of the same data between the same two filesystems.

    .venv/bin/python bench/move.py [--size-mb 1024] [--rate 500] [--record-size 1024] [--baseline-s 10]
                                   [--io-max-bytes N] [--fs ext4] [--work-dir DIR] [--json]

One run, one cluster: a controller and one broker with two loop-device log dirs (each disk
2 x --size-mb + 512 MiB, sparse).

1. fill: a topic with one partition, replication factor 1, gets --size-mb MiB of 16 KiB records from
   kraftpy's producer (acks=1, as fast as it goes);
2. raw copy: the partition's segment files (`*.log`) are copied with shutil (sendfile) into a scratch
   dir on the other filesystem, each file fsynced and then the dir, timed; the copy is removed again;
3. move: a steady acks=all idempotent producer sends --rate records/s of --record-size B, each
   record timed from `send` to its acknowledgement; after --baseline-s s AlterReplicaLogDirs moves
   the replica to the other dir. The move is timed from the request to the broker's "replica moved"
   log line (so it includes AssignReplicasToDirs and the swap, with its fsync of the new log), whose
   `bytes` (what the copy wrote, appends during the move included) gives its MB/s and
   `appends_paused_ms` the swap; DescribeLogDirs must then show no future log and the partition in
   the destination.

Page caches are dropped (`sync; echo 3 > /proc/sys/vm/drop_caches`) before the raw copy and before
the steady producer starts, so both copies read the source from the disk, not from memory; the raw
copy runs with no producer. Broker settings are the local cluster's (no copy throttle unless
--io-max-bytes; rounds of replica.fetch.max.bytes, 1 MiB).

Why one broker and replication factor 1: every loop disk of a local cluster is a file on the same
host disk, so followers would write the producer's records to it as well and acks=all would wait on
their fetches; with one broker the move, the steady producer and the raw copy are the only I/O, and
the ratio compares the move's copy path with a plain copy on equal terms. The producer's latency is
then the leader's append path while the move reads and writes beside it, and the swap's pause.

Goals (printed beside the figures, never asserted): the move at >= 0.5 of the raw copy's MB/s, and
the producer's p99 during the move at most twice its p99 before it. `--json` prints the figures as
JSON on stdout (progress then goes to stderr).
Needs root and loop devices.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import math
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tools.client import Admin, Producer
from tools.client.perf import ProduceStats, produce_perf
from tools.client.producer import RecordFuture
from tools.cluster.cluster import LocalCluster
from tools.cluster.spec import FAST_BROKER_SETTINGS, ClusterSpec
from tools.cluster.timeline import log_events

TOPIC = "bench-move"
BROKER = 1
FILL_RECORD = 16 * 1024
MB = 1024 * 1024
GOAL_RATIO = 0.5  # move MB/s over raw copy MB/s
GOAL_P99_FACTOR = 2.0  # p99 during the move over p99 before it
WARM_UP_S = 2.0

Say = Callable[[str], None]


def drop_caches() -> bool:
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
    except OSError:
        return False
    return True


def fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def raw_copy(src_dir: Path, scratch: Path) -> tuple[int, float]:
    """(bytes, seconds) to copy `src_dir`'s segment files into `scratch`, fsynced; `scratch` is removed."""
    files = sorted(src_dir.glob("*.log"))
    scratch.mkdir()
    try:
        start = time.perf_counter()
        for f in files:
            dest = scratch / f.name
            shutil.copyfile(f, dest)
            fsync_path(dest)
        fsync_path(scratch)
        seconds = time.perf_counter() - start
        copied = sum((scratch / f.name).stat().st_size for f in files)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return copied, seconds


async def fill(bootstrap: str, size_mb: int, say: Say) -> ProduceStats:
    records = size_mb * MB // FILL_RECORD
    last = [time.monotonic()]

    def progress(s: ProduceStats) -> None:
        now = time.monotonic()
        if now - last[0] >= 5:
            last[0] = now
            say(f"  fill: {s.acked * FILL_RECORD / MB:7.0f} MB  {s.mb_per_sec:6.1f} MB/s")

    async with Producer(
        bootstrap, acks=1, enable_idempotence=False, linger_ms=5, batch_size=512 * 1024
    ) as producer:
        return await produce_perf(producer, TOPIC, records, FILL_RECORD, on_progress=progress)


class SteadyProducer(threading.Thread):
    """acks=all, idempotent, `rate` records/s on its own event loop; keeps (wall time sent, ms to ack)."""

    def __init__(self, bootstrap: str, rate: float, size: int) -> None:
        super().__init__(name="steady-producer", daemon=True)
        self.bootstrap = bootstrap
        self.rate = rate
        self.size = size
        self.samples: list[tuple[float, float]] = []
        self.failed = 0
        self.first_error: str | None = None
        self._stop_event = threading.Event()

    def run(self) -> None:
        try:
            asyncio.run(self._produce())
        except Exception as e:  # reported with the figures
            self.first_error = self.first_error or f"producer stopped: {e!r}"

    def stop(self) -> None:
        self._stop_event.set()
        self.join(120)

    def _done(self, sent_wall: float, sent: float, fut: RecordFuture) -> None:
        error = fut.exception()
        if error is not None:
            self.failed += 1
            self.first_error = self.first_error or str(error)
        else:
            self.samples.append((sent_wall, (fut.acked_at - sent) * 1000))

    async def _produce(self) -> None:
        payload = os.urandom(self.size)
        async with Producer(self.bootstrap, acks=-1, enable_idempotence=True) as producer:
            start = time.monotonic()
            i = 0
            while not self._stop_event.is_set():
                ahead = start + i / self.rate - time.monotonic()
                if ahead > 0:
                    await asyncio.sleep(ahead)
                sent_wall, sent = time.time(), time.monotonic()
                fut = await producer.send(TOPIC, payload, partition=0)
                fut.add_done_callback(functools.partial(self._done, sent_wall, sent))
                i += 1
            await producer.flush()

    def window(self, start: float, end: float) -> dict[str, float]:
        lat = sorted(ms for t, ms in list(self.samples) if start <= t < end)
        return {"records": len(lat), "p50_ms": percentile(lat, 0.5), "p99_ms": percentile(lat, 0.99)}


def percentile(ordered: list[float], q: float) -> float:
    """Nearest rank, as kafka-producer-perf-test (and tools.client.perf) compute it."""
    if not ordered:
        return float("nan")
    return round(ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))], 2)


async def alter(bootstrap: str, path: str) -> str:
    async with Admin(bootstrap) as admin:
        got = await admin.alter_replica_log_dirs(BROKER, {(TOPIC, 0): path})
    return got[(TOPIC, 0)].name


async def log_dirs(bootstrap: str) -> dict[str, list[tuple[bool, int, int]]]:
    """DescribeLogDirs of the broker for the partition: {dir path: [(is future, size, offset lag)]}."""
    async with Admin(bootstrap) as admin:
        [r] = await admin.describe_log_dirs([BROKER], {TOPIC: [0]})
    if r.response is None:
        raise RuntimeError(f"DescribeLogDirs failed: {r.error}")
    return {
        d.LogDir: [(p.IsFutureKey, p.PartitionSize, p.OffsetLag) for t in d.Topics for p in t.Partitions]
        for d in r.response.Results
    }


def event_at(log: str, event: str, **fields: str) -> dict[str, Any] | None:
    for e in log_events(log, event):
        if all(str(e.get(k)) == v for k, v in fields.items()):
            return e
    return None


def run(args: argparse.Namespace, work: Path, say: Say) -> dict[str, Any]:
    config = dict(FAST_BROKER_SETTINGS)
    if args.io_max_bytes:
        config["replica.alter.log.dirs.io.max.bytes.per.second"] = str(args.io_max_bytes)
    spec = ClusterSpec(
        brokers=1,
        dirs=2,
        controllers=1,
        real_disks=True,
        fs=(args.fs,),
        disk_size=f"{2 * args.size_mb + 512}M",
        broker_config=config,
    )
    say(f"cluster in {work}: one broker, 2 {args.fs} loop-device dirs of {spec.disk_size}")
    cluster = LocalCluster.up(work / "cluster", spec, timeout=180)
    steady: SteadyProducer | None = None
    try:
        bootstrap = cluster.bootstrap_servers()
        broker_log = cluster.broker(BROKER).log
        view = cluster.create_topic(TOPIC, 1, 1, timeout=60)
        partition = view.partition(TOPIC, 0)
        assert partition is not None
        src = int(partition.directories[0].split("/d")[1])
        src_plan, dst_plan = cluster.dir_plan(BROKER, src), cluster.dir_plan(BROKER, 1 - src)
        assert dst_plan.mountpoint is not None

        say(f"fill: {args.size_mb} MB of {FILL_RECORD // 1024} KiB records, acks=1")
        filled = asyncio.run(fill(bootstrap, args.size_mb, say))
        if filled.failed:
            raise RuntimeError(f"fill: {filled.failed} records failed: {filled.first_error}")
        say(f"  fill: {filled.mb_per_sec:.1f} MB/s")

        dropped = drop_caches()
        raw_bytes, raw_s = raw_copy(
            Path(src_plan.path) / f"{TOPIC}-0", Path(dst_plan.mountpoint) / "raw-copy"
        )
        say(f"raw copy: {raw_bytes / MB:.0f} MB in {raw_s:.1f} s")

        drop_caches()
        steady = SteadyProducer(bootstrap, args.rate, args.record_size)
        steady.start()
        time.sleep(WARM_UP_S + args.baseline_s)
        if not steady.samples:
            raise RuntimeError(f"the steady producer has no acknowledgement: {steady.first_error}")

        requested = time.time()
        error = asyncio.run(alter(bootstrap, dst_plan.path))
        if error != "NONE":
            raise RuntimeError(f"AlterReplicaLogDirs answered {error}")
        say(f"move: AlterReplicaLogDirs to {dst_plan.path}")
        deadline = time.monotonic() + args.timeout_s
        next_report = time.monotonic() + 5
        while (moved := event_at(broker_log, "replica moved", destination=dst_plan.path)) is None:
            if event_at(broker_log, "replica move cancelled; the replica stays in its dir") or event_at(
                broker_log, "replica move failed"
            ):
                raise RuntimeError(f"the move did not complete; see {broker_log}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"the move did not complete within {args.timeout_s:.0f} s")
            if time.monotonic() >= next_report:
                next_report = time.monotonic() + 5
                future = [x for x in asyncio.run(log_dirs(bootstrap)).get(dst_plan.path, []) if x[0]]
                if future:
                    say(f"  future log: {future[0][1] / MB:7.0f} MB, {future[0][2]:,} offsets behind")
            time.sleep(0.1)
        moved_at = moved["ts_ms"] / 1000
        time.sleep(1.0)
        steady.stop()

        dirs = asyncio.run(log_dirs(bootstrap))
        futures = [d for d, ps in dirs.items() if any(f for f, _s, _l in ps)]
        if futures or [d for d, ps in dirs.items() if ps] != [dst_plan.path]:
            raise RuntimeError(f"after the move DescribeLogDirs shows {dirs}")
        accepted = event_at(broker_log, "controller accepted the replica's new dir")
        move_s = moved_at - requested
        raw_mb_s = raw_bytes / MB / raw_s
        move_mb_s = moved["bytes"] / MB / move_s
        return {
            "size_mb": args.size_mb,
            "fs": args.fs,
            "caches_dropped": dropped,
            "fill_mb_per_s": round(filled.mb_per_sec, 1),
            "raw_copy": {"bytes": raw_bytes, "seconds": round(raw_s, 2), "mb_per_s": round(raw_mb_s, 1)},
            "move": {
                "bytes": moved["bytes"],
                "seconds": round(move_s, 2),
                "mb_per_s": round(move_mb_s, 1),
                "seconds_to_accepted": round(accepted["ts_ms"] / 1000 - requested, 2) if accepted else None,
                "appends_paused_ms": moved["appends_paused_ms"],
            },
            "ratio": round(move_mb_s / raw_mb_s, 3),
            "produce": {
                "rate": args.rate,
                "record_size": args.record_size,
                "before": steady.window(requested - args.baseline_s, requested),
                "during": steady.window(requested, moved_at),
                "failed": steady.failed,
                "first_error": steady.first_error,
            },
        }
    finally:
        if steady is not None and steady.is_alive():
            steady.stop()
        cluster.down()


def show(r: dict[str, Any]) -> None:
    move, raw, prod = r["move"], r["raw_copy"], r["produce"]
    before, during = prod["before"], prod["during"]
    caches = "page caches dropped before each" if r["caches_dropped"] else "page caches NOT dropped"
    print()
    print(
        f"move of a {r['size_mb']} MB replica between two {r['fs']} loop-device filesystems (one broker, RF=1; "
        f"{caches}), {prod['rate']:.0f} records/s of {prod['record_size']} B acks=all during it"
    )
    print(f"  {'':<26}{'figure':>12}  goal")
    print(
        f"  {'move':<26}{move['mb_per_s']:>7.1f} MB/s  "
        f"({move['bytes']:,} bytes in {move['seconds']:.1f} s; controller accepted after "
        f"{move['seconds_to_accepted']} s)"
    )
    print(
        f"  {'raw copy (sendfile+fsync)':<26}{raw['mb_per_s']:>7.1f} MB/s  ({raw['bytes']:,} bytes in {raw['seconds']:.1f} s)"
    )
    print(f"  {'ratio':<26}{r['ratio']:>12.3f}  >= {GOAL_RATIO}")
    print(f"  {'produce p50 before':<26}{before['p50_ms']:>9.1f} ms  ({before['records']:,} records)")
    print(f"  {'produce p50 during':<26}{during['p50_ms']:>9.1f} ms  ({during['records']:,} records)")
    print(f"  {'produce p99 before':<26}{before['p99_ms']:>9.1f} ms")
    print(
        f"  {'produce p99 during':<26}{during['p99_ms']:>9.1f} ms  "
        f"<= {GOAL_P99_FACTOR:.0f} x before ({GOAL_P99_FACTOR * before['p99_ms']:.1f} ms)"
    )
    print(f"  {'appends paused (swap)':<26}{move['appends_paused_ms']:>9.1f} ms")
    print(f"  fill (acks=1): {r['fill_mb_per_s']} MB/s")
    if prod["failed"] or prod["first_error"]:
        print(f"  {prod['failed']} records failed: {prod['first_error']}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size-mb", type=int, default=1024, help="data in the replica, MiB (1024)")
    p.add_argument("--rate", type=float, default=500.0, help="steady producer, records/s (500)")
    p.add_argument(
        "--record-size", type=int, default=1024, help="steady producer's record size, bytes (1024)"
    )
    p.add_argument(
        "--baseline-s", type=float, default=10.0, help="production before the move is asked for (10)"
    )
    p.add_argument(
        "--io-max-bytes", type=int, default=0, help="replica.alter.log.dirs.io.max.bytes.per.second"
    )
    p.add_argument("--timeout-s", type=float, default=1800.0, help="give up on the move after this long")
    p.add_argument("--fs", default="ext4", choices=("ext4", "xfs"))
    p.add_argument("--work-dir", type=Path, help="default: a temporary dir")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = p.parse_args()
    if args.size_mb <= 0 or args.rate <= 0 or args.record_size <= 0:
        p.error("--size-mb, --rate and --record-size take positive numbers")
    if os.geteuid() != 0:
        print("bench/move.py needs root (loop-device filesystems)", file=sys.stderr)
        return 2
    from kraftpy.logging import configure_cli_logging

    configure_cli_logging("ERROR")
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="kraftpy-bench-move-"))
    try:
        # With --json, stdout holds only the figures; progress goes to stderr.
        out = sys.stderr if args.json else sys.stdout
        result = run(args, work, lambda msg: print(msg, file=out, flush=True))
    except RuntimeError as e:
        print(f"bench/move.py: {e}", file=sys.stderr)
        return 1
    finally:
        if args.work_dir is None:
            shutil.rmtree(work, ignore_errors=True)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        show(result)
    return 1 if result["produce"]["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
