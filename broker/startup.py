"""What the broker checks about its directories before it does anything else.

Runs before the event loop starts (nothing else could proceed meanwhile anyway):

1. `kraftpy.storage.initialize_log_dirs`: meta.properties of every dir, cluster and node ids agree,
   no duplicate or reserved directory.id, a missing directory.id generated;
2. every dir that loaded is probed (a small write + fsync): KIP-112 "broker bootstraps with bad
   log directories" – a dir that cannot be read or written now is offline from the start and is
   not registered;
3. the metadata.log.dir must be usable and at least one log dir must be: otherwise StartupError,
   naming the dirs and why.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import structlog

from broker.storage.log_dir import LogDir
from kraftpy.config import KafkaConfig
from kraftpy.storage import EnsembleError, MetaPropertiesEnsemble, MetaPropertiesError, initialize_log_dirs
from protocol.uuid import Uuid

log = structlog.get_logger("broker.startup")


class StartupError(Exception):
    """The broker cannot start; the message is one line an operator can act on."""


@dataclass(frozen=True)
class BrokerDirs:
    cluster_id: str
    node_id: int
    log_dirs: dict[str, Uuid]
    """Online log dirs (from log.dirs), path -> directory.id, in config order."""
    offline: dict[str, str] = field(default_factory=dict)
    """Log dirs offline from the start, path -> reason."""
    metadata_dir: str = ""
    metadata_dir_id: Uuid = Uuid.ZERO
    multi_dir: bool = False

    @property
    def metadata_is_log_dir(self) -> bool:
        return self.metadata_dir in self.log_dirs

    def registered_ids(self) -> list[Uuid]:
        return sorted(self.log_dirs.values())


def probe_dir(path: str, dir_id: Uuid) -> str | None:
    ld = LogDir(path, dir_id, default_timeout=None)
    try:
        ld.probe()
        return None
    except OSError as e:
        return f"I/O error probing the dir: {e.strerror or e}"
    finally:
        ld.close()


def load_broker_dirs(cfg: KafkaConfig) -> BrokerDirs:
    metadata_dir = cfg.metadata_log_dir_path
    try:
        node = initialize_log_dirs(cfg)
    except (EnsembleError, MetaPropertiesError) as e:
        raise StartupError(f"{e}{_dir_details(cfg)}") from None
    offline: dict[str, str] = {d: r for d, r in node.offline.items() if d in cfg.log_dir_list}
    probed: dict[str, str] = {}
    for path, dir_id in sorted(node.online.items()):
        reason = probe_dir(path, dir_id)
        if reason is not None:
            probed[path] = reason
            log.error(
                "log dir unusable at startup; it stays offline and is not registered",
                path=path,
                reason=reason,
            )
    if metadata_dir in probed:
        raise StartupError(f"metadata.log.dir {metadata_dir} is unusable: {probed[metadata_dir]}")
    if metadata_dir not in node.online:
        raise StartupError(
            f"metadata.log.dir {metadata_dir} is unusable: {node.offline.get(metadata_dir, 'not formatted')}"
        )
    offline.update({d: r for d, r in probed.items() if d in cfg.log_dir_list})
    for path, reason in sorted(node.offline.items()):
        if path in cfg.log_dir_list:
            log.error(
                "log dir unusable at startup; it stays offline and is not registered",
                path=path,
                reason=reason,
            )
    online = {d: node.online[d] for d in cfg.log_dir_list if d in node.online and d not in offline}
    if not online:
        details = "; ".join(f"{d}: {offline.get(d, 'unknown')}" for d in cfg.log_dir_list)
        raise StartupError(f"no usable log dir among log.dirs ({details})")
    return BrokerDirs(
        cluster_id=node.cluster_id,
        node_id=node.node_id,
        log_dirs=online,
        offline=offline,
        metadata_dir=metadata_dir,
        metadata_dir_id=node.online[metadata_dir],
        multi_dir=len(cfg.log_dir_list) > 1,
    )


def _dir_details(cfg: KafkaConfig) -> str:
    """Why each dir could not be loaded, for messages that do not say which dir."""
    try:
        ensemble = MetaPropertiesEnsemble.load(cfg.all_dirs, cfg.metadata_log_dir_path)
    except Exception:
        return ""
    parts = [f"{d}: {r}" for d, r in sorted(ensemble.error_log_dirs.items())]
    parts += [f"{d}: not formatted" for d in sorted(ensemble.empty_log_dirs)]
    return f" ({'; '.join(parts)})" if parts else ""
