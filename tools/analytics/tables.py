"""Derive the state tables from the `records` table, replaying with Spark window functions.

Every table is a replay of one kind of record, done per key in offset order (`seq`): the state
after a record is the last non-null value of each field among the records of the key so far, where
a "no change" field of a PartitionChangeRecord or BrokerRegistrationChangeRecord is read as null.
A full-state record (PartitionRecord, RegisterBrokerRecord) opens a new group, so earlier values
never leak into a new registration. Epochs are counted as Kafka's replay counts them
(PartitionRegistration.merge): the partition epoch goes up on every change, the leader epoch on
every change that names a leader.

State rows carry the start of the next state of their key (`end_seq`, `end_offset`,
`end_timestamp`), so each row is also an interval; null means the state still holds at log end.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import Column, Window
from pyspark.sql import functions as F

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

REGISTER_BROKER = 0
UNREGISTER_BROKER = 1
TOPIC = 2
PARTITION = 3
PARTITION_CHANGE = 5
FENCE_BROKER = 7
UNFENCE_BROKER = 8
REMOVE_TOPIC = 9
BROKER_REGISTRATION_CHANGE = 17
BEGIN_TRANSACTION = 23
END_TRANSACTION = 24
ABORT_TRANSACTION = 25
TRANSACTION_MARKERS = (BEGIN_TRANSACTION, END_TRANSACTION, ABORT_TRANSACTION)
ZK_MIGRATION_STATE = 21
ZK_MIGRATION_STATES = {0: "NONE", 1: "MIGRATION", 2: "PRE_MIGRATION", 3: "POST_MIGRATION"}
REGISTER_CONTROLLER = 27
CONFIG = 4
TOPIC_RESOURCE = 2
BROKER_RESOURCE = 4
MIN_ISR = "min.insync.replicas"
COPY_TRANSACTION = "ZK Migration"  # BeginTransactionRecord.Name of the copy of ZooKeeper's metadata
ZK_BROKER = "ZooKeeper broker in migration mode"
KRAFT_BROKER = "KRaft broker"
CONTROLLER_READY = "controller ready to migrate"
CONTROLLER_NOT_READY = "controller not ready to migrate"

MIGRATING = "AAAAAAAAAAAAAAAAAAAAAA"
UNASSIGNED = "AAAAAAAAAAAAAAAAAAAAAQ"
LOST = "AAAAAAAAAAAAAAAAAAAAAg"

NO_LEADER = -1
NO_LEADER_CHANGE = -2

_REGISTER_SCHEMA = (
    "BrokerId int, IsMigratingZkBroker boolean, IncarnationId string, BrokerEpoch long, Rack string, "
    "Fenced boolean, InControlledShutdown boolean, LogDirs array<string>"
)
_CHANGE_SCHEMA = "BrokerId int, BrokerEpoch long, Fenced int, InControlledShutdown int, LogDirs array<string>"
_UNREGISTER_SCHEMA = "BrokerId int, BrokerEpoch long"
_FENCE_SCHEMA = "Id int, Epoch long"
_TOPIC_SCHEMA = "Name string, TopicId string"
_REMOVE_TOPIC_SCHEMA = "TopicId string"
_PARTITION_FIELDS = (
    "PartitionId int, TopicId string, Replicas array<int>, Isr array<int>, RemovingReplicas array<int>, "
    "AddingReplicas array<int>, Leader int, LeaderRecoveryState int, Directories array<string>, "
    "EligibleLeaderReplicas array<int>, LastKnownElr array<int>"
)
_PARTITION_SCHEMA = _PARTITION_FIELDS + ", LeaderEpoch int, PartitionEpoch int"

_RUNNING = Window.unboundedPreceding, Window.currentRow


def _of_type(records: DataFrame, api_key: int, schema: str) -> DataFrame:
    return records.filter(F.col("type") == api_key).select(
        "seq", "offset", "timestamp", "type_name", F.from_json("record", schema).alias("r")
    )


def _with_time(df: DataFrame, *cols: str) -> DataFrame:
    for c in cols:
        df = df.withColumn(c.replace("timestamp", "time"), F.timestamp_millis(c))
    return df


def metadata_events(records: DataFrame, excluded: list[tuple[int, int | None]]) -> DataFrame:
    """Metadata records that count for replay: no control records, none from aborted or open transactions."""
    df = records.filter(~F.col("control"))
    for lo, hi in excluded:
        inside = F.col("seq") >= lo if hi is None else F.col("seq").between(lo, hi)
        df = df.filter(~inside)
    return df


def excluded_ranges(markers: list[tuple[int, int]]) -> tuple[list[tuple[int, int | None]], int | None]:
    """Seq ranges to leave out of replay: aborted transactions, and an open one at log end.

    `markers` are (seq, type) of Begin/End/AbortTransactionRecords in seq order. Returns the ranges
    and the seq of a transaction still open at log end (its records are held back, as Kafka does).
    """
    out: list[tuple[int, int | None]] = []
    begin: int | None = None
    for seq, kind in markers:
        if kind == BEGIN_TRANSACTION:
            begin = seq
        elif kind == ABORT_TRANSACTION and begin is not None:
            out.append((begin, seq))
            begin = None
        elif kind in (END_TRANSACTION, ABORT_TRANSACTION):
            begin = None
    if begin is not None:
        out.append((begin, None))
    return out, begin


# ---------------------------------------------------------------------------------------------- brokers


def broker_events(events: DataFrame) -> DataFrame:
    cols = [
        "broker_id",
        "seq",
        "offset",
        "timestamp",
        "record_type",
        "opens_registration",
        "registered",
        "broker_epoch",
        "incarnation_id",
        "rack",
        "fenced",
        "in_controlled_shutdown",
        "log_dirs",
        "registered_dir_count",
        "is_migrating_zk_broker",
    ]
    null_bool, null_str, null_long = (
        F.lit(None).cast("boolean"),
        F.lit(None).cast("string"),
        F.lit(None).cast("long"),
    )
    null_dirs = F.lit(None).cast("array<string>")
    null_int = F.lit(None).cast("int")
    reg = _of_type(events, REGISTER_BROKER, _REGISTER_SCHEMA).select(
        F.col("r.BrokerId").alias("broker_id"),
        "seq",
        "offset",
        "timestamp",
        F.col("type_name").alias("record_type"),
        F.lit(True).alias("opens_registration"),
        F.lit(True).alias("registered"),
        F.col("r.BrokerEpoch").alias("broker_epoch"),
        F.col("r.IncarnationId").alias("incarnation_id"),
        F.col("r.Rack").alias("rack"),
        F.coalesce("r.Fenced", F.lit(True)).alias("fenced"),
        F.coalesce("r.InControlledShutdown", F.lit(False)).alias("in_controlled_shutdown"),
        # An empty list is a registration made before directories were tracked: every dir is online.
        F.coalesce("r.LogDirs", F.array().cast("array<string>")).alias("log_dirs"),
        # Dirs reported offline later stay registered: a broker registered with several keeps
        # KIP-858's stricter rule for its unplaced replicas (kraftpy.metadata's registration).
        F.size(F.coalesce("r.LogDirs", F.array().cast("array<string>"))).alias("registered_dir_count"),
        F.coalesce("r.IsMigratingZkBroker", F.lit(False)).alias("is_migrating_zk_broker"),
    )
    change = _of_type(events, BROKER_REGISTRATION_CHANGE, _CHANGE_SCHEMA).select(
        F.col("r.BrokerId").alias("broker_id"),
        "seq",
        "offset",
        "timestamp",
        F.col("type_name").alias("record_type"),
        F.lit(False).alias("opens_registration"),
        null_bool.alias("registered"),
        F.col("r.BrokerEpoch").alias("broker_epoch"),
        null_str.alias("incarnation_id"),
        null_str.alias("rack"),
        F.when(F.col("r.Fenced") == 1, True).when(F.col("r.Fenced") == -1, False).alias("fenced"),
        F.when(F.col("r.InControlledShutdown") == 1, True).alias("in_controlled_shutdown"),
        # Replay reads an empty LogDirs as "no change".
        F.when(F.size("r.LogDirs") > 0, F.col("r.LogDirs")).alias("log_dirs"),
        null_int.alias("registered_dir_count"),
        null_bool.alias("is_migrating_zk_broker"),
    )
    legacy = [
        _of_type(events, key, _FENCE_SCHEMA).select(
            F.col("r.Id").alias("broker_id"),
            "seq",
            "offset",
            "timestamp",
            F.col("type_name").alias("record_type"),
            F.lit(False).alias("opens_registration"),
            null_bool.alias("registered"),
            F.col("r.Epoch").alias("broker_epoch"),
            null_str.alias("incarnation_id"),
            null_str.alias("rack"),
            F.lit(fenced).alias("fenced"),
            null_bool.alias("in_controlled_shutdown"),
            null_dirs.alias("log_dirs"),
            null_int.alias("registered_dir_count"),
            null_bool.alias("is_migrating_zk_broker"),
        )
        for key, fenced in ((FENCE_BROKER, True), (UNFENCE_BROKER, False))
    ]
    unreg = _of_type(events, UNREGISTER_BROKER, _UNREGISTER_SCHEMA).select(
        F.col("r.BrokerId").alias("broker_id"),
        "seq",
        "offset",
        "timestamp",
        F.col("type_name").alias("record_type"),
        F.lit(True).alias("opens_registration"),
        F.lit(False).alias("registered"),
        null_long.alias("broker_epoch"),
        null_str.alias("incarnation_id"),
        null_str.alias("rack"),
        null_bool.alias("fenced"),
        null_bool.alias("in_controlled_shutdown"),
        null_dirs.alias("log_dirs"),
        null_int.alias("registered_dir_count"),
        null_bool.alias("is_migrating_zk_broker"),
    )
    out = reg.select(cols)
    for df in (change, *legacy, unreg):
        out = out.unionByName(df.select(cols))
    return out


def brokers_table(events: DataFrame) -> DataFrame:
    """Registration history: one row per state a broker went through, with when it ended."""
    ev = broker_events(events)
    by_broker = Window.partitionBy("broker_id").orderBy("seq")
    ev = ev.withColumn(
        "registration", F.sum(F.col("opens_registration").cast("int")).over(by_broker.rowsBetween(*_RUNNING))
    )
    w = Window.partitionBy("broker_id", "registration").orderBy("seq").rowsBetween(*_RUNNING)
    carried = {
        c: F.last(c, ignorenulls=True).over(w)
        for c in (
            "registered",
            "broker_epoch",
            "incarnation_id",
            "rack",
            "fenced",
            "in_controlled_shutdown",
            "log_dirs",
            "registered_dir_count",
            "is_migrating_zk_broker",
        )
    }
    state = (
        F.when(carried["registered"] == False, "unregistered")  # noqa: E712 - a Spark column, not a bool
        .when(carried["fenced"], "fenced")
        .when(carried["in_controlled_shutdown"], "controlled_shutdown")
        .when(carried["fenced"] == False, "unfenced")  # noqa: E712
        .otherwise("unknown")
    )
    end_ts = F.lead("timestamp").over(by_broker)
    return ev.select(
        "broker_id",
        "registration",
        "seq",
        "offset",
        "timestamp",
        F.timestamp_millis("timestamp").alias("time"),
        "record_type",
        (F.col("log_dirs").isNotNull() & ~F.col("opens_registration")).alias("log_dirs_changed"),
        *[v.alias(k) for k, v in carried.items()],
        state.alias("state"),
        F.lead("seq").over(by_broker).alias("end_seq"),
        F.lead("offset").over(by_broker).alias("end_offset"),
        end_ts.alias("end_timestamp"),
        F.timestamp_millis(end_ts).alias("end_time"),
    )


def dir_failures_table(brokers: DataFrame, records: DataFrame | None = None) -> DataFrame:
    """A BrokerRegistrationChangeRecord whose LogDirs leaves out a dir the registration listed: it went offline.

    With `records`, each failure also gets the record group that carries it (`group_start_seq`,
    `group_start_offset`, `group_end_seq`): the run of consecutive records with the failure's timestamp
    around it, which holds its whole batch. The controller writes the PartitionChangeRecords that take
    the dir's replicas out of leadership and ISR in the same batch, before the registration change;
    the state before the group is the state the failure hit.
    """
    w = Window.partitionBy("broker_id", "registration").orderBy("seq")
    df = brokers.withColumn("previous_dirs", F.lag("log_dirs").over(w))
    df = df.filter(
        (F.col("record_type") == "BrokerRegistrationChangeRecord")
        & F.col("log_dirs_changed")
        & F.col("previous_dirs").isNotNull()
    )
    df = df.select(
        "broker_id",
        "broker_epoch",
        "registration",
        "seq",
        "offset",
        "timestamp",
        F.explode(F.array_except("previous_dirs", "log_dirs")).alias("directory"),
        F.col("log_dirs").alias("remaining_dirs"),
    )
    # When the dir was back: the first later state of the broker that lists it again.
    later = brokers.select(
        F.col("broker_id").alias("b_id"),
        F.col("seq").alias("b_seq"),
        F.col("timestamp").alias("b_ts"),
        F.col("log_dirs").alias("b_dirs"),
    )
    back = (
        df.join(
            later,
            (later.b_id == df.broker_id)
            & (later.b_seq > df.seq)
            & F.array_contains(later.b_dirs, df.directory),
            "left",
        )
        .groupBy("broker_id", "directory", "seq")
        .agg(F.min("b_seq").alias("back_seq"), F.min_by("b_ts", "b_seq").alias("back_timestamp"))
    )
    df = df.join(back, ["broker_id", "directory", "seq"], "left")
    if records is not None:
        df = df.join(record_groups(df.select("seq", "timestamp").distinct(), records), "seq", "left")
    return _with_time(df, "timestamp", "back_timestamp").orderBy("seq", "directory")


def record_groups(points: DataFrame, records: DataFrame) -> DataFrame:
    """For each (seq, timestamp) of `points` (a few rows): the run of consecutive records (by seq) that
    share its timestamp, as `group_start_seq`, `group_start_offset` and `group_end_seq`.

    A batch's records all carry its timestamp, so the run holds the whole batch, and any batch appended
    right before or after it in the same millisecond. Found with an equi-join on the timestamp: a run is
    contiguous while the distance in seq from the point equals the rank of the record counted from it."""
    p = F.broadcast(points.select(F.col("seq").alias("p_seq"), F.col("timestamp").alias("p_ts")))
    r = records.select("seq", "offset", "timestamp")
    same = r.join(p, r.timestamp == p.p_ts).select("p_seq", "seq", "offset")
    down = Window.partitionBy("p_seq").orderBy(F.desc("seq"))
    up = Window.partitionBy("p_seq").orderBy("seq")
    before = same.filter(F.col("seq") <= F.col("p_seq")).withColumn("rank", F.row_number().over(down))
    after = same.filter(F.col("seq") >= F.col("p_seq")).withColumn("rank", F.row_number().over(up))
    start = (
        before.filter(F.col("p_seq") - F.col("seq") == F.col("rank") - 1)
        .groupBy("p_seq")
        .agg(F.min("seq").alias("group_start_seq"), F.min_by("offset", "seq").alias("group_start_offset"))
    )
    end = (
        after.filter(F.col("seq") - F.col("p_seq") == F.col("rank") - 1)
        .groupBy("p_seq")
        .agg(F.max("seq").alias("group_end_seq"))
    )
    return start.join(end, "p_seq", "outer").withColumnRenamed("p_seq", "seq")


# ---------------------------------------------------------------------------------------------- partitions


def topics_table(events: DataFrame) -> DataFrame:
    topics = _of_type(events, TOPIC, _TOPIC_SCHEMA).select(
        F.col("r.TopicId").alias("topic_id"),
        F.col("r.Name").alias("topic"),
        F.col("seq").alias("created_seq"),
    )
    removed = _of_type(events, REMOVE_TOPIC, _REMOVE_TOPIC_SCHEMA).select(
        F.col("r.TopicId").alias("topic_id"), F.col("seq").alias("removed_seq")
    )
    return topics.join(removed, "topic_id", "left")


def partition_events(events: DataFrame) -> DataFrame:
    cols = [
        "topic_id",
        "partition_id",
        "seq",
        "offset",
        "timestamp",
        "record_type",
        "is_create",
        "is_remove",
        "replicas",
        "isr",
        "removing_replicas",
        "adding_replicas",
        "leader",
        "leader_recovery_state",
        "base_leader_epoch",
        "base_partition_epoch",
        "leader_named",
        "sets_placement",
        "directories",
        "eligible_leader_replicas",
        "last_known_elr",
    ]
    common = [
        F.col("r.Replicas").alias("replicas"),
        F.col("r.Isr").alias("isr"),
        F.col("r.RemovingReplicas").alias("removing_replicas"),
        F.col("r.AddingReplicas").alias("adding_replicas"),
        F.col("r.EligibleLeaderReplicas").alias("eligible_leader_replicas"),
        F.col("r.LastKnownElr").alias("last_known_elr"),
    ]
    keys = [
        F.col("r.TopicId").alias("topic_id"),
        F.col("r.PartitionId").alias("partition_id"),
        "seq",
        "offset",
        "timestamp",
        F.col("type_name").alias("record_type"),
    ]
    create = _of_type(events, PARTITION, _PARTITION_SCHEMA).select(
        *keys,
        F.lit(True).alias("is_create"),
        F.lit(False).alias("is_remove"),
        *common,
        F.col("r.Leader").alias("leader"),
        F.coalesce("r.LeaderRecoveryState", F.lit(0)).alias("leader_recovery_state"),
        F.col("r.LeaderEpoch").alias("base_leader_epoch"),
        F.col("r.PartitionEpoch").alias("base_partition_epoch"),
        F.lit(0).alias("leader_named"),
        F.lit(True).alias("sets_placement"),
        F.coalesce("r.Directories", F.array().cast("array<string>")).alias("directories"),
    )
    change = _of_type(events, PARTITION_CHANGE, _PARTITION_FIELDS).select(
        *keys,
        F.lit(False).alias("is_create"),
        F.lit(False).alias("is_remove"),
        *common,
        F.when(F.col("r.Leader") != NO_LEADER_CHANGE, F.col("r.Leader")).alias("leader"),
        F.when(F.col("r.LeaderRecoveryState") >= 0, F.col("r.LeaderRecoveryState")).alias(
            "leader_recovery_state"
        ),
        F.lit(None).cast("int").alias("base_leader_epoch"),
        F.lit(None).cast("int").alias("base_partition_epoch"),
        (F.coalesce("r.Leader", F.lit(NO_LEADER_CHANGE)) != NO_LEADER_CHANGE)
        .cast("int")
        .alias("leader_named"),
        (F.col("r.Replicas").isNotNull() | (F.size("r.Directories") > 0)).alias("sets_placement"),
        F.when(F.size("r.Directories") > 0, F.col("r.Directories")).alias("directories"),
    )
    out = create.select(cols).unionByName(change.select(cols))
    # A removed topic takes every partition it had with it.
    removes = _of_type(events, REMOVE_TOPIC, _REMOVE_TOPIC_SCHEMA).select(
        F.col("r.TopicId").alias("topic_id"),
        "seq",
        "offset",
        "timestamp",
        F.col("type_name").alias("record_type"),
    )
    known = out.select("topic_id", "partition_id").distinct()
    nulls = {c: F.lit(None) for c in cols[8:]}
    nulls["sets_placement"] = F.lit(True)
    removed = removes.join(known, "topic_id").select(
        "topic_id",
        "partition_id",
        "seq",
        "offset",
        "timestamp",
        "record_type",
        F.lit(False).alias("is_create"),
        F.lit(True).alias("is_remove"),
        *[nulls[c].cast(out.schema[c].dataType).alias(c) for c in cols[8:]],
    )
    return out.unionByName(removed.select(cols))


def partitions_table(events: DataFrame) -> DataFrame:
    """The state of every partition after each record that touched it."""
    ev = partition_events(events)
    key = ["topic_id", "partition_id"]
    by_part = Window.partitionBy(*key).orderBy("seq")
    ev = ev.withColumn("creation", F.sum(F.col("is_create").cast("int")).over(by_part.rowsBetween(*_RUNNING)))
    w = Window.partitionBy(*key, "creation").orderBy("seq").rowsBetween(*_RUNNING)
    live = ~F.col("is_remove")  # a removed partition has no state left

    def carried(c: str) -> Column:
        return F.when(live, F.last(c, ignorenulls=True).over(w))

    replicas, directories = carried("replicas"), carried("directories")
    changes = F.sum((~F.col("is_create") & live).cast("int")).over(w)
    leader_epoch = F.first("base_leader_epoch", ignorenulls=True).over(w) + F.sum("leader_named").over(w)
    partition_epoch = F.first("base_partition_epoch", ignorenulls=True).over(w) + changes
    # Missing or empty Directories mean every replica is MIGRATING (PartitionRegistration's default).
    directories = F.when(
        directories.isNull() | (F.size(directories) == 0),
        F.when(replicas.isNotNull(), F.array_repeat(F.lit(MIGRATING), F.size(replicas))),
    ).otherwise(directories)
    end_ts = F.lead("timestamp").over(by_part)
    df = ev.select(
        *key,
        F.row_number().over(by_part).alias("state_index"),
        "seq",
        "offset",
        "timestamp",
        F.timestamp_millis("timestamp").alias("time"),
        "record_type",
        replicas.alias("replicas"),
        carried("isr").alias("isr"),
        carried("leader").alias("leader"),
        F.when(live, leader_epoch).alias("leader_epoch"),
        F.when(live, partition_epoch).alias("partition_epoch"),
        directories.alias("directories"),
        carried("removing_replicas").alias("removing_replicas"),
        carried("adding_replicas").alias("adding_replicas"),
        carried("leader_recovery_state").alias("leader_recovery_state"),
        carried("eligible_leader_replicas").alias("eligible_leader_replicas"),
        carried("last_known_elr").alias("last_known_elr"),
        F.col("is_remove").alias("deleted"),
        # Which records can start a new replica_dirs or leadership interval (the others only
        # move the ISR): those tables replay these rows alone.
        F.col("sets_placement"),
        (F.col("is_create") | F.col("is_remove") | (F.col("leader_named") == 1)).alias("sets_leader"),
        F.lead("seq").over(by_part).alias("end_seq"),
        F.lead("offset").over(by_part).alias("end_offset"),
        end_ts.alias("end_timestamp"),
        F.timestamp_millis(end_ts).alias("end_time"),
    )
    topics = topics_table(events).select("topic_id", "topic").dropDuplicates(["topic_id"])
    return df.join(F.broadcast(topics), "topic_id", "left").select("topic", *df.columns)


def _change_points(partitions: DataFrame, flag: str) -> DataFrame:
    """The partition states opened by records with `flag`, each lasting until the next such record."""
    w = Window.partitionBy("topic_id", "partition_id").orderBy("seq")
    ends = {"state_index", "end_seq", "end_offset", "end_timestamp", "end_time"}
    return partitions.filter(F.col(flag)).select(
        *[c for c in partitions.columns if c not in ends],
        F.row_number().over(w).alias("state_index"),
        F.lead("seq").over(w).alias("end_seq"),
        F.lead("offset").over(w).alias("end_offset"),
        F.lead("timestamp").over(w).alias("end_timestamp"),
    )


def _islands(df: DataFrame, key: list[str], value: str, first: tuple[str, ...] = ()) -> DataFrame:
    """Group consecutive states (by state_index) of a key with the same `value` into intervals; the
    columns in `first` are taken from the interval's first state (as `start_<name>`)."""
    w = Window.partitionBy(*key).orderBy("state_index")
    prev_idx = F.lag("state_index").over(w)
    prev_val = F.lag(value).over(w)
    new = prev_idx.isNull() | (prev_idx != F.col("state_index") - 1) | ~prev_val.eqNullSafe(F.col(value))
    df = df.withColumn("_new", new.cast("int"))
    df = df.withColumn("_island", F.sum("_new").over(w.rowsBetween(*_RUNNING)))
    return (
        df.groupBy(*key, "_island", value)
        .agg(
            F.min("seq").alias("start_seq"),
            F.min_by("offset", "seq").alias("start_offset"),
            F.min_by("timestamp", "seq").alias("start_timestamp"),
            F.max_by("end_seq", "state_index").alias("end_seq"),
            F.max_by("end_offset", "state_index").alias("end_offset"),
            F.max_by("end_timestamp", "state_index").alias("end_timestamp"),
            F.count("*").alias("records"),
            *[F.min_by(c, "seq").alias(f"start_{c}") for c in first],
        )
        .drop("_island")
    )


