"""The Spark job over a KRaft metadata log: Parquet tables, analyses and an HTML report.

`run_analysis(logdir, out, master=None, skip_corrupt=False) -> Summary` is the entry point; the
`kraftpy analyze` command and `spark-submit tools/analytics/job.py` both call it.

Tables written under `out/` (Parquet; `seq` orders records, `offset` is the log offset):
- records: one row per record: seq, offset, batch_base_offset, timestamp, time, leader_epoch,
  control, type (metadata apiKey), type_name, version, record (Kafka's JSON), file, source, ingest;
- topics; brokers (each registration state: epoch, incarnation, log_dirs, fenced,
  in_controlled_shutdown, state, and its end); partitions (state after every change: replicas, isr,
  leader, leader_epoch, partition_epoch, directories, ...); replica_dirs (directory of each replica
  over time); dir_failures (broker, directory, when it went offline, the record group (batch) that
  carries it, when it was back); leadership (intervals with and without a leader);
- leaderless (totals per partition; a new partition's short wait for its first leader left out, see
  first_leader_waits), recovery and recovery_partitions (per failure and per partition hit: leaders
  lost, counted from before the failure's batch, time until every one had a leader again, ISR
  shrinks, time until back in sync, time under min.insync.replicas), failure_events (each failure's
  timeline: leader moves, ISR shrinks and restorations, the broker's fencing and restart),
  failure_leaders (leaders per broker before, after and once recovered), broker_restarts,
  dir_balance (replicas per dir per broker), record_mix (records per type per time bucket),
  timeline (offline replicas, leaderless partitions);
- migration (ZkMigrationState changes, transaction markers, broker and controller registrations),
  migrating_replicas (per broker, replicas copied as MIGRATING and how many still are), and, only for
  a log that shows a ZooKeeper → KRaft migration, migration_copies (each "ZK Migration" transaction:
  bounds, outcome, records by type) and migrating_timeline (each broker's MIGRATING replicas over the log);
- summary.json, report.html, and _checkpoint.json (what was ingested, for incremental reruns).

Dir paths and `bN/dM` labels come from `--dirs FILE` or the `kraftpy cluster` work dir above the log
(clusterdir.py); the metadata log itself knows directory ids only.
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
