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


# A new partition's wait for its first leader counts as leaderless time only when longer than this.
FIRST_LEADER_GRACE_MS = 10_000


def counted_leaderless(leadership: DataFrame, grace_ms: int = FIRST_LEADER_GRACE_MS) -> DataFrame:
    """Leaderless intervals that count as such: all but a new partition's wait for its first leader
    (created with leader -1 until a broker has placed its replica) when it lasted at most `grace_ms`."""
    wait = F.coalesce(F.col("first_leader_wait"), F.lit(False))
    return leadership.filter(
        (F.col("leadership") == "leaderless") & (~wait | (F.col("duration_ms") > grace_ms))
    )


def leaderless_totals(leadership: DataFrame, grace_ms: int = FIRST_LEADER_GRACE_MS) -> DataFrame:
    """Per partition: how many leaderless intervals, their total and longest duration (a short wait
    for the first leader after creation left out: see `counted_leaderless`)."""
    return (
        counted_leaderless(leadership, grace_ms)
        .groupBy("topic", "topic_id", "partition_id")
        .agg(
            F.count("*").alias("intervals"),
            F.sum("duration_ms").alias("total_ms"),
            F.max("duration_ms").alias("longest_ms"),
            F.max(F.col("open").cast("int")).cast("boolean").alias("still_leaderless"),
        )
        .orderBy(F.desc("total_ms"), "topic", "partition_id")
    )


def first_leader_waits(leadership: DataFrame, grace_ms: int = FIRST_LEADER_GRACE_MS) -> DataFrame:
    """Each partition created without a leader: how long it waited for its first one, and whether that
    was long enough (over `grace_ms`) to count as leaderless too."""
    return (
        leadership.filter(F.coalesce(F.col("first_leader_wait"), F.lit(False)))
        .select(
            "topic",
            "topic_id",
            "partition_id",
            F.col("start_offset").alias("created_offset"),
            F.col("start_timestamp").alias("created_timestamp"),
            F.col("start_time").alias("created_time"),
            F.col("end_offset").alias("first_leader_offset"),
            F.col("end_timestamp").alias("first_leader_timestamp"),
            F.col("duration_ms").alias("wait_ms"),
            F.col("open").alias("still_waiting"),
            (F.col("duration_ms") > grace_ms).alias("counted_leaderless"),
        )
        .orderBy("created_offset", "topic", "partition_id")
    )


def _leader_dir(df: DataFrame) -> Column:
    pos = F.array_position("replicas", F.col("leader"))
    return F.when(pos > 0, F.element_at("directories", pos.cast("int")))


def _contains(arr: str, value: str) -> Column:
    return F.coalesce(F.array_contains(F.col(arr), F.col(value)), F.lit(False))


def _with_previous(partitions: DataFrame) -> DataFrame:
    """Partition states with the leader and ISR of the state before (null for the first)."""
    w = Window.partitionBy("topic_id", "partition_id").orderBy("seq")
    return partitions.select(
        "*",
        F.lag("leader").over(w).alias("prev_leader"),
        F.lag("isr").over(w).alias("prev_isr"),
    )


def _failure_keys(dir_failures: DataFrame) -> DataFrame:
    cols = set(dir_failures.columns)

    def group(name: str) -> Column:
        return F.coalesce(F.col(name), F.col("seq")) if name in cols else F.col("seq")

    return dir_failures.select(
        F.col("broker_id").alias("f_broker"),
        F.col("directory").alias("f_dir"),
        F.col("seq").alias("f_seq"),
        F.col("offset").alias("f_offset"),
        F.col("timestamp").alias("f_ts"),
        F.col("back_seq").alias("f_back_seq"),
        group("group_start_seq").alias("g_seq"),
        group("group_end_seq").alias("g_end_seq"),
    )


_KEYS = ["f_broker", "f_dir", "f_seq", "topic_id", "partition_id"]