def replica_dirs_table(partitions: DataFrame) -> DataFrame:
    """Which directory held each replica, as intervals: a move or a reassignment ends one."""
    points = _change_points(partitions, "sets_placement")
    live = points.filter(~F.col("deleted") & F.col("replicas").isNotNull())
    exploded = (
        live.select(
            "topic",
            "topic_id",
            "partition_id",
            "state_index",
            "seq",
            "offset",
            "timestamp",
            "end_seq",
            "end_offset",
            "end_timestamp",
            F.posexplode(F.arrays_zip(F.col("replicas").alias("b"), F.col("directories").alias("d"))).alias(
                "pos", "z"
            ),
        )
        .select("*", F.col("z.b").alias("broker_id"), F.col("z.d").alias("directory"))
        .drop("z", "pos")
    )
    df = _islands(exploded, ["topic", "topic_id", "partition_id", "broker_id"], "directory")
    df = df.withColumn("current", F.col("end_seq").isNull())
    df = _with_time(df, "start_timestamp", "end_timestamp")
    return df.select(
        "topic",
        "topic_id",
        "partition_id",
        "broker_id",
        "directory",
        "start_seq",
        "start_offset",
        "start_timestamp",
        "start_time",
        "end_seq",
        "end_offset",
        "end_timestamp",
        "end_time",
        "records",
        "current",
    )


