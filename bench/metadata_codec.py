"""Speed of the metadata log codec: decode and encode rates (records/s, MB/s) and memory.

    .venv/bin/python bench/metadata_codec.py [--records 1000000] [--samples DIR] [--seed 1]

Two inputs: the real Kafka-written logs under ../shared/samples/kraft-metadata (when present),
and a generated log (100,000 distinct records, written over and over at new offsets) with a
realistic mix: mostly PartitionChangeRecord and PartitionRecord
(written by topic creation and ISR/leader changes, many to a batch), some RegisterBrokerRecord
and BrokerRegistrationChangeRecord, NoOps (one per batch, as the controller writes them).
Rates are CPU time of this process on one core, best of a few runs for the small inputs.
Goals: decode >= 250,000 records/s, encode >= 150,000 records/s.
"""

from __future__ import annotations

import argparse
import gc
import random
import resource
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from protocol.control_records import control_records
from protocol.framing import ApiMessageAndVersion, default_version
from protocol.metadata_batches import iter_metadata_batches
from protocol.metadata_records import (
    BrokerRegistrationChangeRecord,
    ConfigRecord,
    NoOpRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
)
from protocol.record_batch import build_control_batch, build_metadata_batch, iter_batches, metadata_records
from protocol.uuid import Uuid

DECODE_GOAL = 250_000
ENCODE_GOAL = 150_000
MV = 21  # 3.9-IV0: PartitionRecord/PartitionChangeRecord v1, RegisterBrokerRecord v3
SAMPLES = Path(__file__).resolve().parent.parent.parent / "shared" / "samples" / "kraft-metadata"

Op = list[ApiMessageAndVersion]


def amv(record: object) -> ApiMessageAndVersion:
    return ApiMessageAndVersion(record, default_version(type(record), MV))


class Cluster:
    """Enough cluster state to write plausible records: brokers with 3 dirs each, topics, epochs."""

    def __init__(self, rng: random.Random, brokers: int = 12) -> None:
        self.rng = rng
        self.brokers = list(range(1, brokers + 1))
        self.dirs = {b: [Uuid.random() for _ in range(3)] for b in self.brokers}
        self.partitions: list[tuple[Uuid, int, list[int]]] = []
        self.epoch = 1

    def create_topic(self) -> Op:
        rng = self.rng
        tid = Uuid.random()
        count = rng.choice((1, 3, 6, 12, 24, 50))
        ops = [amv(TopicRecord(Name=f"topic-{len(self.partitions)}-{rng.randrange(1 << 30):x}", TopicId=tid))]
        for p in range(count):
            replicas = rng.sample(self.brokers, 3)
            self.partitions.append((tid, p, replicas))
            ops.append(
                amv(
                    PartitionRecord(
                        PartitionId=p,
                        TopicId=tid,
                        Replicas=replicas,
                        Isr=list(replicas),
                        Leader=replicas[0],
                        LeaderEpoch=0,
                        PartitionEpoch=0,
                        Directories=[rng.choice(self.dirs[b]) for b in replicas],
                    )
                )
            )
        if rng.random() < 0.3:
            ops.append(
                amv(
                    ConfigRecord(ResourceType=2, ResourceName=str(tid), Name="retention.ms", Value="86400000")
                )
            )
        return ops

    def isr_changes(self) -> Op:
        rng = self.rng
        ops = []
        for _ in range(rng.randint(1, 20)):
            tid, p, replicas = rng.choice(self.partitions)
            isr = rng.sample(replicas, rng.randint(1, 3))
            ops.append(
                amv(
                    PartitionChangeRecord(
                        PartitionId=p,
                        TopicId=tid,
                        Isr=isr,
                        Leader=isr[0] if rng.random() < 0.5 else -2,
                        Directories=[rng.choice(self.dirs[b]) for b in replicas]
                        if rng.random() < 0.3
                        else None,
                    )
                )
            )
        return ops

    def register(self) -> Op:
        b = self.rng.choice(self.brokers)
        self.epoch += 1
        return [
            amv(
                RegisterBrokerRecord(
                    BrokerId=b,
                    IncarnationId=Uuid.random(),
                    BrokerEpoch=self.epoch,
                    EndPoints=[
                        RegisterBrokerRecord.BrokerEndpoint(
                            Name="PLAINTEXT", Host=f"broker-{b}.kafka.internal", Port=9092, SecurityProtocol=0
                        )
                    ],
                    Features=[
                        RegisterBrokerRecord.BrokerFeature(
                            Name="metadata.version", MinSupportedVersion=1, MaxSupportedVersion=MV
                        )
                    ],
                    Rack=f"rack-{b % 3}",
                    LogDirs=self.dirs[b],
                )
            )
        ]

    def registration_change(self) -> Op:
        b = self.rng.choice(self.brokers)
        online = self.dirs[b] if self.rng.random() < 0.8 else self.dirs[b][:2]
        return [
            amv(BrokerRegistrationChangeRecord(BrokerId=b, BrokerEpoch=self.epoch, Fenced=-1, LogDirs=online))
        ]


