"""The Spark job over a KRaft metadata log: Parquet tables, analyses and an HTML report.

`run_analysis(logdir, out, master=None, skip_corrupt=False) -> Summary` is the entry point; the
`kraftpy analyze` command and `spark-submit tools/analytics/job.py` both call it.

Tables written under `out/` (Parquet; `seq` orders records, `offset` is the log offset):
- records: one row per record: seq, offset, batch_base_offset, timestamp, time, leader_epoch,
  control, type (metadata apiKey), type_name, version, record (Kafka's JSON), file, source, ingest;
- topics; brokers (each registration state: epoch, incarnation, log_dirs, fenced,
  in_controlled_shutdown, state, and its end); partitions (state after every change: replicas, isr,
  leader, leader_epoch, partition_epoch, directories, ...); replica_dirs (directory of each replica
  over time); dir_failures (broker, directory, when it went offline, when it was back);
  leadership (intervals with and without a leader);
- leaderless (totals per partition), recovery and recovery_partitions (time until every partition
  with a replica in a failed dir had a leader again), dir_balance (replicas per dir per broker),
  record_mix (records per type per time bucket), timeline (offline replicas, leaderless partitions);
- migration (ZkMigrationState changes, transaction markers, broker and controller registrations),
  migrating_replicas (per broker, replicas copied as MIGRATING and how many still are), and, only for
  a log that shows a ZooKeeper → KRaft migration, migration_copies (each "ZK Migration" transaction:
  bounds, outcome, records by type) and migrating_timeline (each broker's MIGRATING replicas over the log);
- summary.json, report.html, and _checkpoint.json (what was ingested, for incremental reruns).
"""

from tools.analytics.errors import AnalysisError, CorruptBatchesError, CorruptSpot, LogDirError
from tools.analytics.job import run_analysis
from tools.analytics.summary import DirFailure, Summary

__all__ = [
    "AnalysisError",
    "CorruptBatchesError",
    "CorruptSpot",
    "DirFailure",
    "LogDirError",
    "Summary",
    "run_analysis",
]