def leadership_table(partitions: DataFrame, log_end_timestamp: int) -> DataFrame:
    """Per partition, intervals with a leader and without one (leader -1); removal ends the last.

    `first_leader_wait` marks a leaderless interval that a PartitionRecord of the log (not of a
    snapshot) opened: a partition created without a leader (as the controller creates them until a
    broker has placed its replica), waiting for its first one.
    """
    df = _change_points(partitions, "sets_leader").withColumn(
        "leadership",
        F.when(F.col("deleted"), "deleted")
        .when(F.col("leader") >= 0, "leader")
        .when(F.col("leader") == NO_LEADER, "leaderless")
        .otherwise("unknown"),
    )
    df = _islands(df, ["topic", "topic_id", "partition_id"], "leadership", first=("record_type",)).filter(
        F.col("leadership") != "deleted"
    )
    df = df.withColumn("has_leader", F.col("leadership") == "leader").withColumn(
        "open", F.col("end_seq").isNull()
    )
    df = df.withColumn(
        "first_leader_wait",
        (F.col("leadership") == "leaderless")
        & (F.col("start_record_type") == "PartitionRecord")
        & (F.col("start_seq") >= 0),
    )
    df = df.withColumn(
        "duration_ms", F.coalesce("end_timestamp", F.lit(log_end_timestamp)) - F.col("start_timestamp")
    )
    df = _with_time(df, "start_timestamp", "end_timestamp")
    return df.select(
        "topic",
        "topic_id",
        "partition_id",
        "leadership",
        "has_leader",
        "start_seq",
        "start_offset",
        "start_timestamp",
        "start_time",
        "end_seq",
        "end_offset",
        "end_timestamp",
        "end_time",
        "open",
        "duration_ms",
        "records",
        "first_leader_wait",
    )


