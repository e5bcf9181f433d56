"""The Spark job: a KRaft metadata log in, Parquet tables, a summary and an HTML report out.

    spark-submit tools/analytics/job.py LOGDIR --out DIR        (master from spark-submit)
    python -m tools.analytics.job LOGDIR --out DIR [--master URL]
    kraftpy analyze LOGDIR --out DIR [--master URL]

Steps, each a separate concern:
1. plan (planning.py): which files, and from which byte, given the checkpoint;
2. split (splitting.py): the driver hops over batch headers and cuts batch-aligned ranges;
3. decode (decoding.py): executors decode ranges with our codec into the `records` table, written
   to a hidden directory and committed by renaming it and then replacing the checkpoint;
4. derive (tables.py, analyses.py): every other table is replayed from all committed records with
   Spark window functions, written aside and swapped in;
5. summary.json and report.html.

Output layout: DIR/records/ingest=N/ (one directory per run that added records), DIR/<table>/,
DIR/summary.json, DIR/report.html, DIR/_checkpoint.json.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

if __package__ in (None, ""):
    # Run as a file by spark-submit: make the repository importable.
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tools.analytics.checkpoint import (
    CHECKPOINT_FILE,
    Checkpoint,
    FileState,
    Ingest,
    load_checkpoint,
    save_checkpoint,
    write_atomically,
)
from tools.analytics.clusterdir import ClusterContext, discover
from tools.analytics.errors import AnalysisError, CorruptBatchesError, CorruptSpot
from tools.analytics.logdir import LogFiles, list_log_files
from tools.analytics.planning import Plan, plan_ingest
from tools.analytics.splitting import SEGMENT, FileScan, LogRange, scan_file
from tools.analytics.summary import (
    DirFailure,
    MigratingBroker,
    Migration,
    MigrationCopy,
    MigrationRegistration,
    MigrationState,
    Summary,
    migration_verdict,
)

if TYPE_CHECKING:
    from pyspark import Accumulator
    from pyspark.sql import DataFrame, SparkSession

RECORDS = "records"
SUMMARY_FILE = "summary.json"
REPORT_FILE = "report.html"
DERIVED_TABLES = (
    "topics",
    "brokers",
    "partitions",
    "replica_dirs",
    "dir_failures",
    "leadership",
    "leaderless",
    "recovery_partitions",
    "recovery",
    "dir_balance",
    "record_mix",
    "timeline",
    "migration",
    "migrating_replicas",
    "failure_events",
    "failure_leaders",
    "broker_restarts",
    "first_leader_waits",
)
# Written only for a log that shows a ZooKeeper → KRaft migration.
MIGRATION_TABLES = ("migration_copies", "migrating_timeline")
RECORDS_PER_SHUFFLE_PARTITION = 2_000_000
QUICK_JVM_MAX_LOG_BYTES = 64 << 20
MIN_RANGE_BYTES = 256 * 1024
MAX_RANGE_BYTES = 32 * 1024 * 1024
MAX_SUMMARY_EVENTS = 400  # per failure, in summary.json (the failure_events table has them all)
_NICE_BUCKETS_MS = (1_000, 10_000, 60_000, 300_000, 900_000, 3_600_000, 21_600_000, 86_400_000, 604_800_000)


# ---------------------------------------------------------------------------------------------- executors


def _spot_param() -> Any:
    from pyspark.accumulators import AccumulatorParam

    class SpotList(AccumulatorParam):  # type: ignore[type-arg]
        def zero(self, value: list[dict[str, Any]]) -> list[dict[str, Any]]:
            return []

        def addInPlace(self, a: list[dict[str, Any]], b: list[dict[str, Any]]) -> list[dict[str, Any]]:
            a.extend(b)
            return a

    return SpotList()


def decode_partition(spots: Accumulator, ranges: Iterator[LogRange]) -> Iterator[tuple]:
    """Executor side: decode the ranges of one task; corrupt batches go to the `spots` accumulator."""
    from tools.analytics.decoding import iter_range

    for rng in ranges:
        for item in iter_range(rng):
            if isinstance(item, CorruptSpot):
                spots.add([item.to_dict()])
            else:
                yield item


# ---------------------------------------------------------------------------------------------- driver


def _range_bytes(total: int, parallelism: int) -> int:
    return max(MIN_RANGE_BYTES, min(MAX_RANGE_BYTES, total // max(1, parallelism * 4)))


def _scan(plan: Plan, range_bytes: int) -> tuple[list[FileScan], list[CorruptSpot]]:
    scans: list[FileScan] = []
    spots: list[CorruptSpot] = []
    after = plan.after_offset
    for task in plan.tasks:
        s = scan_file(
            task.path,
            task.source,
            start=task.start,
            range_bytes=range_bytes,
            after_offset=after,
            min_offset=task.min_offset,
            tail_may_be_partial=task.tail_may_be_partial,
            snapshot_end_offset=task.snapshot_end_offset,
            snapshot_timestamp=task.snapshot_timestamp,
        )
        scans.append(s)
        if s.corrupt is not None:
            spots.append(s.corrupt)
        if task.source == SEGMENT and s.last_offset is not None:
            after = s.last_offset
    return scans, spots


def _updated_checkpoint(base: Checkpoint, plan: Plan, scans: list[FileScan], skip: bool) -> Checkpoint:
    cp = base
    cp.base_snapshot = plan.base_snapshot
    if plan.base_snapshot is not None:
        # Offsets the snapshot holds are ingested: segments read later start after them.
        cp.last_offset = max(cp.last_offset, plan.base_snapshot.end_offset - 1)
    for s in scans:
        if s.source != SEGMENT:
            continue
        prev = cp.files.get(s.file)
        # A skipped corrupt tail is consumed; a torn tail is left to be read when complete.
        size = s.good_end + (s.corrupt.skipped_bytes if (s.corrupt and skip) else 0)
        cp.files[s.file] = FileState(
            source=SEGMENT,
            size=max(size, prev.size if prev else 0),
            last_offset=s.last_offset if s.last_offset is not None else (prev.last_offset if prev else None),
            last_batch_pos=s.last_batch_pos
            if s.last_batch_pos is not None
            else (prev.last_batch_pos if prev else None),
            last_batch_crc=s.last_batch_crc
            if s.last_batch_crc is not None
            else (prev.last_batch_crc if prev else None),
        )
        if s.last_offset is not None:
            cp.last_offset = max(cp.last_offset, s.last_offset)
    return cp


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def _clean_leftovers(out: Path, cp: Checkpoint | None) -> None:
    """Remove what a crashed run left: uncommitted ingests and half-written tables."""
    committed = {i.name for i in cp.ingests} if cp else set()
    records = out / RECORDS
    if records.is_dir():
        for p in records.iterdir():
            if p.name.startswith(("_tmp-", ".")) or (
                p.name.startswith("ingest=") and p.name not in committed
            ):
                _remove(p)
    for p in out.glob("_tables-*"):
        _remove(p)
    for p in out.glob("_old-*"):
        _remove(p)


def _swap_in(out: Path, staged: Path, name: str) -> None:
    target = out / name
    old = out / f"_old-{uuid.uuid4().hex[:8]}-{name}"
    if target.exists():
        target.rename(old)
    staged.rename(target)
    _remove(old)


class _Run:
    def __init__(self, spark: SparkSession, out: Path, summary: Summary) -> None:
        self.spark = spark
        self.out = out
        self.summary = summary
        self.staging = out / f"_tables-{uuid.uuid4().hex[:8]}"
        self.staged: dict[str, Path] = {}
        self.discarded: set[str] = set()

    def tick(self, what: str, since: float) -> float:
        return summary_tick(self.summary, what, since)

    def write(self, name: str, df: DataFrame) -> DataFrame:
        path = self.staging / name
        t = time.perf_counter()
        df.write.mode("overwrite").parquet(str(path))
        self.tick(f"table {name}", t)
        self.staged[name] = path
        return self.spark.read.schema(df.schema).parquet(str(path))

    def discard(self, *names: str) -> None:
        """Tables this log has nothing for: what an earlier run (of another log) left must go too."""
        self.discarded.update(names)

    def commit_tables(self) -> None:
        for name, path in self.staged.items():
            _swap_in(self.out, path, name)
            self.summary.tables[name] = str(self.out / name)
        for name in self.discarded - self.staged.keys():
            _remove(self.out / name)
        _remove(self.staging)


def _ingest(
    spark: SparkSession, out: Path, cp: Checkpoint, ranges: list[LogRange], skip: bool
) -> tuple[Ingest | None, list[CorruptSpot]]:
    """Decode the ranges on executors into a new records/ingest=N directory (not yet committed)."""
    from pyspark.sql import functions as F

    from tools.analytics.decoding import RECORDS_DDL
    from tools.analytics.session import ship_code

    if not ranges:
        return None, []
    ship_code(spark)
    sc = spark.sparkContext
    spots_acc = sc.accumulator([], _spot_param())
    rdd = sc.parallelize(ranges, len(ranges)).mapPartitions(partial(decode_partition, spots_acc))
    df = spark.createDataFrame(rdd, RECORDS_DDL, verifySchema=False)
    df = df.withColumn("time", F.timestamp_millis("timestamp"))
    tmp = out / RECORDS / f"_tmp-{uuid.uuid4().hex[:8]}"
    try:
        df.write.parquet(str(tmp))
    except Exception:
        _remove(tmp)
        raise
    seen: set[tuple[str, int]] = set()
    spots: list[CorruptSpot] = []
    for d in sorted(spots_acc.value, key=lambda d: (d["file"], d["position"])):
        if (d["file"], d["position"]) not in seen:  # a retried task reports its spots again
            seen.add((d["file"], d["position"]))
            spots.append(CorruptSpot(**d))
    if spots and not skip:
        _remove(tmp)
        raise CorruptBatchesError(spots)
    # Counted from the files written (Parquet footers), not an accumulator a retried task adds to twice.
    written = spark.read.parquet(str(tmp)).count()
    name = cp.next_ingest_name(p.name for p in (out / RECORDS).iterdir())
    tmp.rename(out / RECORDS / name)
    files = sorted({r.file for r in ranges})
    return Ingest(name=name, records=written, ranges=len(ranges), files=files), spots


def _records_df(spark: SparkSession, out: Path, cp: Checkpoint) -> DataFrame | None:
    paths = [str(out / RECORDS / i.name) for i in cp.ingests]
    if not paths:
        return None
    return spark.read.option("basePath", str(out / RECORDS)).parquet(*paths)


def _bucket_ms(first: int | None, last: int | None) -> int:
    span = (last or 0) - (first or 0)
    for b in _NICE_BUCKETS_MS:
        if span / b <= 60:
            return b
    return _NICE_BUCKETS_MS[-1]


def _derive(run: _Run, records: DataFrame, cp: Checkpoint, ctx: ClusterContext | None = None) -> None:
    from pyspark.sql import functions as F

    import tools.analytics.analyses as analyses
    import tools.analytics.tables as tables

    s = run.summary
    t = time.perf_counter()
    stats = (
        records.groupBy("type_name", "source")
        .agg(
            F.count("*").alias("n"),
            F.min("offset").alias("lo"),
            F.max("offset").alias("hi"),
            F.min("timestamp").alias("t_lo"),
            F.max("timestamp").alias("t_hi"),
        )
        .collect()
    )
    seg = [r for r in stats if r["source"] == "segment"]
    if seg:
        s.first_offset, s.last_offset = min(r["lo"] for r in seg), max(r["hi"] for r in seg)
        s.first_timestamp, s.last_timestamp = min(r["t_lo"] for r in seg), max(r["t_hi"] for r in seg)
    elif cp.base_snapshot is not None:
        s.first_timestamp = s.last_timestamp = cp.base_snapshot.timestamp
    counts: dict[str, int] = {}
    for r in stats:
        counts[r["type_name"]] = counts.get(r["type_name"], 0) + int(r["n"])
    s.record_types = dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    s.records = sum(counts.values())
    markers = [
        (int(r["seq"]), int(r["type"]))
        for r in records.filter(F.col("type").isin(*tables.TRANSACTION_MARKERS))
        .select("seq", "type")
        .orderBy("seq")
        .collect()
    ]
    excluded, s.open_transaction_seq = tables.excluded_ranges(markers)
    s.excluded_transactions = len(excluded)
    if s.open_transaction_seq is not None:
        s.notices.append(
            f"a metadata transaction begun at offset {s.open_transaction_seq} is still open at log end: "
            "its records are held back from replay, as Kafka does"
        )
    t = run.tick("stats", t)

    wanted = (
        tables.REGISTER_BROKER,
        tables.UNREGISTER_BROKER,
        tables.TOPIC,
        tables.PARTITION,
        tables.PARTITION_CHANGE,
        tables.FENCE_BROKER,
        tables.UNFENCE_BROKER,
        tables.REMOVE_TOPIC,
        tables.BROKER_REGISTRATION_CHANGE,
    )
    events = tables.metadata_events(records.filter(F.col("type").isin(*wanted)), excluded)
    events = run.write("_events", events)
    log_end = s.last_timestamp or 0

    topics = run.write("topics", tables.topics_table(events))
    brokers = run.write("brokers", tables.brokers_table(events))
    partitions = run.write("partitions", tables.partitions_table(events))
    replica_dirs = run.write("replica_dirs", tables.replica_dirs_table(partitions))
    dir_failures = run.write("dir_failures", tables.dir_failures_table(brokers, records))
    leadership = run.write("leadership", tables.leadership_table(partitions, log_end))
    t = run.tick("state tables", t)

    leaderless = run.write("leaderless", analyses.leaderless_totals(leadership))
    first_waits = run.write("first_leader_waits", analyses.first_leader_waits(leadership))
    min_isr, default_min_isr = _min_isr(run, records, excluded, ctx)
    rec_parts = run.write(
        "recovery_partitions",
        analyses.recovery_partitions(
            dir_failures, replica_dirs, partitions, log_end, min_isr, default_min_isr
        ),
    )
    recovery = run.write("recovery", analyses.recovery(dir_failures, rec_parts))
    windows = analyses.failure_windows(recovery)
    events_table = run.write(
        "failure_events", analyses.failure_events(windows, rec_parts, partitions, brokers)
    )
    leaders_table = run.write("failure_leaders", analyses.failure_leaders(windows, partitions))
    restarts = run.write("broker_restarts", analyses.broker_restarts(brokers))
    balance = run.write("dir_balance", analyses.dir_balance(replica_dirs, partitions, brokers))
    run.write("record_mix", analyses.record_mix(records, _bucket_ms(s.first_timestamp, s.last_timestamp)))
    run.write("timeline", analyses.timeline(leadership, replica_dirs, brokers))
    migration = run.write("migration", tables.migration_table(records.filter(~F.col("control")), excluded))
    migrating = run.write("migrating_replicas", analyses.migrating_replicas(replica_dirs))
    s.migration = _migration(run, records, replica_dirs, migration, migrating)
    t = run.tick("analyses", t)

    counts_row = (
        topics.agg(F.sum(F.col("removed_seq").isNull().cast("int")).alias("topics"))
        .crossJoin(brokers.agg(F.countDistinct("broker_id").alias("brokers")))
        .crossJoin(
            partitions.agg(
                F.sum((F.col("end_seq").isNull() & ~F.col("deleted")).cast("int")).alias("partitions")
            )
        )
        .first()
    )
    assert counts_row is not None
    s.topics, s.brokers, s.partitions = (int(v or 0) for v in counts_row)
    s.dir_failures = _dir_failures(recovery, events_table, leaders_table, ctx)
    lt = leaderless.agg(F.count("*"), F.sum("total_ms"), F.sum(F.col("still_leaderless").cast("int"))).first()
    assert lt is not None
    s.leaderless_partitions, s.leaderless_total_ms, s.still_leaderless = (int(v or 0) for v in lt)
    fw = first_waits.agg(F.count("*"), F.max("wait_ms")).first()
    assert fw is not None
    s.waiting_for_first_leader, s.first_leader_longest_ms = int(fw[0] or 0), _opt_int(fw[1])
    s.first_leader_grace_ms = analyses.FIRST_LEADER_GRACE_MS
    s.broker_restarts = [_restart(r) for r in restarts.collect()]
    if ctx is not None:
        s.dirs = {k: v.to_dict() for k, v in sorted(ctx.dirs.items())}
        s.dir_names_source = ctx.source
        s.notices.extend(ctx.notices)
    s.dir_balance = [
        {k: r[k] for k in ("broker_id", "directory", "replicas", "leaders", "online", "broker_state")}
        for r in balance.collect()
    ]
    _remove(run.staged.pop("_events"))
    run.tick("summary", t)


def _min_isr(
    run: _Run, records: DataFrame, excluded: list[tuple[int, int | None]], ctx: ClusterContext | None
) -> tuple[DataFrame | None, int | None]:
    """min.insync.replicas per topic name (ConfigRecords, as at log end) and the default for the others:
    the cluster-wide dynamic config, else the brokers' config files of the cluster work dir, else
    unknown (None). Summary.min_isr_source says which."""
    import tools.analytics.tables as tables

    per_topic: dict[str, int | None] = {}
    cluster_default: int | None = None
    for r in tables.min_isr_configs(records, excluded).collect():
        value = int(r["value"]) if r["value"] is not None and str(r["value"]).isdigit() else None
        if r["resource_type"] == tables.TOPIC_RESOURCE:
            per_topic[r["resource_name"]] = value
        elif r["resource_type"] == tables.BROKER_RESOURCE and not r["resource_name"]:
            cluster_default = value
    topics = {k: v for k, v in per_topic.items() if v is not None}
    sources = []
    if topics:
        sources.append(f"topic configs (ConfigRecord) of {', '.join(sorted(topics))}")
    default, what = cluster_default, "the cluster-wide config (ConfigRecord)"
    if default is None and ctx is not None and ctx.static_min_isr is not None:
        default, what = ctx.static_min_isr, f"the brokers' config files in {ctx.work_dir}"
    if default is not None:
        sources.append(f"{'other topics: ' if topics else ''}min.insync.replicas={default} from {what}")
    run.summary.min_isr_source = "; ".join(sources) or None
    if not topics:
        return None, default
    df = run.spark.createDataFrame(sorted(topics.items()), "topic string, min_isr int")
    return df, default


def _dir_failures(
    recovery: DataFrame, events: DataFrame, leaders: DataFrame, ctx: ClusterContext | None
) -> list[DirFailure]:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    by_failure = Window.partitionBy("failure_seq", "directory").orderBy("seq", "kind")
    ev_rows = (
        events.withColumn("n", F.row_number().over(by_failure))
        .filter(F.col("n") <= MAX_SUMMARY_EVENTS)
        .orderBy("failure_seq", "directory", "seq", "kind")
        .collect()
    )
    per_events: dict[tuple[int, str], list[Any]] = {}
    for e in ev_rows:
        per_events.setdefault((int(e["failure_seq"]), e["directory"]), []).append(e)
    per_leaders: dict[tuple[int, str], dict[str, dict[str, int]]] = {}
    for r in leaders.collect():
        point = per_leaders.setdefault((int(r["failure_seq"]), r["directory"]), {}).setdefault(r["point"], {})
        point[str(r["leader"])] = int(r["partitions"])
    out = []
    for r in recovery.collect():
        ts = int(r["failure_timestamp"])
        key = (int(r["failure_seq"]), r["directory"])
        name = ctx.dirs.get(r["directory"]) if ctx is not None else None
        f = DirFailure(
            broker_id=int(r["broker_id"]),
            directory=r["directory"],
            offset=int(r["failure_offset"]),
            timestamp=ts,
            affected_partitions=int(r["affected_partitions"]),
            leaders_lost=int(r["leaders_lost"]),
            unrecovered_partitions=int(r["unrecovered_partitions"]),
            recovery_latency_ms=_opt_int(r["recovery_latency_ms"]),
            back_online_timestamp=_opt_int(r["back_timestamp"]),
            group_start_offset=_opt_int(r["group_start_offset"]),
            partitions_with_new_leader=int(r["partitions_with_new_leader"]),
            leader_moves=int(r["leader_moves"]),
            last_leader_move_ms=None
            if r["last_leader_move_timestamp"] is None
            else int(r["last_leader_move_timestamp"]) - ts,
            isr_shrunk=int(r["isr_shrunk"]),
            not_in_sync=int(r["not_in_sync"]),
            back_in_sync_ms=_opt_int(r["back_in_sync_ms"]),
            min_isr_known=bool(r["min_isr_known"]),
            under_min_isr_partitions=int(r["under_min_isr_partitions"]),
            under_min_isr_ms=_opt_int(r["under_min_isr_ms"]) if r["min_isr_known"] else None,
            detected_timestamp=ctx.detected(int(r["broker_id"]), r["directory"], ts)
            if ctx is not None
            else None,
            path=name.path if name is not None else None,
            label=name.label if name is not None else None,
            leaders_per_broker=per_leaders.get(key, {}),
        )
        f.events = _timeline(f, r, per_events.get(key, []))
        out.append(f)
    return out


def _event(
    kind: str, ts: int, f: DirFailure, detail: str, offset: int | None = None, source: str = "metadata"
) -> dict[str, Any]:
    return {
        "kind": kind,
        "timestamp": ts,
        "ms": ts - f.timestamp,
        "offset": offset,
        "detail": detail,
        "source": source,
    }


def _timeline(f: DirFailure, r: Any, rows: list[Any]) -> list[dict[str, Any]]:
    """The failure's story in time order: what the brokers' logs and the metadata log say happened."""
    dir_name = f.label or f.directory
    events = []
    if f.detected_timestamp is not None:
        events.append(
            _event(
                "broker noticed",
                f.detected_timestamp,
                f,
                f'broker {f.broker_id}\'s log: "log dir failed" for {dir_name}',
                source="broker log",
            )
        )
    end = _opt_int(r["group_end_seq"])
    group = (
        f"the batch of offsets {f.group_start_offset}..{end}"
        if f.group_start_offset is not None and end is not None and end >= 0
        else "its batch"
    )
    events.append(
        _event(
            "dir offline",
            f.timestamp,
            f,
            f"BrokerRegistrationChangeRecord of broker {f.broker_id} without {dir_name}",
            f.offset,
        )
    )
    events.append(
        _event(
            "controller committed",
            f.timestamp,
            f,
            f"the controller appended {group} holding it (the batch's append time)",
            f.group_start_offset,
        )
    )
    for e in rows:
        if e["kind"] == "dirs changed" and int(e["offset"]) == f.offset:
            continue  # the failure record itself
        events.append(_event(e["kind"], int(e["timestamp"]), f, e["detail"], int(e["offset"])))
    if f.recovery_latency_ms is not None and f.affected_partitions:
        events.append(
            _event(
                "all led again",
                f.timestamp + f.recovery_latency_ms,
                f,
                f"every partition with a replica in {dir_name} has a leader",
                _opt_int(r["all_recovered_seq"]),
            )
        )
    if f.back_online_timestamp is not None:
        events.append(
            _event(
                "dir back",
                f.back_online_timestamp,
                f,
                f"broker {f.broker_id} lists {dir_name} again",
                _opt_int(r["back_seq"]),
            )
        )
    if f.back_in_sync_ms is not None and f.affected_partitions:
        events.append(
            _event(
                "back in sync",
                f.timestamp + f.back_in_sync_ms,
                f,
                "every partition hit is back in sync, the failed replicas in their ISR again",
                _opt_int(r["all_in_sync_seq"]),
            )
        )
    order = {"broker noticed": 0, "dir offline": 1, "controller committed": 2}
    events.sort(
        key=lambda e: (
            e["timestamp"],
            e["offset"] if e["offset"] is not None else -1,
            order.get(e["kind"], 3),
        )
    )
    return events


def _restart(r: Any) -> dict[str, Any]:
    return {
        "broker_id": int(r["broker_id"]),
        "offset": int(r["offset"]),
        "timestamp": int(r["timestamp"]),
        "previous_epoch": _opt_int(r["previous_epoch"]),
        "epoch": _opt_int(r["epoch"]),
        "new_incarnation": bool(r["new_incarnation"]),
        "state_before": r["state_before"],
        "dirs_missing": list(r["dirs_missing"] or []),
        "dirs_added": list(r["dirs_added"] or []),
    }


def _migration(
    run: _Run, records: DataFrame, replica_dirs: DataFrame, migration: DataFrame, migrating: DataFrame
) -> Migration | None:
    """None for a cluster that never migrated (no state but NONE, no ZooKeeper broker registered)."""
    import tools.analytics.analyses as analyses
    import tools.analytics.tables as tables

    events = migration.collect()
    if not any(_shows_migration(r) for r in events):
        run.discard(*MIGRATION_TABLES)
        return None
    copies = run.write("migration_copies", tables.copy_transactions_table(records))
    run.write("migrating_timeline", analyses.migrating_timeline(replica_dirs))
    states = [
        MigrationState(state=r["detail"], offset=int(r["offset"]), timestamp=int(r["timestamp"]))
        for r in events
        if r["event"] == "state"
    ]
    registrations = [
        MigrationRegistration(
            node_id=int(r["node_id"]),
            registered_as=r["detail"],
            offset=int(r["offset"]),
            timestamp=int(r["timestamp"]),
        )
        for r in events
        if r["event"] in ("broker registered", "controller registered")
    ]
    copy_list = [_migration_copy(r) for r in copies.orderBy("begin_seq").collect()]
    brokers = [_migrating_broker(r) for r in migrating.collect()]
    return Migration(
        states=states,
        copies=copy_list,
        registrations=registrations,
        brokers=brokers,
        final_state=states[-1].state if states else "NONE",
        still_migrating=sum(b.still_migrating for b in brokers),
        verdict=migration_verdict(states, copy_list, brokers),
    )


def _shows_migration(r: Any) -> bool:
    from tools.analytics.tables import ZK_BROKER

    return (r["event"] == "state" and r["detail"] != "NONE") or (
        r["event"] == "broker registered" and r["detail"] == ZK_BROKER
    )


def _opt_int(v: Any) -> int | None:
    return None if v is None else int(v)


def _migration_copy(r: Any) -> MigrationCopy:
    types = sorted(dict(r["record_types"] or {}).items(), key=lambda kv: (-kv[1], kv[0]))
    return MigrationCopy(
        begin_offset=int(r["begin_offset"]),
        begin_timestamp=int(r["begin_timestamp"]),
        outcome=r["outcome"],
        end_offset=_opt_int(r["end_offset"]),
        end_timestamp=_opt_int(r["end_timestamp"]),
        records=int(r["records"]),
        record_types={k: int(v) for k, v in types},
        ms=_opt_int(r["duration_ms"]),
        abort_reason=r["abort_reason"],
    )


def _migrating_broker(r: Any) -> MigratingBroker:
    return MigratingBroker(
        broker_id=int(r["broker_id"]),
        replicas=int(r["replicas"]),
        still_migrating=int(r["still_migrating"] or 0),
        last_placed_timestamp=_opt_int(r["last_placed_timestamp"]),
        last_placed_offset=_opt_int(r["last_placed_offset"]),
    )


def run_analysis(
    logdir: str | Path,
    out: str | Path,
    master: str | None = None,
    skip_corrupt: bool = False,
    *,
    full: bool = False,
    range_bytes: int | None = None,
    report: bool = True,
    dirs_file: str | Path | None = None,
) -> Summary:
    """Ingest the metadata log at `logdir` into `out` (incrementally) and analyse it.

    Uses the active Spark session when there is one (and `master` is None or the same), else starts
    one on `master` (default local[2]) and stops it at the end. Raises AnalysisError (or its
    subclasses LogDirError, CorruptBatchesError) with a message meant for the user.
    """
    t0 = time.perf_counter()
    files = list_log_files(logdir)
    ctx = discover(files.directory, dirs_file)
    out = Path(out).resolve()
    if out.exists() and not out.is_dir():
        raise AnalysisError(f"--out {out} exists and is not a directory")
    created = not out.exists()
    try:
        out.mkdir(parents=True, exist_ok=True)
        (out / RECORDS).mkdir(exist_ok=True)
    except OSError as e:
        raise AnalysisError(f"cannot create --out {out}: {e.strerror or e}") from None
    try:
        return _run(files, out, t0, master, skip_corrupt, full, range_bytes, report, ctx)
    except BaseException:
        if created and not (out / CHECKPOINT_FILE).exists():
            _remove(out)  # a failed first run leaves nothing behind
        raise


def _run(
    files: LogFiles,
    out: Path,
    t0: float,
    master: str | None,
    skip_corrupt: bool,
    full: bool,
    range_bytes: int | None,
    report: bool,
    ctx: ClusterContext | None = None,
) -> Summary:
    from tools.analytics.session import open_session

    cp_old = load_checkpoint(out)
    plan = plan_ingest(files, cp_old, full=full)
    _clean_leftovers(out, cp_old)
    log_dir = str(files.directory.resolve())
    cp = Checkpoint(log_dir=log_dir) if (cp_old is None or plan.rebuild) else cp_old
    prior_ingests = list(cp_old.ingests) if (cp_old is not None and plan.rebuild) else []

    try:
        log_bytes = sum(f.size for f in (*files.segments, *files.snapshots))
        handle = open_session(master, quick=log_bytes < QUICK_JVM_MAX_LOG_BYTES)
    except Exception as e:  # Java missing, port clash...: one line for the user, not a JVM dump
        raise AnalysisError(f"cannot start Spark on {master or 'local[2]'}: {_first_line(e)}") from None
    spark = handle.spark
    summary = Summary(log_dir=log_dir, out=str(out), master=spark.sparkContext.master)
    summary.rebuild, summary.rebuild_reason = plan.rebuild, plan.reason
    summary.notices.extend(plan.notices)
    if plan.reason:
        summary.notices.append(f"rebuilt from scratch: {plan.reason}")
    try:
        t = summary_tick(summary, "plan", t0)
        parallelism = spark.sparkContext.defaultParallelism
        total = sum(max(0, task.path.stat().st_size - task.start) for task in plan.tasks)
        scans, scan_spots = _scan(plan, range_bytes or _range_bytes(total, parallelism))
        if scan_spots and not skip_corrupt:
            raise CorruptBatchesError(scan_spots)
        ranges = [r for s in scans for r in s.ranges]
        for s in scans:
            if s.partial_tail_bytes:
                summary.notices.append(
                    f"{s.file} ends in a partial batch ({s.partial_tail_bytes} bytes, a write in progress?): "
                    "left for the next run"
                )
        summary.files_read = sorted({s.file for s in scans if s.ranges or s.corrupt})
        summary.ranges = len(ranges)
        t = summary_tick(summary, "scan", t)

        ingest, spots = _ingest(spark, out, cp, ranges, skip_corrupt)
        t = summary_tick(summary, "decode", t)
        all_spots = scan_spots + spots
        cp = _updated_checkpoint(cp, plan, scans, skip_corrupt)
        cp.corrupt.extend(all_spots)
        if ingest is not None:
            cp.ingests.append(ingest)
            summary.new_records = ingest.records
        save_checkpoint(out, cp)  # the commit point of the records
        for old in prior_ingests:
            _remove(out / RECORDS / old.name)
        summary.corrupt_this_run = len(all_spots)
        summary.corrupt_batches = [c.to_dict() for c in cp.corrupt]
        summary.base_snapshot = (
            {
                "file": cp.base_snapshot.file,
                "end_offset": cp.base_snapshot.end_offset,
                "timestamp": cp.base_snapshot.timestamp,
            }
            if cp.base_snapshot
            else None
        )

        records = _records_df(spark, out, cp)
        if records is None:
            raise AnalysisError(f"{files.directory} holds no readable record batches")
        run = _Run(spark, out, summary)
        total_records = sum(i.records for i in cp.ingests)
        with _shuffle_partitions(spark, _partitions_for(total_records, parallelism)):
            try:
                _derive(run, records, cp, ctx)
                run.commit_tables()
            finally:
                _remove(run.staging)
        summary.tables[RECORDS] = str(out / RECORDS)
        t = time.perf_counter()
        if report:
            from tools.analytics.report import write_report

            summary.report = str(out / REPORT_FILE)
            write_report(spark, out, summary)
            t = summary_tick(summary, "report", t)
        summary.seconds["total"] = round(time.perf_counter() - t0, 3)
        write_atomically(out / SUMMARY_FILE, json.dumps(summary.to_dict(), indent=1).encode())
        return summary
    except AnalysisError:
        raise
    except Exception as e:
        if _is_spark_error(e):
            raise AnalysisError(f"the Spark job failed: {_first_line(e)}") from e
        raise
    finally:
        handle.stop()


def _partitions_for(records: int, parallelism: int) -> int:
    # Replay touches a small share of the records (NoOps dominate real logs); few shuffle
    # partitions keep small logs from paying for many near-empty tasks.
    return max(1, min(2 * parallelism, records // RECORDS_PER_SHUFFLE_PARTITION + 1))


@contextmanager
def _shuffle_partitions(spark: SparkSession, n: int) -> Iterator[None]:
    key = "spark.sql.shuffle.partitions"
    before = spark.conf.get(key)
    spark.conf.set(key, str(n))
    try:
        yield
    finally:
        spark.conf.set(key, before)


def summary_tick(summary: Summary, what: str, since: float) -> float:
    now = time.perf_counter()
    summary.seconds[what] = round(now - since, 3)
    return now


def _is_spark_error(e: BaseException) -> bool:
    mod = type(e).__module__
    return mod.startswith(("pyspark", "py4j"))


def _first_line(e: BaseException) -> str:
    text = str(e).strip() or type(e).__name__
    return text.splitlines()[0][:500]


# ---------------------------------------------------------------------------------------------- command line


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "logdir",
        metavar="LOGDIR",
        help="metadata log dir: __cluster_metadata-0 or the metadata dir that holds it",
    )
    p.add_argument("--out", required=True, metavar="DIR", help="output directory (tables, summary, report)")
    p.add_argument(
        "--master",
        metavar="URL",
        help="Spark master, e.g. local[4] or spark://host:7077 (default local[2], or spark-submit's)",
    )
    p.add_argument(
        "--skip-corrupt", action="store_true", help="count and skip corrupt batches instead of failing"
    )
    p.add_argument("--full", action="store_true", help="re-read everything instead of only what is new")
    p.add_argument(
        "--range-bytes", type=int, metavar="N", help="bytes per decoding task (default: automatic)"
    )
    p.add_argument("--no-report", action="store_true", help="skip report.html")
    p.add_argument(
        "--dirs",
        metavar="FILE",
        help='names for directory ids: JSON {id: {"path": ..., "label": ...}} (default: found in the '
        "kraftpy cluster work dir above LOGDIR, if any; else the report shows ids)",
    )


def run_from_args(args: argparse.Namespace) -> Summary:
    if args.range_bytes is not None and args.range_bytes <= 0:
        raise AnalysisError("--range-bytes must be positive")
    return run_analysis(
        args.logdir,
        args.out,
        master=args.master,
        skip_corrupt=args.skip_corrupt,
        full=args.full,
        range_bytes=args.range_bytes,
        report=not args.no_report,
        dirs_file=getattr(args, "dirs", None),
    )


def describe(summary: Summary) -> list[str]:
    """A few lines for a person at a terminal."""
    lines = [
        f"{summary.records} records ({summary.new_records} new, from {summary.ranges} ranges of "
        f"{len(summary.files_read)} files) offsets {summary.first_offset}..{summary.last_offset}",
        f"{summary.brokers} brokers, {summary.topics} topics, {summary.partitions} partitions",
    ]
    for f in summary.dir_failures:
        lat = "not recovered" if f.recovery_latency_ms is None else f"recovered in {f.recovery_latency_ms} ms"
        sync = "not back in sync" if f.back_in_sync_ms is None else f"back in sync in {f.back_in_sync_ms} ms"
        name = f"{f.label} ({f.directory})" if f.label else f.directory
        lines.append(
            f"dir failure: broker {f.broker_id} dir {name} at offset {f.offset}: "
            f"{f.affected_partitions} partitions affected, {f.leaders_lost} leaders lost, {lat}, {sync}"
        )
    if summary.leaderless_partitions:
        lines.append(
            f"{summary.leaderless_partitions} partitions were leaderless for {summary.leaderless_total_ms} ms in all"
            f" ({summary.still_leaderless} still are)"
        )
    if summary.migration is not None:
        lines.append(f"ZooKeeper migration: {summary.migration.verdict}")
    if summary.corrupt_batches:
        lines.append(
            f"{len(summary.corrupt_batches)} corrupt batches skipped ({summary.corrupt_this_run} this run)"
        )
    lines.extend(f"note: {n}" for n in summary.notices)
    lines.append(f"tables in {summary.out}" + (f"; report {summary.report}" if summary.report else ""))
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kraftpy-analyze", description=__doc__.splitlines()[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        summary = run_from_args(args)
    except AnalysisError as e:
        print(f"kraftpy analyze: {e}", file=sys.stderr)
        return 2
    for line in describe(summary):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
