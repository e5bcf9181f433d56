"""Produce throughput with acks=all and RF=3 over three local brokers, against the disks' own ceiling.

    .venv/bin/python bench/produce.py [--records 200000] [--sizes 100,1024] [--clients kraftpy,librdkafka]
                                      [--partitions 3] [--batch-size 262144] [--linger-ms 5] [--plain]

One run does both measurements on the same filesystems:

1. the ceiling: raw `write` + `fsync` of producer-sized batches, on one log dir filesystem of each
   broker at once (an acks=all record is written by all three), for a few seconds;
2. a controller and three brokers (each with its log dirs on those filesystems); per client and record
   size a topic with replication factor 3 and min.insync.replicas=2, and that client (idempotent,
   acks=all) sending random records as fast as it can: kraftpy's own producer over the HTTP RPC, and
   librdkafka (confluent-kafka) over Kafka's protocol. `--records` records of 100 B, a quarter as many
   of 1 KiB. Latency is per record, from `send` to its acknowledgement (queueing in the producer
   included, as in kafka-producer-perf-test). The goal: librdkafka with 1 KiB records at half the ceiling.

Beside MB/s, each run prints the brokers' CPU time per MB acknowledged (all three brokers, warm-up
included): what the brokers spend per byte, which other load on a shared machine moves far less
than it moves MB/s. The client's CPU per MB (this process, its librdkafka threads included, warm-up
and, for kraftpy's client, topic creation too) comes next, and then the MB/s the cores would carry
at those two costs if nothing else ran (each process counted on one core at most): the
client shares the cores with the brokers, so when MB/s is close to that figure, CPU is the bound,
not the disks.

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
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tools.client import Admin, Producer
from tools.client.perf import ProduceStats, produce_perf
from tools.cluster.launcher import ProcessSet, cpu_seconds
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


def own_cpu_seconds() -> float:
    """User + system CPU of this process, the client's threads (librdkafka's among them) included."""
    times = os.times()
    return times.user + times.system


GOAL_RATIO = 0.5  # librdkafka, 1 KiB records: produce MB/s over the ceiling


async def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    async with Admin(bootstrap) as admin:
        result = await admin.create_topic(
            topic,
            partitions=partitions,
            replication_factor=3,
            configs={"min.insync.replicas": "2"},
        )
        if result.error.value != 0:
            raise SystemExit(f"cannot create the topic: {result.error.name} {result.message or ''}")
        await admin.wait_for_leaders(topic)


def produce_librdkafka(
    bootstrap: str, topic: str, records: int, size: int, args: argparse.Namespace
) -> ProduceStats:
    """confluent-kafka's producer (librdkafka), driven as kafka-producer-perf-test drives Kafka's."""
    from confluent_kafka import Producer as RdProducer

    stats = ProduceStats(target=records, record_size=size)
    counting = False

    def delivered(err: object, msg: Any) -> None:
        # One callback for every record, timed by librdkafka (produce() to acknowledgement): this
        # process shares the machine with the brokers, so it makes no closure or clock call per record.
        if not counting:
            return
        if err is not None:
            stats.failed += 1
            stats.first_error = stats.first_error or str(err)
        else:
            stats.acked += 1
            stats.latencies_ms.append(msg.latency() * 1000)

    p = RdProducer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": args.linger_ms,
            "batch.size": args.batch_size,
            "queue.buffering.max.messages": 1_000_000,
            "queue.buffering.max.kbytes": 1_048_576,
            "on_delivery": delivered,
        }
    )
    payload = os.urandom(size)
    for _ in range(min(5000, records)):  # warm-up: connections, producer id, metadata
        p.produce(topic, payload)
    p.flush(60)
    counting = True
    stats.started = time.monotonic()
    for i in range(records):
        while True:
            try:
                p.produce(topic, payload)
                stats.sent += 1
                break
            except BufferError:
                p.poll(0.01)
        if i % 1000 == 0:
            p.poll(0)
    p.flush(300)
    stats.finished = time.monotonic()
    return stats


async def produce(
    bootstrap: str,
    args: argparse.Namespace,
    topic: str = "bench",
    records: int | None = None,
    size: int | None = None,
) -> ProduceStats:
    records = records or args.records
    size = size or args.record_size
    await create_topic(bootstrap, topic, args.partitions)
    config = {
        "acks": -1,
        "enable_idempotence": True,
        "linger_ms": args.linger_ms,
        "batch_size": args.batch_size,
    }
    async with Producer(bootstrap, **config) as producer:  # type: ignore[arg-type]
        await produce_perf(producer, topic, min(5000, records), size)  # warm-up
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

        return await produce_perf(producer, topic, records, size, on_progress=progress)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--records", type=int, default=200_000)
    p.add_argument("--record-size", type=int, default=100, help=argparse.SUPPRESS)
    p.add_argument("--sizes", default="100,1024", help="record sizes in bytes, comma-separated")
    p.add_argument("--clients", default="kraftpy,librdkafka", help="kraftpy and/or librdkafka")
    p.add_argument("--partitions", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=256 * 1024)
    p.add_argument("--linger-ms", type=int, default=5)
    p.add_argument("--dirs-per-broker", type=int, default=2)
    p.add_argument("--fsync-seconds", type=float, default=3.0)
    p.add_argument("--plain", action="store_true", help="plain dirs even when loop disks are possible")
    args = p.parse_args()
    sizes = [int(x) for x in args.sizes.split(",") if x]
    clients = [c for c in args.clients.split(",") if c]
    if (
        not sizes
        or any(n <= 0 for n in sizes)
        or not set(clients) <= {"kraftpy", "librdkafka"}
        or not clients
    ):
        p.error("--sizes takes positive integers and --clients kraftpy and/or librdkafka")

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

        # Kafka's default broker settings: the quick-failover timings of the failover tests (a dir probe
        # every 200 ms, HW checkpoints every second) put fsyncs in front of appends on every dir's thread.
        cluster = ProcessCluster.build(work, procs, controller_id=100, log_dirs=dirs, kafka=True)
        cluster.start()
        runs: list[tuple[str, int, ProduceStats, float]] = []
        broker_pids = [b.proc.pid for b in cluster.brokers.values() if b.proc is not None]
        for size in sizes:
            count = args.records if size <= 100 else max(1, args.records // 4)
            for client in clients:
                topic = f"bench-{client}-{size}"
                print(f"{client}: {count:,} records of {size} B", flush=True)
                if client == "kraftpy":
                    cpu, mine = cpu_seconds(broker_pids), own_cpu_seconds()
                    stats = asyncio.run(produce(cluster.bootstrap, args, topic, count, size))
                else:
                    asyncio.run(create_topic(cluster.bootstrap, topic, args.partitions))
                    cpu, mine = cpu_seconds(broker_pids), own_cpu_seconds()
                    stats = produce_librdkafka(cluster.kafka_bootstrap, topic, count, size, args)
                # The brokers' CPU per MB produced (warm-up included): what they do per byte, which
                # the machine's other load does not change as much as it changes MB/s. The client's
                # beside it: it runs on the same cores.
                cpu = cpu_seconds(broker_pids) - cpu
                runs.append((client, size, stats, cpu, own_cpu_seconds() - mine))
    finally:
        procs.stop_all()
        if disk_set is not None:
            disk_set.destroy_all()
        shutil.rmtree(work, ignore_errors=True)

    print()
    print(
        f"acks=all RF=3, idempotent, {args.partitions} partitions, batch.size {args.batch_size}, "
        f"linger.ms {args.linger_ms}; ceiling {ceiling_mb:.2f} MB/s raw append+fsync per filesystem "
        f"({where.split(' (')[0]})"
    )
    print(
        f"  {'client':<11} {'record':>7} {'MB/s':>8} {'records/s':>11} {'p50 ms':>7} {'p99 ms':>7} "
        f"{'brokers CPU ms/MB':>17} {'client CPU ms/MB':>16} {'CPU-bound MB/s':>14} {'ratio':>7}  goal"
    )
    failed = 0
    # Each broker and the client mostly run on one core at a time (the GIL), and this process may be
    # held to fewer cores than the machine has.
    cores = min(len(os.sched_getaffinity(0)), len(BROKERS) + 1)
    for client, size, stats, cpu, client_cpu in runs:
        ratio = stats.mb_per_sec / ceiling_mb if ceiling_mb > 0 else float("nan")
        goal = f">= {GOAL_RATIO}" if client == "librdkafka" and size >= 1024 else ""
        mb = stats.acked * size / (1024 * 1024)
        per_mb = cpu * 1000 / mb if mb else float("nan")
        client_per_mb = client_cpu * 1000 / mb if mb else float("nan")
        # What this machine's cores would carry if nothing but the brokers and the client ran.
        spent = per_mb + client_per_mb
        bound = cores * 1000 / spent if mb and spent > 0 else float("nan")
        print(
            f"  {client:<11} {size:>5} B {stats.mb_per_sec:8.2f} {stats.records_per_sec:11,.0f} "
            f"{stats.percentile(0.5):7.1f} {stats.percentile(0.99):7.1f} "
            f"{per_mb:17.1f} {client_per_mb:16.1f} {bound:14.1f} {ratio:7.3f}  {goal}"
        )
        if stats.failed:
            print(f"    {stats.failed} records failed: {stats.first_error}")
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
