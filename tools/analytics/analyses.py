"""Analyses over the state tables: leaderless time, recovery after dir failures, balance, record mix.

A replica is offline when its broker is unregistered or fenced, or when its directory is not online
for the broker, by the rule of kraftpy.metadata (BrokerRegistration.directory_online) written as
Spark columns: LOST is offline; every dir of a registration with no LogDirs is online, and so is
one in its LogDirs; UNASSIGNED and MIGRATING are online only on a broker registered with at most
one dir, or on a ZooKeeper broker in migration; anything else is offline.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import Column, Window
from pyspark.sql import functions as F

from tools.analytics.tables import LOST, MIGRATING, UNASSIGNED

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

_FAR = 1 << 62  # stands for "still open at log end" when comparing seqs


def leaderless_totals(leadership: DataFrame) -> DataFrame:
    """Per partition: how many leaderless intervals, their total and longest duration."""
    return (
        leadership.filter(F.col("leadership") == "leaderless")
        .groupBy("topic", "topic_id", "partition_id")
        .agg(
            F.count("*").alias("intervals"),
            F.sum("duration_ms").alias("total_ms"),
            F.max("duration_ms").alias("longest_ms"),
            F.max(F.col("open").cast("int")).cast("boolean").alias("still_leaderless"),
        )
        .orderBy(F.desc("total_ms"), "topic", "partition_id")
    )


def _leader_dir(df: DataFrame) -> Column:
    pos = F.array_position("replicas", F.col("leader"))
    return F.when(pos > 0, F.element_at("directories", pos.cast("int")))


def recovery_partitions(dir_failures: DataFrame, replica_dirs: DataFrame, partitions: DataFrame) -> DataFrame:
    """For each dir failure and each partition with a replica in that dir: when it had a leader again.

    A partition counts as recovered from the first state at or after the failure with a leader that
    is not the failed replica (or is, once the broker lists the dir again); one whose leader was
    elsewhere all along recovers at once (latency 0).
    Removing the partition also ends the wait, flagged as `removed`.
    """
    f = dir_failures.select(
        F.col("broker_id").alias("f_broker"),
        F.col("directory").alias("f_dir"),
        F.col("seq").alias("f_seq"),
        F.col("offset").alias("f_offset"),
        F.col("timestamp").alias("f_ts"),
        F.col("back_seq").alias("f_back_seq"),
    )
    r = replica_dirs.select(
        "topic", "topic_id", "partition_id", "broker_id", "directory", "start_seq", "end_seq"
    )
    affected = f.join(
        r,
        (r.broker_id == f.f_broker)
        & (r.directory == f.f_dir)
        & (r.start_seq <= f.f_seq)
        & (F.coalesce(r.end_seq, F.lit(_FAR)) > f.f_seq),
    ).select(
        "f_broker", "f_dir", "f_seq", "f_offset", "f_ts", "f_back_seq", "topic", "topic_id", "partition_id"
    )
    p = partitions.select(
        F.col("topic_id").alias("p_topic_id"),
        F.col("partition_id").alias("p_partition"),
        F.col("seq").alias("p_seq"),
        F.col("end_seq").alias("p_end_seq"),
        F.col("timestamp").alias("p_ts"),
        "leader",
        "deleted",
        _leader_dir(partitions).alias("leader_dir"),
    )
    joined = affected.join(
        p,
        (p.p_topic_id == affected.topic_id)
        & (p.p_partition == affected.partition_id)
        & (F.coalesce(p.p_end_seq, F.lit(_FAR)) > affected.f_seq),
    )
    at_failure = joined.filter(F.col("p_seq") <= F.col("f_seq")).select(
        "f_broker", "f_dir", "f_seq", "topic_id", "partition_id", F.col("leader").alias("leader_at_failure")
    )
    on_failed = (F.col("leader") == F.col("f_broker")) & F.col("leader_dir").eqNullSafe(F.col("f_dir"))
    dir_back = F.col("f_back_seq").isNotNull() & (F.col("p_seq") >= F.col("f_back_seq"))
    led = (F.col("leader") >= 0) & (~on_failed | dir_back)
    good = joined.filter(led | F.col("deleted")).select(
        "f_broker",
        "f_dir",
        "f_seq",
        "topic_id",
        "partition_id",
        F.greatest("p_seq", "f_seq").alias("r_seq"),
        F.greatest("p_ts", "f_ts").alias("r_ts"),
        F.col("deleted").alias("r_removed"),
    )
    first_good = good.groupBy("f_broker", "f_dir", "f_seq", "topic_id", "partition_id").agg(
        F.min("r_seq").alias("recovered_seq"),
        F.min_by("r_ts", "r_seq").alias("recovered_timestamp"),
        F.min_by("r_removed", "r_seq").alias("removed"),
    )
    keys = ["f_broker", "f_dir", "f_seq", "topic_id", "partition_id"]
    out = affected.join(at_failure, keys, "left").join(first_good, keys, "left")
    out = out.select(
        F.col("f_broker").alias("broker_id"),
        F.col("f_dir").alias("directory"),
        F.col("f_seq").alias("failure_seq"),
        F.col("f_offset").alias("failure_offset"),
        F.col("f_ts").alias("failure_timestamp"),
        "topic",
        "topic_id",
        "partition_id",
        "leader_at_failure",
        (F.col("leader_at_failure") == F.col("f_broker")).alias("lost_leader"),
        "recovered_seq",
        "recovered_timestamp",
        F.coalesce("removed", F.lit(False)).alias("removed"),
        (F.col("recovered_timestamp") - F.col("f_ts")).alias("latency_ms"),
    )
    return out


def recovery(dir_failures: DataFrame, recovery_parts: DataFrame) -> DataFrame:
    """Per dir failure: partitions affected, leaders lost, and the time until all had a leader again."""
    agg = recovery_parts.groupBy("broker_id", "directory", "failure_seq").agg(
        F.count("*").alias("affected_partitions"),
        F.sum(F.col("lost_leader").cast("int")).alias("leaders_lost"),
        F.sum(F.col("recovered_seq").isNull().cast("int")).alias("unrecovered_partitions"),
        F.max("recovered_timestamp").alias("all_recovered_timestamp"),
        F.max("recovered_seq").alias("all_recovered_seq"),
    )
    f = dir_failures.select(
        "broker_id",
        "directory",
        F.col("seq").alias("failure_seq"),
        F.col("offset").alias("failure_offset"),
        F.col("timestamp").alias("failure_timestamp"),
        "back_seq",
        "back_timestamp",
    )
    out = f.join(agg, ["broker_id", "directory", "failure_seq"], "left").fillna(
        0, ["affected_partitions", "leaders_lost", "unrecovered_partitions"]
    )
    out = out.withColumn(
        "recovery_latency_ms",
        F.when(F.col("affected_partitions") == 0, F.lit(0)).when(
            F.col("unrecovered_partitions") == 0,
            F.col("all_recovered_timestamp") - F.col("failure_timestamp"),
        ),
    ).withColumn("recovered", F.col("unrecovered_partitions") == 0)
    for c in ("failure_timestamp", "all_recovered_timestamp", "back_timestamp"):
        out = out.withColumn(c.replace("timestamp", "time"), F.timestamp_millis(c))
    return out.orderBy("failure_seq", "broker_id", "directory")


def _dir_online(
    directory: Column, log_dirs: Column, registered_dir_count: Column, migrating_zk_broker: Column
) -> Column:
    # A ZooKeeper broker in migration never places its replicas: they count as online (kraftpy.metadata).
    unplaced_ok = directory.isin(MIGRATING, UNASSIGNED) & (
        (F.coalesce(registered_dir_count, F.lit(0)) <= 1) | F.coalesce(migrating_zk_broker, F.lit(False))
    )
    return (directory != LOST) & (
        (F.size(log_dirs) == 0) | F.array_contains(log_dirs, directory) | unplaced_ok
    )


def dir_balance(replica_dirs: DataFrame, partitions: DataFrame, brokers: DataFrame) -> DataFrame:
    """Replicas and leaders per directory per broker now, and whether the directory is online."""
    cur = replica_dirs.filter("current")
    leaders = partitions.filter(F.col("end_seq").isNull() & ~F.col("deleted")).select(
        "topic_id", "partition_id", F.col("leader").alias("cur_leader")
    )
    b = brokers.filter(F.col("end_seq").isNull()).select(
        F.col("broker_id").alias("b_id"),
        F.col("log_dirs").alias("b_dirs"),
        F.col("state").alias("broker_state"),
        F.col("registered_dir_count").alias("b_registered"),
        F.col("is_migrating_zk_broker").alias("b_migrating"),
    )
    df = cur.join(leaders, ["topic_id", "partition_id"], "left").join(b, cur.broker_id == b.b_id, "left")
    return (
        df.groupBy("broker_id", "directory", "broker_state", "b_dirs", "b_registered", "b_migrating")
        .agg(
            F.count("*").alias("replicas"),
            F.sum((F.col("cur_leader") == F.col("broker_id")).cast("int")).alias("leaders"),
        )
        .withColumn(
            "online",
            F.coalesce(
                _dir_online(F.col("directory"), F.col("b_dirs"), F.col("b_registered"), F.col("b_migrating")),
                F.lit(False),
            ),
        )
        .drop("b_dirs", "b_registered", "b_migrating")
        .orderBy("broker_id", "directory")
    )


def record_mix(records: DataFrame, bucket_ms: int) -> DataFrame:
    """Records per type per time bucket (segment records only: snapshot records all share one time)."""
    bucket = (F.floor(F.col("timestamp") / bucket_ms) * bucket_ms).cast("long")
    return (
        records.filter(F.col("source") == "segment")
        .groupBy(bucket.alias("bucket_timestamp"), "type_name")
        .agg(F.count("*").alias("records"))
        .withColumn("bucket_time", F.timestamp_millis("bucket_timestamp"))
        .orderBy("bucket_timestamp", "type_name")
    )


def timeline(leadership: DataFrame, replica_dirs: DataFrame, brokers: DataFrame) -> DataFrame:
    """Offline replicas and leaderless partitions after every change, as running totals."""
    leaderless = leadership.filter(F.col("leadership") == "leaderless")
    steps = [
        leaderless.select(
            F.col("start_seq").alias("seq"),
            F.col("start_timestamp").alias("timestamp"),
            F.lit(0).alias("d_offline"),
            F.lit(1).alias("d_leaderless"),
        ),
        leaderless.filter(F.col("end_seq").isNotNull()).select(
            F.col("end_seq").alias("seq"),
            F.col("end_timestamp").alias("timestamp"),
            F.lit(0).alias("d_offline"),
            F.lit(-1).alias("d_leaderless"),
        ),
    ]
    r = replica_dirs.select(
        "broker_id", "directory", "start_seq", "start_timestamp", "end_seq", "end_timestamp"
    )
    b = brokers.select(
        F.col("broker_id").alias("b_id"),
        F.col("seq").alias("b_start_seq"),
        F.col("timestamp").alias("b_start_ts"),
        F.col("end_seq").alias("b_end_seq"),
        F.col("end_timestamp").alias("b_end_ts"),
        "registered",
        "fenced",
        "log_dirs",
        "registered_dir_count",
        "is_migrating_zk_broker",
    )
    r_end = F.coalesce(r.end_seq, F.lit(_FAR))
    b_end = F.coalesce(b.b_end_seq, F.lit(_FAR))
    overlap = r.join(b, (r.broker_id == b.b_id) & (r.start_seq < b_end) & (b.b_start_seq < r_end))
    offline = (
        ~F.coalesce(F.col("registered"), F.lit(True))
        | F.coalesce(F.col("fenced"), F.lit(False))
        | ~_dir_online(
            F.col("directory"),
            F.coalesce(F.col("log_dirs"), F.array().cast("array<string>")),
            F.col("registered_dir_count"),
            F.col("is_migrating_zk_broker"),
        )
    )

    def point(seq: str, ts: str) -> Column:
        return F.struct(F.col(seq).alias("seq"), F.col(ts).alias("ts"))

    o = overlap.filter(offline).select(
        F.when(F.col("start_seq") >= F.col("b_start_seq"), point("start_seq", "start_timestamp"))
        .otherwise(point("b_start_seq", "b_start_ts"))
        .alias("s"),
        F.when(r_end <= b_end, point("end_seq", "end_timestamp"))
        .otherwise(point("b_end_seq", "b_end_ts"))
        .alias("e"),
    )
    steps.append(
        o.select(
            F.col("s.seq").alias("seq"),
            F.col("s.ts").alias("timestamp"),
            F.lit(1).alias("d_offline"),
            F.lit(0).alias("d_leaderless"),
        )
    )
    steps.append(
        o.filter(F.col("e.seq").isNotNull()).select(
            F.col("e.seq").alias("seq"),
            F.col("e.ts").alias("timestamp"),
            F.lit(-1).alias("d_offline"),
            F.lit(0).alias("d_leaderless"),
        )
    )
    allsteps = steps[0]
    for s in steps[1:]:
        allsteps = allsteps.unionByName(s)
    per_seq = allsteps.groupBy("seq").agg(
        F.max("timestamp").alias("timestamp"),
        F.sum("d_offline").alias("d_offline"),
        F.sum("d_leaderless").alias("d_leaderless"),
    )
    # One running total over the whole log: the rows are change points only, few next to the records.
    w = Window.orderBy("seq").rowsBetween(Window.unboundedPreceding, Window.currentRow)
    return per_seq.select(
        "seq",
        "timestamp",
        F.timestamp_millis("timestamp").alias("time"),
        F.sum("d_offline").over(w).alias("offline_replicas"),
        F.sum("d_leaderless").over(w).alias("leaderless_partitions"),
    )


def migrating_replicas(replica_dirs: DataFrame) -> DataFrame:
    """Per broker: replicas that were MIGRATING (copied from ZooKeeper, directory unknown), how many
    still are, and when the last one got its real directory (the broker back in KRaft mode)."""
    migrating = replica_dirs.filter(F.col("directory") == MIGRATING)
    return (
        migrating.groupBy("broker_id")
        .agg(
            F.count("*").alias("replicas"),
            F.sum(F.col("current").cast("int")).alias("still_migrating"),
            F.max(F.when(~F.col("current"), F.col("end_timestamp"))).alias("last_placed_timestamp"),
            F.max(F.when(~F.col("current"), F.col("end_offset"))).alias("last_placed_offset"),
        )
        .orderBy("broker_id")
    )


def migrating_timeline(replica_dirs: DataFrame) -> DataFrame:
    """Per broker, its MIGRATING replicas after every change to their number: up as the copy creates
    them, down to 0 as the broker, back in KRaft mode, places each in its real directory (or the
    partition is reassigned or deleted)."""
    m = replica_dirs.filter(F.col("directory") == MIGRATING)
    starts = m.select(
        "broker_id",
        F.col("start_seq").alias("seq"),
        F.col("start_offset").alias("offset"),
        F.col("start_timestamp").alias("timestamp"),
        F.lit(1).alias("delta"),
    )
    ends = m.filter(F.col("end_seq").isNotNull()).select(
        "broker_id",
        F.col("end_seq").alias("seq"),
        F.col("end_offset").alias("offset"),
        F.col("end_timestamp").alias("timestamp"),
        F.lit(-1).alias("delta"),
    )
    per_seq = (
        starts.unionByName(ends)
        .groupBy("broker_id", "seq")
        .agg(
            F.max("offset").alias("offset"),
            F.max("timestamp").alias("timestamp"),
            F.sum("delta").alias("delta"),
        )
    )
    w = (
        Window.partitionBy("broker_id")
        .orderBy("seq")
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    return per_seq.select(
        "broker_id",
        "seq",
        "offset",
        "timestamp",
        F.timestamp_millis("timestamp").alias("time"),
        F.sum("delta").over(w).alias("migrating"),
    ).orderBy("broker_id", "seq")
