"""Loading what the controller starts from: storage, bootstrap metadata, the metadata log and its replay.

`load_metadata` is blocking and runs once, on the metadata log's thread, before anything else of the
process exists. Every problem an operator can fix leaves it as one StartupError line; the log it
opened is closed again if its replay fails, so a failed load leaves nothing to tear down.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog

from controller.errors import StartupError

if TYPE_CHECKING:
    from controller.core import QuorumControllerCore
    from kraftpy.config import KafkaConfig
    from kraftpy.image import MetadataDelta
    from kraftpy.metalog.files import SnapshotId
    from kraftpy.metalog.log import MetadataLog

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class LoadedMetadata:
    """The replayed state: `core` and `delta` hold every record of `log`, latest snapshot first."""

    cluster_id: str
    core: QuorumControllerCore
    delta: MetadataDelta
    log: MetadataLog
    bootstrap_records: list[Any]
    metadata_version_level: int
    replayed: int
    latest_snapshot: SnapshotId | None


def load_metadata(cfg: KafkaConfig) -> LoadedMetadata:
    from kraftpy.image import MetadataDelta, MetadataImage
    from kraftpy.log.errors import LogError
    from kraftpy.metalog.log import MetadataLog, MetadataLogConfig
    from kraftpy.storage import EnsembleError, MetaPropertiesError, initialize_log_dirs

    try:
        dirs = initialize_log_dirs(cfg)
    except (EnsembleError, MetaPropertiesError, OSError) as e:
        raise StartupError(_storage_problem(cfg, e)) from None
    bootstrap_records, mv_level = _read_bootstrap(cfg.metadata_log_dir_path)
    core = new_core(cfg, dirs.cluster_id)
    delta = MetadataDelta(MetadataImage.EMPTY)
    try:
        mlog = MetadataLog.open(cfg.metadata_log_dir_path, MetadataLogConfig.from_server_config(cfg))
    except (LogError, OSError) as e:
        raise StartupError(f"cannot open the metadata log in {cfg.metadata_log_dir_path}: {e}") from None
    _settle_damage(cfg, mlog)
    try:
        # Only the snapshot: what the log holds after it is applied as the quorum commits it.
        replayed = replay_committed(mlog, core, delta, snapshot_end(mlog))
    except Exception as e:
        try:
            mlog.close()
        except Exception:
            log.exception("closing the metadata log failed")
        raise StartupError(f"cannot replay the metadata log in {mlog.dir}: {e}") from None
    return LoadedMetadata(
        cluster_id=dirs.cluster_id,
        core=core,
        delta=delta,
        log=mlog,
        bootstrap_records=bootstrap_records,
        metadata_version_level=mv_level,
        replayed=replayed,
        latest_snapshot=mlog.latest_snapshot(),
    )


def _settle_damage(cfg: KafkaConfig, mlog: MetadataLog) -> None:
    """A damaged last batch was cut (now or at an earlier start). Other voters hold its records, and
    Raft fetches them again; a lone voter was their only copy, so it does not start as if the
    operations they acknowledged had never happened."""
    from kraftpy.metalog.log import DAMAGE_MARKER

    damage = mlog.recovery.damage
    if damage is None:
        return
    if {v.id for v in cfg.quorum_voters} - {cfg.node_id}:
        log.warning(
            "the metadata log's damaged last batch was cut; this voter fetches its records from the quorum again",
            **{k: v for k, v in damage.items() if k in ("path", "position", "log_end_offset")},
        )
        mlog.settle_damage()
        return
    marker = mlog.dir / DAMAGE_MARKER
    try:
        mlog.close()
    except Exception:
        log.exception("closing the metadata log failed")
    raise StartupError(
        f"the metadata log's last batch ({damage.get('path')} at position {damage.get('position')}: "
        f"{damage.get('reason')}) was cut at offset {damage.get('log_end_offset')}; the operations it held may "
        "have been acknowledged, and this controller is the only voter, so no copy is left. Restore the metadata "
        f"log from a backup, or delete {marker} to start without them."
    )


def log_loaded(loaded: LoadedMetadata) -> None:
    """What the load found, logged from the event loop (the load itself ran on the log's thread)."""
    mlog = loaded.log
    # A cut tail was logged by the log itself as it opened (once, with file and position).
    log.info(
        "metadata log replayed",
        records=loaded.replayed,
        log_start_offset=mlog.log_start_offset,
        log_end_offset=mlog.log_end_offset,
        latest_snapshot=str(loaded.latest_snapshot),
    )


def _storage_problem(cfg: KafkaConfig, e: BaseException) -> str:
    from kraftpy.storage import META_PROPERTIES

    metadata_dir = cfg.metadata_log_dir_path
    if not (Path(metadata_dir) / META_PROPERTIES).exists():
        source = cfg.source or "CONFIG"
        return (
            f"metadata.log.dir {metadata_dir} is not formatted ({e}); "
            f"run `kraftpy storage format -c {source} -t CLUSTER_ID` first"
        )
    return f"storage of {metadata_dir}: {e}"


def _read_bootstrap(metadata_dir: str) -> tuple[list[Any], int]:
    from kraftpy.storage.bootstrap import BootstrapError, bootstrap_records, read_bootstrap_checkpoint
    from kraftpy.storage.metadata_version import LATEST_PRODUCTION_LEVEL

    try:
        boot = read_bootstrap_checkpoint(metadata_dir)
    except FileNotFoundError:
        # BootstrapDirectory's fallback when the file is missing: the latest production version.
        log.warning("no bootstrap.checkpoint; using the latest production metadata.version", dir=metadata_dir)
        return bootstrap_records(LATEST_PRODUCTION_LEVEL), LATEST_PRODUCTION_LEVEL
    except BootstrapError as e:
        raise StartupError(str(e)) from None
    return list(boot.records), boot.metadata_version_level


def new_core(cfg: KafkaConfig, cluster_id: str) -> QuorumControllerCore:
    from controller.core import ControllerConfig, QuorumControllerCore

    return QuorumControllerCore(
        ControllerConfig(
            node_id=cfg.node_id,
            cluster_id=cluster_id,
            broker_session_timeout_ms=cfg.broker_session_timeout_ms,
            default_num_partitions=cfg.num_partitions,
            default_replication_factor=cfg.default_replication_factor,
            unclean_leader_election_enable=cfg.unclean_leader_election_enable,
            max_partitions_per_request=cfg.kraftpy_max_partitions_per_request,
            max_partitions=cfg.kraftpy_max_partitions,
            zk_migration_enabled=cfg.zookeeper_metadata_migration_enable,
        )
    )


def snapshot_end(mlog: MetadataLog) -> int:
    latest = mlog.latest_snapshot()
    return latest.offset if latest is not None else 0


def replay_committed(
    mlog: MetadataLog, core: QuorumControllerCore, delta: MetadataDelta | None, end_offset: int
) -> int:
    """Replay the latest snapshot, then the log's records below `end_offset` (the committed ones)."""
    from kraftpy import heap
    from protocol.transport.offload import collector_paused

    n = 0
    with collector_paused():
        # Batch by batch, without an entry per record: a restart from a 2,000,000-partition
        # snapshot replays 2,000,000 records. Record by record into both: the delta's replay of a
        # PartitionRecord shares the registration the core built for it just before.
        for offset, step, records, batch in mlog.entry_runs(end_offset=end_offset):
            epoch, timestamp_ms = batch.epoch, batch.timestamp_ms
            for record in records:
                core.replay(record, offset)
                if delta is not None:
                    delta.replay(record, offset, epoch=epoch, timestamp_ms=timestamp_ms)
                offset += step
            n += len(records)
        heap.after_load(n)
    return n


def rebuild(cfg: KafkaConfig, cluster_id: str, mlog: MetadataLog, end_offset: int) -> QuorumControllerCore:
    """On the log's thread: the controller state of the committed prefix, for a leader whose
    uncommitted records may be cut (Kafka reverts to its last committed in-memory snapshot)."""
    core = new_core(cfg, cluster_id)
    replay_committed(mlog, core, None, end_offset)
    return core


def reload_snapshot(
    cfg: KafkaConfig, cluster_id: str, mlog: MetadataLog
) -> tuple[QuorumControllerCore, MetadataDelta]:
    """On the log's thread: the state of a snapshot just installed from the leader."""
    from kraftpy.image import MetadataDelta, MetadataImage

    core = new_core(cfg, cluster_id)
    delta = MetadataDelta(MetadataImage.EMPTY)
    replay_committed(mlog, core, delta, snapshot_end(mlog))
    return core, delta
