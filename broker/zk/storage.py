"""The log dirs of a ZooKeeper-mode broker at startup (KafkaServer's checks before it serves).

ZooKeeper mode keeps `meta.properties` at version 0: `broker.id` and `cluster.id`, written into every
dir that has none (a new or emptied dir), no `directory.id` needed. The broker still tells its dirs
apart by id inside the process: a dir whose file carries a `directory.id` keeps it, the others get
one for this run only, never written, so nothing on disk changes meaning for a later migration.

A dir that cannot be read, written or probed is offline from the start (KIP-112); a file that names
another cluster or broker, or a KRaft (version 1) file, stops the broker with one line saying so.
"""

from __future__ import annotations

import os
import shutil

import structlog

from broker.startup import BrokerDirs, StartupError, probe_dir
from kraftpy.config import KafkaConfig
from kraftpy.storage import MetaProperties, MetaPropertiesError, MetaPropertiesVersion
from kraftpy.storage.meta_properties import read_meta_properties, write_meta_properties
from kraftpy.storage.startup import METADATA_TOPIC_DIR
from protocol.uuid import Uuid

log = structlog.get_logger("broker.startup")


def load_zk_broker_dirs(cfg: KafkaConfig, cluster_id: str, *, migrating: bool = False) -> BrokerDirs:
    """`migrating`: the broker is configured for a migration to KRaft, so each dir gets a
    `directory.id` written into its (still version 0) meta.properties, and any local
    `__cluster_metadata-0` is deleted (KIP-858; field bugs 23 and 27)."""
    broker_id = cfg.node_id
    online: dict[str, Uuid] = {}
    offline: dict[str, str] = {}
    for path in cfg.log_dir_list:
        try:
            dir_id = _load_dir(path, broker_id, cluster_id, persist_id=migrating)
            if migrating:
                _delete_local_metadata_log(path)
        except OSError as e:
            offline[path] = f"I/O error: {e.strerror or e}"
            continue
        reason = probe_dir(path, dir_id)
        if reason is not None:
            offline[path] = reason
        else:
            online[path] = dir_id
    if migrating and cfg.metadata_log_dir_path not in cfg.log_dir_list:
        try:
            _delete_local_metadata_log(cfg.metadata_log_dir_path)
        except OSError as e:
            raise StartupError(
                f"cannot delete the local metadata log in {cfg.metadata_log_dir_path}: {e}"
            ) from None
    if migrating and offline:
        # As a dir failing later does: the KRaft controller learns of dirs only from the registration.
        path, reason = sorted(offline.items())[0]
        raise StartupError(
            f"log dir {path} is unusable ({reason}); a broker in migration mode stops on any dir failure"
        )
    for path, reason in sorted(offline.items()):
        log.error("log dir unusable at startup; it stays offline", path=path, reason=reason)
    if not online:
        details = "; ".join(f"{d}: {offline.get(d, 'unknown')}" for d in cfg.log_dir_list)
        raise StartupError(f"no usable log dir among log.dirs ({details})")
    first = next(iter(online))
    return BrokerDirs(
        cluster_id=cluster_id,
        node_id=broker_id,
        log_dirs=online,
        offline=offline,
        metadata_dir=first,
        metadata_dir_id=online[first],
        multi_dir=len(cfg.log_dir_list) > 1,
    )


def _load_dir(path: str, broker_id: int, cluster_id: str, *, persist_id: bool = False) -> Uuid:
    os.makedirs(path, exist_ok=True)
    try:
        meta = read_meta_properties(path)
    except FileNotFoundError:
        new_id = Uuid.random()
        write_meta_properties(
            path,
            MetaProperties(
                MetaPropertiesVersion.V0,
                cluster_id=cluster_id,
                node_id=broker_id,
                directory_id=new_id if persist_id else None,
            ),
        )
        return new_id
    except MetaPropertiesError as e:
        raise StartupError(f"{path}/meta.properties: {e}") from None
    if meta.version is not MetaPropertiesVersion.V0:
        raise StartupError(
            f"{path}/meta.properties is version {int(meta.version)} (a KRaft node's); "
            "a ZooKeeper-mode broker needs version 0"
        )
    if meta.cluster_id is not None and meta.cluster_id != cluster_id:
        raise StartupError(
            f"The Cluster ID {cluster_id} doesn't match stored clusterId Some({meta.cluster_id}) in "
            f"{path}/meta.properties. The broker is trying to join the wrong cluster. "
            "Configured zookeeper.connect may be wrong."
        )
    if meta.node_id is not None and meta.node_id != broker_id:
        raise StartupError(
            f"Configured broker.id {broker_id} doesn't match stored broker.id Some({meta.node_id}) in "
            f"{path}/meta.properties. If you moved your data, make sure your configured broker.id matches."
        )
    dir_id = meta.directory_id
    if dir_id is None and persist_id:
        dir_id = Uuid.random()
        log.info(
            "log dir gets a directory.id for the migration to KRaft", path=path, directory_id=str(dir_id)
        )
    if meta.cluster_id is None or meta.node_id is None or dir_id != meta.directory_id:
        write_meta_properties(path, MetaProperties(MetaPropertiesVersion.V0, cluster_id, broker_id, dir_id))
    return dir_id or Uuid.random()


def _delete_local_metadata_log(path: str) -> None:
    """A migrating ZooKeeper broker starts without a local metadata log, wherever an earlier
    attempt left one, so a migration rolled back and tried again replays from the quorum."""
    target = os.path.join(path, METADATA_TOPIC_DIR)
    if os.path.isdir(target):
        shutil.rmtree(target)
        log.info("deleted the local metadata log before the migration", path=target)
