"""What a KRaft process does with its directories before anything else (KafkaRaftServer.initializeLogDirs).

The result tells the caller which dirs are online (with their directory.id) and which are offline,
with the reason; deciding what an offline dir means is the caller's job.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kraftpy.config import KafkaConfig
from kraftpy.storage.ensemble import EnsembleError, MetaPropertiesEnsemble, VerificationFlag, write_all
from protocol.uuid import Uuid

METADATA_TOPIC_DIR = "__cluster_metadata-0"


@dataclass(frozen=True)
class NodeDirs:
    cluster_id: str
    node_id: int
    metadata_log_dir: str
    online: dict[str, Uuid] = field(default_factory=dict)  # dir -> directory.id
    offline: dict[str, str] = field(default_factory=dict)  # dir -> reason

    @property
    def metadata_directory_id(self) -> Uuid:
        return self.online[self.metadata_log_dir]

    def online_log_dirs(self, cfg: KafkaConfig) -> dict[str, Uuid]:
        """The online dirs among log.dirs (the metadata dir counts only if it is also a log dir)."""
        return {d: i for d, i in self.online.items() if d in cfg.log_dir_list}

    def sorted_online_ids(self, cfg: KafkaConfig) -> list[Uuid]:
        """What BrokerRegistration's LogDirs carries: online log dir ids in Uuid.compareTo order."""
        return sorted(self.online_log_dirs(cfg).values())


def initialize_log_dirs(cfg: KafkaConfig) -> NodeDirs:
    """Load and check every dir of this node; raise EnsembleError when the node must not start."""
    metadata_dir = cfg.metadata_log_dir_path
    ensemble = MetaPropertiesEnsemble.load(cfg.all_dirs, metadata_dir)
    ensemble.verify(
        None,
        cfg.node_id,
        {VerificationFlag.REQUIRE_AT_LEAST_ONE_VALID, VerificationFlag.REQUIRE_METADATA_LOG_DIR},
    )
    for d in cfg.log_dir_list:
        if d != metadata_dir and (Path(d) / METADATA_TOPIC_DIR).exists():
            raise EnsembleError(
                f"Found unexpected metadata location in data directory `{d}` "
                f"(the configured metadata directory is {metadata_dir})."
            )
    for d in sorted(ensemble.empty_log_dirs):
        raise EnsembleError(
            f"No `meta.properties` found in {d} (have you run `kraftpy storage format` to format the directory?)"
        )
    for d, meta in sorted(ensemble.log_dir_props.items()):
        if meta.node_id is None:
            raise EnsembleError(f"Error: node ID not found in {d}")
        if meta.cluster_id is None:
            raise EnsembleError(f"Error: cluster ID not found in {d}")

    ensemble, changes = ensemble.with_generated_directory_ids()
    offline = dict(ensemble.error_log_dirs)
    offline.update(write_all(changes))
    if metadata_dir in offline:
        raise EnsembleError(
            f"Encountered I/O error in metadata log directory {metadata_dir}. Cannot continue."
        )
    online = {
        d: m.directory_id for d, m in ensemble.log_dir_props.items() if d not in offline and m.directory_id
    }
    cluster_id = ensemble.cluster_id()
    node_id = ensemble.node_id()
    assert cluster_id is not None and node_id is not None  # verified above: at least one valid v1 file
    return NodeDirs(cluster_id, node_id, metadata_dir, online, offline)