def generate_ops(total: int, seed: int) -> Iterator[Op]:
    """Operations (each one batch) until `total` records; shares come out near 35% PartitionRecord,
    45% PartitionChangeRecord, 3% RegisterBroker, 5% BrokerRegistrationChange, 10% NoOp."""
    rng = random.Random(seed)
    cluster = Cluster(rng)
    makers: list[Callable[[], Op]] = [
        cluster.create_topic,
        cluster.isr_changes,
        cluster.register,
        cluster.registration_change,
        lambda: [ApiMessageAndVersion(NoOpRecord(), 0)],
    ]
    weights = [2.1, 4.3, 3.0, 5.0, 10.0]
    done = 0
    yield cluster.create_topic()
    while done < total:
        op = rng.choices(makers, weights)[0]()
        op = op[: total - done]
        done += len(op)
        yield op


POOL_RECORDS = 100_000


def encode_generated(records: int, seed: int) -> tuple[bytes, float, dict[str, int]]:
    """The generated log and the CPU seconds spent encoding it. Building a million Python records
    would take longer than coding them, so up to POOL_RECORDS distinct records are built (untimed)
    and the operations are replayed in turn, at new offsets, until the log holds `records`."""
    pool = list(generate_ops(min(records, POOL_RECORDS), seed))
    ops: list[Op] = []
    done = 0
    while done < records:
        for op in pool:
            op = op[: records - done]
            if not op:
                break
            ops.append(op)
            done += len(op)
    mix: dict[str, int] = {}
    for op in ops:
        for a in op:
            mix[a.message.NAME] = mix.get(a.message.NAME, 0) + 1
    out = bytearray()
    offset = 0
    start = time.process_time()
    for op in ops:
        out += build_metadata_batch(offset, 5, 1_700_000_000_000 + offset, op)
        offset += len(op)
    spent = time.process_time() - start
    return bytes(out), spent, mix


def decode_in_place(data: bytes) -> int:
    return sum(len(b.records) for b in iter_metadata_batches(data))


def decode_general(data: bytes) -> int:
    n = 0
    for b in iter_batches(data):
        n += len(control_records(b) if b.is_control else metadata_records(b))
    return n


def cpu(fn: Callable[[], int], repeat: int) -> tuple[int, float]:
    best = float("inf")
    n = 0
    for _ in range(repeat):
        start = time.process_time()
        n = fn()
        best = min(best, time.process_time() - start)
    return n, best


def line(label: str, records: int, size: int, seconds: float, goal: int | None = None) -> None:
    rate = records / seconds
    mark = "" if goal is None else f"   (goal {goal:,}: {'met' if rate >= goal else 'NOT met'})"
    print(f"  {label:34s} {rate:>11,.0f} records/s {size / seconds / 1e6:>8.1f} MB/s{mark}")