def min_isr_configs(records: DataFrame, excluded: list[tuple[int, int | None]]) -> DataFrame:
    """Every ConfigRecord that sets (or, with a null value, removes) min.insync.replicas, in log order:
    on a topic (resource type 2, by name) or a broker (type 4; the empty name is the cluster default)."""
    cfg = metadata_events(records.filter(F.col("type") == CONFIG), excluded)
    return (
        _of_type(cfg, CONFIG, "ResourceType int, ResourceName string, Name string, Value string")
        .filter(F.col("r.Name") == MIN_ISR)
        .select(
            "seq",
            "offset",
            "timestamp",
            F.col("r.ResourceType").alias("resource_type"),
            F.col("r.ResourceName").alias("resource_name"),
            F.col("r.Value").alias("value"),
        )
        .orderBy("seq")
    )


# ---------------------------------------------------------------------------------------------- migration


def migration_table(records: DataFrame, excluded: list[tuple[int, int | None]]) -> DataFrame:
    """A ZooKeeper → KRaft migration as the log tells it (KIP-866): every ZkMigrationStateRecord, every
    metadata transaction marker (the copy is one), and every broker and controller registration saying
    whether it came from a ZooKeeper broker in migration mode or a KRaft broker, and whether the
    controller was ready to migrate. Aborted transactions' markers stay in: a copy cut by a failover
    is part of the story; a state written inside one never took effect, so it is left out."""
    committed = metadata_events(records, excluded)
    return _with_time(
        _state_events(committed)
        .unionByName(_marker_events(records))
        .unionByName(_broker_registrations(committed))
        .unionByName(_controller_registrations(committed)),
        "timestamp",
    ).orderBy("seq")