def recovery_partitions(
    dir_failures: DataFrame,
    replica_dirs: DataFrame,
    partitions: DataFrame,
    log_end_timestamp: int | None = None,
    min_isr: DataFrame | None = None,
    default_min_isr: int | None = None,
) -> DataFrame:
    """For each dir failure and each partition with a replica in that dir: what the failure did to it.

    The state the failure hit is the one before its record group (`dir_failures.group_start_seq`):
    the controller writes the PartitionChangeRecords that move leadership off the dir before the
    BrokerRegistrationChangeRecord, in the same batch, so the state at the failure record already has
    the new leaders. `lost_leader`: the failed replica led then.

    A partition counts as recovered (`recovered_*`, `latency_ms`) from the first state at or after the
    failure with a leader that is not the failed replica (or is, once the broker lists the dir again);
    one whose leader was elsewhere all along recovers at once (latency 0). Removing the partition also
    ends the wait, flagged as `removed`.

    It is back in sync (`in_sync_*`) once, after the failed replica left the ISR (`shrunk_*`), it is in
    the ISR again (or no longer a replica) under a leader; one whose ISR never lost it is in sync when
    recovered. `back_in_sync_ms` runs from the failure record to the later of that and the last leader
    elected in between (`leader_moves` of them). `under_min_isr_ms`: the time from the failure until it
    was back in sync (or the log's end) with fewer in-sync replicas than the topic's min.insync.replicas
    (`min_isr`, from `min_isr` by topic name, else `default_min_isr`; null when neither gives one).
    """
    f = _failure_keys(dir_failures)
    r = replica_dirs.select(
        "topic", "topic_id", "partition_id", "broker_id", "directory", "start_seq", "end_seq"
    )
    fcols = ["f_broker", "f_dir", "f_seq", "f_offset", "f_ts", "f_back_seq", "g_seq", "g_end_seq"]
    affected = (
        f.join(
            r,
            (r.broker_id == f.f_broker)
            & (r.directory == f.f_dir)
            & (r.start_seq <= f.f_seq)
            & (F.coalesce(r.end_seq, F.lit(_FAR)) >= f.g_seq),
        )
        .select(*fcols, "topic", "topic_id", "partition_id")
        .dropDuplicates(_KEYS)
    )
    prev = _with_previous(partitions)
    p = prev.select(
        F.col("topic_id").alias("p_topic_id"),
        F.col("partition_id").alias("p_partition"),
        F.col("seq").alias("p_seq"),
        F.col("end_seq").alias("p_end_seq"),
        F.col("timestamp").alias("p_ts"),
        F.col("end_timestamp").alias("p_end_ts"),
        "record_type",
        "leader",
        "prev_leader",
        "isr",
        "replicas",
        "deleted",
        _leader_dir(prev).alias("leader_dir"),
    )
    joined = affected.join(
        p,
        (p.p_topic_id == affected.topic_id)
        & (p.p_partition == affected.partition_id)
        & (F.coalesce(p.p_end_seq, F.lit(_FAR)) >= affected.g_seq),
    )
    at_failure = joined.filter(F.col("p_seq") < F.col("g_seq")).select(
        *_KEYS, F.col("leader").alias("leader_at_failure"), F.col("isr").alias("isr_at_failure")
    )
    after_group = joined.filter(
        (F.col("p_seq") <= F.col("g_end_seq")) & (F.coalesce("p_end_seq", F.lit(_FAR)) > F.col("g_end_seq"))
    ).select(*_KEYS, F.col("leader").alias("leader_after_failure"))

    on_failed = (F.col("leader") == F.col("f_broker")) & F.col("leader_dir").eqNullSafe(F.col("f_dir"))
    dir_back = F.col("f_back_seq").isNotNull() & (F.col("p_seq") >= F.col("f_back_seq"))
    led = (F.col("leader") >= 0) & (~on_failed | dir_back)
    # The state in effect at the failure record or a later one.
    current = F.coalesce(F.col("p_end_seq"), F.lit(_FAR)) > F.col("f_seq")
    r_seq, r_ts = F.greatest("p_seq", "f_seq"), F.greatest("p_ts", "f_ts")
    good = joined.filter(current & (led | F.col("deleted"))).select(
        *_KEYS, r_seq.alias("r_seq"), r_ts.alias("r_ts"), F.col("deleted").alias("r_removed")
    )
    first_good = good.groupBy(*_KEYS).agg(
        F.min("r_seq").alias("recovered_seq"),
        F.min_by("r_ts", "r_seq").alias("recovered_timestamp"),
        F.min_by("r_removed", "r_seq").alias("removed"),
    )

    base = joined.join(at_failure, _KEYS, "left")
    in_isr_before = F.coalesce(F.array_contains("isr_at_failure", F.col("f_broker")), F.lit(False))
    left_isr = (
        (F.col("p_seq") >= F.col("g_seq"))
        & ~F.col("deleted")
        & in_isr_before
        & ~_contains("isr", "f_broker")
        & (F.col("f_back_seq").isNull() | (F.col("p_seq") < F.col("f_back_seq")))
    )
    shrunk = (
        base.filter(left_isr)
        .groupBy(*_KEYS)
        .agg(F.min("p_seq").alias("shrunk_seq"), F.min_by("p_ts", "p_seq").alias("shrunk_timestamp"))
    )
    base = base.join(shrunk, _KEYS, "left")
    restored = F.col("deleted") | (
        led
        & (F.col("shrunk_seq").isNull() | _contains("isr", "f_broker") | ~_contains("replicas", "f_broker"))
    )
    after_shrink = F.when(F.col("shrunk_seq").isNotNull(), F.col("p_seq") >= F.col("shrunk_seq")).otherwise(
        current
    )
    in_sync = (
        base.filter(after_shrink & restored)
        .select(*_KEYS, r_seq.alias("r_seq"), r_ts.alias("r_ts"))
        .groupBy(*_KEYS)
        .agg(F.min("r_seq").alias("in_sync_seq"), F.min_by("r_ts", "r_seq").alias("in_sync_timestamp"))
    )
    base = base.join(in_sync, _KEYS, "left")
    elected = (
        (F.col("record_type") == "PartitionChangeRecord")
        & (F.col("leader") >= 0)
        & ~F.col("leader").eqNullSafe(F.col("prev_leader"))
        & (F.col("p_seq") >= F.col("g_seq"))
        & (F.col("p_seq") <= F.coalesce("in_sync_seq", F.lit(_FAR)))
    )
    moves = (
        base.filter(elected)
        .select(*_KEYS, r_seq.alias("m_seq"), r_ts.alias("m_ts"))
        .groupBy(*_KEYS)
        .agg(
            F.count("*").alias("leader_moves"),
            F.max("m_seq").alias("last_leader_move_seq"),
            F.max("m_ts").alias("last_leader_move_timestamp"),
        )
    )
    if min_isr is not None:
        base = base.join(
            F.broadcast(min_isr.select("topic", F.col("min_isr").alias("topic_min_isr"))), "topic", "left"
        )
        min_col = F.coalesce(F.col("topic_min_isr"), F.lit(default_min_isr).cast("int"))
    else:
        min_col = F.lit(default_min_isr).cast("int")
    base = base.withColumn("min_isr", min_col)
    log_end = F.lit(log_end_timestamp).cast("long")
    seg_start = F.greatest("p_ts", "f_ts")
    seg_end = F.least(
        F.coalesce(F.col("p_end_ts"), log_end, F.col("p_ts")),
        F.coalesce(F.col("in_sync_timestamp"), log_end, F.col("p_end_ts"), F.col("p_ts")),
    )
    under = current & ~F.col("deleted") & (F.size("isr") < F.col("min_isr")) & (seg_end > seg_start)
    under_ms = base.groupBy(*_KEYS).agg(
        F.first("min_isr", ignorenulls=True).alias("min_isr"),
        F.sum(F.when(under, seg_end - seg_start).otherwise(F.lit(0))).alias("under_min_isr_ms"),
    )

    out = (
        affected.join(at_failure, _KEYS, "left")
        .join(after_group, _KEYS, "left")
        .join(first_good, _KEYS, "left")
        .join(shrunk, _KEYS, "left")
        .join(in_sync, _KEYS, "left")
        .join(moves, _KEYS, "left")
        .join(under_ms, _KEYS, "left")
    )
    back_in_sync_ts = F.greatest(
        "in_sync_timestamp", F.coalesce("last_leader_move_timestamp", F.col("in_sync_timestamp"))
    )
    return out.select(
        F.col("f_broker").alias("broker_id"),
        F.col("f_dir").alias("directory"),
        F.col("f_seq").alias("failure_seq"),
        F.col("f_offset").alias("failure_offset"),
        F.col("f_ts").alias("failure_timestamp"),
        F.col("g_seq").alias("group_start_seq"),
        "topic",
        "topic_id",
        "partition_id",
        "leader_at_failure",
        (F.col("leader_at_failure") == F.col("f_broker")).alias("lost_leader"),
        "leader_after_failure",
        "recovered_seq",
        "recovered_timestamp",
        F.coalesce("removed", F.lit(False)).alias("removed"),
        (F.col("recovered_timestamp") - F.col("f_ts")).alias("latency_ms"),
        "isr_at_failure",
        "shrunk_seq",
        "shrunk_timestamp",
        F.coalesce("leader_moves", F.lit(0)).alias("leader_moves"),
        "last_leader_move_seq",
        "last_leader_move_timestamp",
        "in_sync_seq",
        "in_sync_timestamp",
        (back_in_sync_ts - F.col("f_ts")).alias("back_in_sync_ms"),
        "min_isr",
        F.when(F.col("min_isr").isNotNull(), F.col("under_min_isr_ms")).alias("under_min_isr_ms"),
    )


