"""Append throughput of a partition log: leader appends, with and without an fsync after each batch.

    .venv/bin/python bench/partition_log.py [--dir /mnt/disk0] [--seconds 2] [--sizes 1024,16384,262144,1048576]

Prints MB/s and batches/s for each batch size. With --dir the log is written in that dir (e.g. a
loop-device filesystem) and removed afterwards; by default in a temporary dir.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from broker.storage import LogConfig, PartitionLog
from protocol.record_batch import Record, RecordBatch, encode_batch

RECORD_BYTES = 100


def producer_batch(size: int) -> bytes:
    """An uncompressed batch of about `size` bytes made of 100-byte records, as a producer sends it."""
    n = max(1, size // (RECORD_BYTES + 8))
    records = [Record(offset_delta=i, value=bytes([65 + i % 26]) * RECORD_BYTES) for i in range(n)]
    return encode_batch(
        RecordBatch(last_offset_delta=n - 1, base_timestamp=0, max_timestamp=0, records=records)
    )


def run(parent: Path, size: int, seconds: float, fsync: bool) -> tuple[float, float, float, int]:
    """(MB/s, batches/s, median seconds per append, batch bytes) over about `seconds`."""
    batch = producer_batch(size)
    part = parent / f"bench-{size}-{int(fsync)}"
    log = PartitionLog.open(part, config=LogConfig(retention_ms=-1, max_message_bytes=64 << 20))
    latencies: list[float] = []
    try:
        start = time.perf_counter()
        deadline = start + seconds
        count = 0
        while True:
            t0 = time.perf_counter()
            log.append_as_leader(batch, leader_epoch=0, now_ms=0)
            if fsync:
                log.flush()
            t1 = time.perf_counter()
            latencies.append(t1 - t0)
            count += 1
            if t1 >= deadline:
                break
        elapsed = time.perf_counter() - start
        log.flush()
    finally:
        log.close()
        shutil.rmtree(part)
    total = count * len(batch)
    return total / elapsed / 1e6, count / elapsed, statistics.median(latencies), len(batch)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dir", type=Path, help="dir to write in (default: a temporary dir)")
    p.add_argument("--seconds", type=float, default=2.0, help="time per measurement")
    p.add_argument("--sizes", default="1024,16384,262144,1048576", help="batch sizes in bytes")
    args = p.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    own = args.dir is None
    parent = Path(tempfile.mkdtemp(prefix="kraftpy-bench-")) if own else args.dir
    print(f"partition log append benchmark in {parent} ({args.seconds:g} s per row)")
    print(f"{'batch bytes':>12} {'fsync':>6} {'MB/s':>9} {'batches/s':>10} {'p50 append':>11}")
    try:
        for size in sizes:
            for fsync in (False, True):
                mbps, bps, p50, real = run(parent, size, args.seconds, fsync)
                print(
                    f"{real:>12} {'each' if fsync else 'no':>6} {mbps:>9.1f} {bps:>10.0f} {p50 * 1e6:>9.0f}us"
                )
    finally:
        if own:
            shutil.rmtree(parent, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