def _state_events(records: DataFrame) -> DataFrame:
    states = F.create_map(*[x for k, v in ZK_MIGRATION_STATES.items() for x in (F.lit(k), F.lit(v))])
    return _of_type(records, ZK_MIGRATION_STATE, "ZkMigrationState int").select(
        "seq",
        "offset",
        "timestamp",
        F.lit("state").alias("event"),
        F.lit(None).cast("int").alias("node_id"),
        F.coalesce(states[F.col("r.ZkMigrationState")], F.col("r.ZkMigrationState").cast("string")).alias(
            "detail"
        ),
    )


def _marker_events(records: DataFrame) -> DataFrame:
    return records.filter(F.col("type").isin(*TRANSACTION_MARKERS)).select(
        "seq",
        "offset",
        "timestamp",
        F.when(F.col("type") == BEGIN_TRANSACTION, "transaction begin")
        .when(F.col("type") == END_TRANSACTION, "transaction end")
        .otherwise("transaction abort")
        .alias("event"),
        F.lit(None).cast("int").alias("node_id"),
        F.coalesce(
            F.get_json_object("record", "$.Name"), F.get_json_object("record", "$.Reason"), F.lit("")
        ).alias("detail"),
    )


def _broker_registrations(records: DataFrame) -> DataFrame:
    return _of_type(records, REGISTER_BROKER, _REGISTER_SCHEMA).select(
        "seq",
        "offset",
        "timestamp",
        F.lit("broker registered").alias("event"),
        F.col("r.BrokerId").alias("node_id"),
        F.when(F.coalesce("r.IsMigratingZkBroker", F.lit(False)), ZK_BROKER)
        .otherwise(KRAFT_BROKER)
        .alias("detail"),
    )