def recovery(dir_failures: DataFrame, recovery_parts: DataFrame) -> DataFrame:
    """Per dir failure: partitions affected, leaders lost, the time until all had a leader again
    (`recovery_latency_ms`), and until all were back in sync (`back_in_sync_ms`: leaders elected and
    the failed replicas in the ISR again; null while one is not)."""
    agg = recovery_parts.groupBy("broker_id", "directory", "failure_seq").agg(
        F.count("*").alias("affected_partitions"),
        F.sum(F.col("lost_leader").cast("int")).alias("leaders_lost"),
        F.sum(F.col("recovered_seq").isNull().cast("int")).alias("unrecovered_partitions"),
        F.max("recovered_timestamp").alias("all_recovered_timestamp"),
        F.max("recovered_seq").alias("all_recovered_seq"),
        F.sum((F.col("leader_moves") > 0).cast("int")).alias("partitions_with_new_leader"),
        F.sum("leader_moves").alias("leader_moves"),
        F.max("last_leader_move_timestamp").alias("last_leader_move_timestamp"),
        F.sum(F.col("shrunk_seq").isNotNull().cast("int")).alias("isr_shrunk"),
        F.sum(F.col("in_sync_seq").isNull().cast("int")).alias("not_in_sync"),
        F.max("in_sync_timestamp").alias("all_in_sync_timestamp"),
        F.max("in_sync_seq").alias("all_in_sync_seq"),
        F.max("back_in_sync_ms").alias("slowest_in_sync_ms"),
        F.min(F.col("min_isr").isNotNull().cast("int")).alias("min_isr_known"),
        F.sum((F.coalesce("under_min_isr_ms", F.lit(0)) > 0).cast("int")).alias("under_min_isr_partitions"),
        F.max("under_min_isr_ms").alias("under_min_isr_ms"),
    )
    cols = set(dir_failures.columns)
    group = [c for c in ("group_start_seq", "group_start_offset", "group_end_seq") if c in cols]
    f = dir_failures.select(
        "broker_id",
        "directory",
        F.col("seq").alias("failure_seq"),
        F.col("offset").alias("failure_offset"),
        F.col("timestamp").alias("failure_timestamp"),
        "back_seq",
        "back_timestamp",
        *group,
    )
    counts = [
        "affected_partitions",
        "leaders_lost",
        "unrecovered_partitions",
        "partitions_with_new_leader",
        "leader_moves",
        "isr_shrunk",
        "not_in_sync",
        "under_min_isr_partitions",
    ]
    out = f.join(agg, ["broker_id", "directory", "failure_seq"], "left").fillna(0, counts)
    none = F.col("affected_partitions") == 0
    out = (
        out.withColumn(
            "recovery_latency_ms",
            F.when(none, F.lit(0)).when(
                F.col("unrecovered_partitions") == 0,
                F.col("all_recovered_timestamp") - F.col("failure_timestamp"),
            ),
        )
        .withColumn("recovered", F.col("unrecovered_partitions") == 0)
        .withColumn(
            "back_in_sync_ms",
            F.when(none, F.lit(0)).when(F.col("not_in_sync") == 0, F.col("slowest_in_sync_ms")),
        )
        .withColumn("min_isr_known", F.when(none, F.lit(False)).otherwise(F.col("min_isr_known") == 1))
        .drop("slowest_in_sync_ms")
    )
    for c in ("failure_timestamp", "all_recovered_timestamp", "back_timestamp", "all_in_sync_timestamp"):
        out = out.withColumn(c.replace("timestamp", "time"), F.timestamp_millis(c))
    return out.orderBy("failure_seq", "broker_id", "directory")


