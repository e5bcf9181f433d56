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

import structlog

from broker.startup import BrokerDirs, StartupError, probe_dir
from kraftpy.config import KafkaConfig
from kraftpy.storage import MetaProperties, MetaPropertiesError, MetaPropertiesVersion
from kraftpy.storage.meta_properties import read_meta_properties, write_meta_properties
from protocol.uuid import Uuid

log = structlog.get_logger("broker.startup")


def load_zk_broker_dirs(cfg: KafkaConfig, cluster_id: str) -> BrokerDirs:
    broker_id = cfg.node_id
    online: dict[str, Uuid] = {}
    offline: dict[str, str] = {}
    for path in cfg.log_dir_list:
        try:
            dir_id = _load_dir(path, broker_id, cluster_id)
        except OSError as e:
            offline[path] = f"I/O error: {e.strerror or e}"
            continue
        reason = probe_dir(path, dir_id)
        if reason is not None:
            offline[path] = reason
        else:
            online[path] = dir_id
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


def _load_dir(path: str, broker_id: int, cluster_id: str) -> Uuid:
    os.makedirs(path, exist_ok=True)
    try:
        meta = read_meta_properties(path)
    except FileNotFoundError:
        write_meta_properties(
            path, MetaProperties(MetaPropertiesVersion.V0, cluster_id=cluster_id, node_id=broker_id)
        )
        return Uuid.random()
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
    if meta.cluster_id is None or meta.node_id is None:
        write_meta_properties(
            path, MetaProperties(MetaPropertiesVersion.V0, cluster_id, broker_id, meta.directory_id)
        )
    return meta.directory_id or Uuid.random()