def _controller_registrations(records: DataFrame) -> DataFrame:
    # The migration waits for every quorum node to register with ZkMigrationReady (MV >= 3.7-IV0).
    return _of_type(records, REGISTER_CONTROLLER, "ControllerId int, ZkMigrationReady boolean").select(
        "seq",
        "offset",
        "timestamp",
        F.lit("controller registered").alias("event"),
        F.col("r.ControllerId").alias("node_id"),
        F.when(F.coalesce("r.ZkMigrationReady", F.lit(False)), CONTROLLER_READY)
        .otherwise(CONTROLLER_NOT_READY)
        .alias("detail"),
    )


def copy_transactions_table(records: DataFrame) -> DataFrame:
    """Every "ZK Migration" transaction: where it began and ended, whether it was committed, aborted or
    is still open, and how many records of each type it held (aborted ones too: they were written)."""
    copies = _copy_bounds(records)
    inside = records.filter(~F.col("control") & ~F.col("type").isin(*TRANSACTION_MARKERS)).select(
        "seq", "type_name"
    )
    bounds = F.broadcast(copies.select("begin_seq", "bound_seq"))
    held = inside.join(
        bounds,
        (inside.seq > bounds.begin_seq) & (bounds.bound_seq.isNull() | (inside.seq < bounds.bound_seq)),
    )
    per_type = held.groupBy("begin_seq", "type_name").agg(F.count("*").alias("n"))
    totals = per_type.groupBy("begin_seq").agg(
        F.sum("n").alias("records"),
        F.map_from_entries(F.sort_array(F.collect_list(F.struct("type_name", "n")))).alias("record_types"),
    )
    out = (
        copies.join(totals, "begin_seq", "left")
        .select(
            *copies.columns,
            F.coalesce("records", F.lit(0)).alias("records"),
            F.coalesce("record_types", F.create_map().cast("map<string,bigint>")).alias("record_types"),
            (F.col("end_timestamp") - F.col("begin_timestamp")).alias("duration_ms"),
        )
        .drop("bound_seq")
    )
    return _with_time(out, "begin_timestamp", "end_timestamp").orderBy("begin_seq")