def failure_windows(recovery_table: DataFrame) -> DataFrame:
    """Per failure, the seqs its story spans: the record group, and the end (the last partition back in
    sync, or the dir back if later; null, to log end, while a partition is not)."""
    cols = set(recovery_table.columns)

    def group(name: str) -> Column:
        return F.coalesce(F.col(name), F.col("failure_seq")) if name in cols else F.col("failure_seq")

    done = (F.col("not_in_sync") == 0) & (F.col("unrecovered_partitions") == 0)
    return recovery_table.select(
        "broker_id",
        "directory",
        "failure_seq",
        group("group_start_seq").alias("g_seq"),
        group("group_end_seq").alias("g_end_seq"),
        F.when(
            done,
            F.greatest(
                F.coalesce("all_in_sync_seq", F.col("failure_seq")),
                F.coalesce("all_recovered_seq", F.col("failure_seq")),
                F.coalesce("back_seq", F.col("failure_seq")),
                group("group_end_seq"),
            ),
        ).alias("end_seq"),
    )


def failure_events(
    windows: DataFrame, recovery_parts: DataFrame, partitions: DataFrame, brokers: DataFrame
) -> DataFrame:
    """What happened in each failure's window, one row per event, for its timeline: leaders elected or
    lost, the failed replica leaving and rejoining ISRs (of the partitions the failure hit), and every
    change of the failed broker's registration (fenced, unfenced, controlled shutdown, dirs, and a new
    RegisterBrokerRecord: the broker restarted)."""
    w = F.broadcast(windows)
    hit = recovery_parts.select("failure_seq", "directory", "topic_id", "partition_id").join(
        w, ["failure_seq", "directory"]
    )
    prev = _with_previous(partitions).select(
        F.col("topic_id").alias("p_topic_id"),
        F.col("partition_id").alias("p_partition"),
        "topic",
        "seq",
        "offset",
        "timestamp",
        "record_type",
        "leader",
        "prev_leader",
        "isr",
        "prev_isr",
        "deleted",
    )
    ev = hit.join(
        prev,
        (prev.p_topic_id == hit.topic_id)
        & (prev.p_partition == hit.partition_id)
        & (prev.seq >= hit.g_seq)
        & (prev.seq <= F.coalesce(hit.end_seq, F.lit(_FAR))),
    )
    name = F.format_string("%s-%d", F.coalesce("topic", "topic_id"), F.col("partition_id"))
    isr_text = F.format_string(
        "%s: ISR [%s] -> [%s]", name, F.array_join("prev_isr", ","), F.array_join("isr", ",")
    )
    had = F.coalesce(F.array_contains("prev_isr", F.col("broker_id")), F.lit(False))
    has = F.coalesce(F.array_contains("isr", F.col("broker_id")), F.lit(False))
    changed_leader = (F.col("record_type") == "PartitionChangeRecord") & ~F.col("leader").eqNullSafe(
        F.col("prev_leader")
    )
    leader_text = F.format_string(
        "%s: leader %s -> %s",
        name,
        F.coalesce(F.col("prev_leader").cast("string"), F.lit("?")),
        F.col("leader").cast("string"),
    )
    common = ["failure_seq", "directory", "seq", "offset", "timestamp"]
    kinds = [
        (changed_leader & (F.col("leader") >= 0), "leader moved", leader_text),
        (changed_leader & (F.col("leader") < 0), "leader lost", leader_text),
        (~F.col("deleted") & had & ~has, "ISR shrink", isr_text),
        (~F.col("deleted") & ~had & has & F.col("prev_isr").isNotNull(), "ISR restored", isr_text),
        (F.col("deleted"), "partition deleted", name),
    ]
    parts = [
        ev.filter(cond).select(
            *common,
            F.lit(kind).alias("kind"),
            "topic",
            "partition_id",
            F.col("leader").alias("leader"),
            text.alias("detail"),
        )
        for cond, kind, text in kinds
    ]
    bw = Window.partitionBy("broker_id").orderBy("seq")
    b = brokers.select(
        "broker_id",
        "seq",
        "offset",
        "timestamp",
        "record_type",
        "state",
        "broker_epoch",
        "incarnation_id",
        "log_dirs",
        "log_dirs_changed",
        F.lag("state").over(bw).alias("prev_state"),
        F.lag("broker_epoch").over(bw).alias("prev_epoch"),
        F.lag("incarnation_id").over(bw).alias("prev_incarnation"),
    )
    bev = b.join(
        w.select(
            F.col("broker_id").alias("w_broker"),
            "failure_seq",
            "directory",
            "g_seq",
            "end_seq",
        ),
        (b.broker_id == F.col("w_broker"))
        & (b.seq >= F.col("g_seq"))
        & (b.seq <= F.coalesce(F.col("end_seq"), F.lit(_FAR))),
    )
    restart_text = F.format_string(
        "broker %d registered again: epoch %s -> %s%s",
        F.col("broker_id"),
        F.coalesce(F.col("prev_epoch").cast("string"), F.lit("?")),
        F.col("broker_epoch").cast("string"),
        F.when(
            F.col("prev_incarnation").isNotNull() & (F.col("prev_incarnation") != F.col("incarnation_id")),
            F.lit(", new incarnation (a restart)"),
        ).otherwise(F.lit("")),
    )
    state_text = F.format_string(
        "broker %d: %s -> %s",
        F.col("broker_id"),
        F.regexp_replace(F.coalesce("prev_state", F.lit("?")), "_", " "),
        F.regexp_replace("state", "_", " "),
    )
    dirs_text = F.format_string("broker %d lists %d dirs", F.col("broker_id"), F.size("log_dirs"))
    is_register = F.col("record_type") == "RegisterBrokerRecord"
    bkinds = [
        (is_register, "broker restarted", restart_text),
        (
            ~is_register & ~F.col("state").eqNullSafe(F.col("prev_state")),
            F.concat(F.lit("broker "), F.regexp_replace("state", "_", " ")),
            state_text,
        ),
        (~is_register & F.coalesce("log_dirs_changed", F.lit(False)), "dirs changed", dirs_text),
    ]
    for cond, kind, text in bkinds:
        parts.append(
            bev.filter(cond).select(
                *common,
                (kind if isinstance(kind, Column) else F.lit(kind)).alias("kind"),
                F.lit(None).cast("string").alias("topic"),
                F.lit(None).cast("int").alias("partition_id"),
                F.lit(None).cast("int").alias("leader"),
                text.alias("detail"),
            )
        )
    out = parts[0]
    for df in parts[1:]:
        out = out.unionByName(df)
    out = out.join(w.select("failure_seq", "directory", "broker_id"), ["failure_seq", "directory"])
    return out.withColumn("time", F.timestamp_millis("timestamp")).orderBy(
        "failure_seq", "directory", "seq", "kind"
    )