def reencode(data: bytes) -> tuple[int, float]:
    """CPU seconds to write the decoded batches of a real log again, record by record."""
    decoded = list(iter_metadata_batches(data))
    start = time.process_time()
    for b in decoded:
        h = b.header
        if b.is_control:
            build_control_batch(h.base_offset, h.partition_leader_epoch, h.base_timestamp, b.records)
        else:
            build_metadata_batch(h.base_offset, h.partition_leader_epoch, h.base_timestamp, b.records)
    return sum(len(b.records) for b in decoded), time.process_time() - start


def bench_samples(samples: Path) -> None:
    files = sorted(p for p in samples.rglob("*") if p.suffix in (".log", ".checkpoint"))
    if not files:
        print(f"real samples: none under {samples}, skipped")
        return
    blobs = [f.read_bytes() for f in files]
    size = sum(len(b) for b in blobs)
    n, secs = cpu(lambda: sum(decode_in_place(b) for b in blobs), 3)
    print(f"real Kafka samples: {len(files)} files, {size:,} bytes, {n:,} records (mostly NoOps)")
    line("decode (in place)", n, size, secs, DECODE_GOAL)
    n, secs = cpu(lambda: sum(decode_general(b) for b in blobs), 3)
    line("decode (batches + records)", n, size, secs)
    total = 0
    spent = 0.0
    for blob in blobs:
        k, s = reencode(blob)
        total += k
        spent += s
    line("encode (records -> batches)", total, size, spent, ENCODE_GOAL)
    flink = samples / "flink-on-prem_cp7.6.0" / "__cluster_metadata-0" / "00000000000000000000.log"
    if flink.is_file():
        data = flink.read_bytes()
        tracemalloc.start()
        decode_in_place(data)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        print(
            f"  streaming decode of a {len(data):,}-byte segment: peak Python allocation {peak / 1e3:.0f} kB"
        )


def bench_generated(records: int, seed: int) -> None:
    data, enc_secs, mix = encode_generated(records, seed)
    shares = ", ".join(f"{k} {v / records:.0%}" for k, v in sorted(mix.items(), key=lambda kv: -kv[1]))
    batches = sum(1 for _ in iter_batches(data, verify_crc=False))
    print(f"generated log: {records:,} records in {batches:,} batches, {len(data):,} bytes")
    print(f"  mix: {shares}")
    line("encode (records -> batches)", records, len(data), enc_secs, ENCODE_GOAL)
    n, secs = cpu(lambda: decode_in_place(data), 1)
    line("decode (in place)", n, len(data), secs, DECODE_GOAL)
    n, secs = cpu(lambda: decode_general(data), 1)
    line("decode (batches + records)", n, len(data), secs)
    # memory held by decoded records: keep a slice of the log's records alive
    part = data[: len(data) // 10]
    cut = 0
    for pos, b in _positions(part):
        cut = pos + b
    gc.collect()
    tracemalloc.start()
    kept = [b.records for b in iter_metadata_batches(part[:cut])]
    held = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    count = sum(len(r) for r in kept)
    print(
        f"  {count:,} decoded records kept in memory: {held / 1e6:.1f} MB ({held / max(count, 1):.0f} bytes each)"
    )


def _positions(buf: bytes) -> Iterator[tuple[int, int]]:
    from protocol.record_batch import TruncatedBatchError, iter_batch_positions

    try:
        for pos, h in iter_batch_positions(buf):
            yield pos, h.size
    except TruncatedBatchError:
        return


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, default=1_000_000, help="records in the generated log")
    parser.add_argument("--samples", type=Path, default=SAMPLES, help="dir of real Kafka metadata logs")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    started = time.perf_counter()
    print(f"Python {sys.version.split()[0]}, one core, CPU time of this process")
    bench_samples(args.samples)
    bench_generated(args.records, args.seed)
    peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS of the whole run: {peak_rss:.0f} MB (holds the generated log's bytes)")
    print(f"total wall time {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
