"""Produce throughput with acks=all and RF=3 over three local brokers, against the disks' own ceiling.

    .venv/bin/python bench/produce.py [--records 200000] [--record-size 100] [--partitions 3]
                                      [--batch-size 262144] [--linger-ms 5] [--plain]

One run does both measurements on the same filesystems:

1. the ceiling: raw `write` + `fsync` of producer-sized batches, on one log dir filesystem of each
   broker at once (an acks=all record is written by all three), for a few seconds;
2. a controller and three brokers (each with its log dirs on those filesystems), a topic with
   replication factor 3 and min.insync.replicas=2, and the kraftpy producer (idempotent, acks=all)
   sending `--records` records of `--record-size` random bytes as fast as it can; latency is per
   record, from `send` to its acknowledgement (queueing in the producer included, as in
   kafka-producer-perf-test).

Log dirs are loop-device ext4 filesystems when run as root with losetup and mkfs.ext4; otherwise
(or with --plain) plain directories in a temp dir, and the output says so. Brokers do not fsync
appends (Kafka's default: durability comes from replication), so the ratio can exceed 1.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tools.client import Admin, Producer
from tools.client.perf import ProduceStats, produce_perf
from tools.cluster.launcher import ProcessSet
from tools.cluster.layout import ProcessCluster

BROKERS = (1, 2, 3)


def loop_disks_usable() -> bool:
    from tools.disk import have_tools

    return os.geteuid() == 0 and have_tools("ext4") and os.path.exists("/dev/loop-control")


def raw_append_fsync(paths: list[Path], batch_bytes: int, seconds: float) -> tuple[float, float]:
    """(MB/s per filesystem, appends/s per filesystem) with one writer per path at the same time."""
    results: list[tuple[int, float]] = [(0, 0.0)] * len(paths)
    payload = os.urandom(batch_bytes)
    barrier = threading.Barrier(len(paths))

    def writer(i: int, path: Path) -> None:
        f = path / "raw-append-fsync.bench"
        fd = os.open(f, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
        try:
            barrier.wait()
            start = time.perf_counter()
            n = 0
            while time.perf_counter() - start < seconds:
                os.write(fd, payload)
                os.fsync(fd)
                n += 1
            results[i] = (n, time.perf_counter() - start)
        finally:
            os.close(fd)
            f.unlink()

    threads = [threading.Thread(target=writer, args=(i, p)) for i, p in enumerate(paths)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    rates = [n / secs for n, secs in results if secs > 0]
    per_fs = sum(rates) / len(rates)
    return per_fs * batch_bytes / (1024 * 1024), per_fs


async def produce(bootstrap: str, args: argparse.Namespace) -> ProduceStats:
    async with Admin(bootstrap) as admin:
        result = await admin.create_topic(
            "bench",
            partitions=args.partitions,
            replication_factor=3,
            configs={"min.insync.replicas": "2"},
        )
        if result.error.value != 0:
            raise SystemExit(f"cannot create the topic: {result.error.name} {result.message or ''}")
    config = {
        "acks": -1,
        "enable_idempotence": True,
        "linger_ms": args.linger_ms,
        "batch_size": args.batch_size,
    }
    async with Producer(bootstrap, **config) as producer:  # type: ignore[arg-type]
        await produce_perf(producer, "bench", min(5000, args.records), args.record_size)  # warm-up
        last = [0.0]

        def progress(s: ProduceStats) -> None:
            now = time.monotonic()
            if now - last[0] >= 2:
                last[0] = now
                print(
                    f"  {s.acked:>9,} acked  {s.records_per_sec:>9,.0f} rec/s  {s.mb_per_sec:6.2f} MB/s  "
                    f"p99 {s.percentile(0.99):6.1f} ms",
                    flush=True,
                )

        return await produce_perf(producer, "bench", args.records, args.record_size, on_progress=progress)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--records", type=int, default=200_000)
    p.add_argument("--record-size", type=int, default=100)
    p.add_argument("--partitions", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=256 * 1024)
    p.add_argument("--linger-ms", type=int, default=5)
    p.add_argument("--dirs-per-broker", type=int, default=2)
    p.add_argument("--fsync-seconds", type=float, default=3.0)
    p.add_argument("--plain", action="store_true", help="plain dirs even when loop disks are possible")
    args = p.parse_args()

    work = Path(tempfile.mkdtemp(prefix="kraftpy-bench-produce-"))
    disk_set = None
    procs = ProcessSet(work)
    try:
        if not args.plain and loop_disks_usable():
            from tools.disk import DiskSet

            disk_set = DiskSet(work / "disks")
            dirs = {}
            for b in BROKERS:
                dirs[b] = []
                for d in range(args.dirs_per_broker):
                    disk = disk_set.create(f"b{b}d{d}", size="1G", fs="ext4")
                    path = Path(disk.mountpoint) / "kafka-logs"
                    path.mkdir()
                    dirs[b].append(path)
            where = f"loop-device ext4 filesystems (1 GiB each, {args.dirs_per_broker} per broker)"
        else:
            reason = "--plain" if args.plain else "not root or no losetup/mkfs.ext4"
            dirs = {b: [work / f"b{b}d{d}" for d in range(args.dirs_per_broker)] for b in BROKERS}
            for ds in dirs.values():
                for d in ds:
                    d.mkdir(parents=True)
            where = f"PLAIN DIRECTORIES under {work} ({reason}): not loop-device filesystems"
        print(f"log dirs: {where}", flush=True)

        ceiling_mb, ceiling_appends = raw_append_fsync(
            [dirs[b][0] for b in BROKERS], args.batch_size, args.fsync_seconds
        )
        print(
            f"ceiling: raw append+fsync of {args.batch_size // 1024} KiB, one writer on each of 3 filesystems: "
            f"{ceiling_mb:.1f} MB/s, {ceiling_appends:.0f} appends/s per filesystem",
            flush=True,
        )

        cluster = ProcessCluster.build_quick(work, procs, dirs)
        cluster.start()
        print(
            f"cluster up: controller + 3 brokers; producing {args.records:,} records of {args.record_size} B",
            flush=True,
        )
        stats = asyncio.run(produce(cluster.bootstrap, args))
    finally:
        procs.stop_all()
        if disk_set is not None:
            disk_set.destroy_all()
        shutil.rmtree(work, ignore_errors=True)

    mb = stats.mb_per_sec
    print()
    print(
        f"acks=all RF=3, idempotent, {args.partitions} partitions, batch.size {args.batch_size}, linger.ms {args.linger_ms}"
    )
    print(f"  produce:  {mb:8.2f} MB/s  {stats.records_per_sec:10,.0f} records/s")
    print(
        f"  latency:  p50 {stats.percentile(0.5):.1f} ms  p99 {stats.percentile(0.99):.1f} ms  "
        f"max {stats.max_latency_ms:.1f} ms"
    )
    print(f"  ceiling:  {ceiling_mb:8.2f} MB/s  raw append+fsync per filesystem ({where.split(' (')[0]})")
    print(
        f"  ratio:    {mb / ceiling_mb:8.3f}  (produce MB/s / ceiling MB/s)"
        if ceiling_mb > 0
        else "  ratio: n/a"
    )
    print(f"  summary:  {stats.summary()}")
    if stats.failed:
        print(f"  {stats.failed} records failed: {stats.first_error}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