def failure_leaders(windows: DataFrame, partitions: DataFrame) -> DataFrame:
    """Leaders per broker at three points of each failure: `before` its record group, `after` it, and
    `recovered` (at the end of its window, or at log end while a partition is not back in sync).
    `leader` -1 counts the partitions without one."""
    pts = windows.select(
        "failure_seq",
        "directory",
        F.explode(
            F.array(
                F.struct(F.lit("before").alias("point"), (F.col("g_seq") - 1).alias("at")),
                F.struct(F.lit("after").alias("point"), F.col("g_end_seq").alias("at")),
                F.struct(F.lit("recovered").alias("point"), F.coalesce("end_seq", F.lit(_FAR)).alias("at")),
            )
        ).alias("pt"),
    ).select("failure_seq", "directory", "pt.point", "pt.at")
    p = partitions.filter(~F.col("deleted")).select("seq", "end_seq", "leader")
    live = p.join(
        F.broadcast(pts),
        (p.seq <= pts.at) & (F.coalesce(p.end_seq, F.lit(_FAR)) > pts.at),
    )
    return (
        live.groupBy("failure_seq", "directory", "point", "leader")
        .agg(F.count("*").alias("partitions"))
        .orderBy("failure_seq", "directory", "point", "leader")
    )


def broker_restarts(brokers: DataFrame) -> DataFrame:
    """Every RegisterBrokerRecord of a broker registered before: a restart (a new incarnation) or a
    re-registration, with the epochs, and the dirs it came back without or with again."""
    w = Window.partitionBy("broker_id").orderBy("seq")
    b = brokers.select(
        "broker_id",
        "seq",
        "offset",
        "timestamp",
        "record_type",
        "broker_epoch",
        "incarnation_id",
        "log_dirs",
        "state",
        F.lag("log_dirs").over(w).alias("dirs_before"),
        F.lag("state").over(w).alias("state_before"),
    )
    reg = b.filter(F.col("record_type") == "RegisterBrokerRecord")
    rw = Window.partitionBy("broker_id").orderBy("seq")
    reg = reg.select(
        "*",
        F.lag("broker_epoch").over(rw).alias("previous_epoch"),
        F.lag("incarnation_id").over(rw).alias("previous_incarnation"),
        F.lag("seq").over(rw).alias("previous_seq"),
    ).filter(F.col("previous_seq").isNotNull())
    empty = F.array().cast("array<string>")
    return reg.select(
        "broker_id",
        "seq",
        "offset",
        "timestamp",
        F.timestamp_millis("timestamp").alias("time"),
        "previous_epoch",
        F.col("broker_epoch").alias("epoch"),
        "previous_incarnation",
        "incarnation_id",
        (F.col("previous_incarnation") != F.col("incarnation_id")).alias("new_incarnation"),
        F.col("state_before"),
        F.array_except(F.coalesce("dirs_before", empty), F.coalesce("log_dirs", empty)).alias("dirs_missing"),
        F.array_except(F.coalesce("log_dirs", empty), F.coalesce("dirs_before", empty)).alias("dirs_added"),
    ).orderBy("seq")


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
    """Offline replicas and leaderless partitions after every change, as running totals (a new
    partition's short wait for its first leader is not counted: see `counted_leaderless`)."""
    leaderless = counted_leaderless(leadership)
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