def _copy_bounds(records: DataFrame) -> DataFrame:
    """Each copy's begin marker and the marker after it, which ends it (or, another Begin, cuts it)."""
    markers = records.filter(F.col("type").isin(*TRANSACTION_MARKERS)).select(
        "seq",
        "offset",
        "timestamp",
        "type",
        F.get_json_object("record", "$.Name").alias("name"),
        F.get_json_object("record", "$.Reason").alias("reason"),
    )
    # One window over the markers alone: a handful of rows even in a long log.
    w = Window.orderBy("seq")
    nxt = {c: F.lead(c).over(w) for c in ("seq", "offset", "timestamp", "type", "reason")}
    closes = nxt["type"].isin(END_TRANSACTION, ABORT_TRANSACTION)
    outcome = (
        F.when(nxt["type"] == END_TRANSACTION, "committed")
        .when(nxt["type"] == ABORT_TRANSACTION, "aborted")
        .when(nxt["type"].isNull(), "open")
        .otherwise("unterminated")
    )
    return (
        markers.select(
            "type",
            "name",
            F.col("seq").alias("begin_seq"),
            F.col("offset").alias("begin_offset"),
            F.col("timestamp").alias("begin_timestamp"),
            nxt["seq"].alias("bound_seq"),
            outcome.alias("outcome"),
            F.when(closes, nxt["offset"]).alias("end_offset"),
            F.when(closes, nxt["timestamp"]).alias("end_timestamp"),
            F.when(nxt["type"] == ABORT_TRANSACTION, nxt["reason"]).alias("abort_reason"),
        )
        .filter((F.col("type") == BEGIN_TRANSACTION) & (F.col("name") == COPY_TRANSACTION))
        .drop("type", "name")
    )
