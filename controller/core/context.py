"""The controller's configuration and the managers an operation works with."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from controller.core.acls import AclControlManager
from controller.core.broker_heartbeat import BrokerHeartbeatManager
from controller.core.cluster_control import ClusterControlManager
from controller.core.configuration_control import ConfigurationControlManager
from controller.core.feature_control import FeatureControlManager
from controller.core.producer_ids import ProducerIdControlManager
from controller.core.replication_control import ReplicationControlManager
from controller.core.scram import ScramControlManager


@dataclass(frozen=True)
class ControllerConfig:
    """What the core needs from the controller's configuration (Kafka's names in the comments)."""

    node_id: int
    cluster_id: str
    broker_session_timeout_ms: int = 9000  # broker.session.timeout.ms
    default_num_partitions: int = 1  # num.partitions
    default_replication_factor: int = 1  # default.replication.factor
    unclean_leader_election_enable: bool = False  # unclean.leader.election.enable
    # kraftpy's own caps (Kafka has none by default): a CreateTopics asking for billions of
    # partitions would otherwise block the controller's event loop in placement and eat its memory.
    max_partitions_per_request: int = 100_000  # kraftpy.max.partitions.per.request
    max_partitions: int = 1_000_000  # kraftpy.max.partitions (the whole cluster)
    zk_migration_enabled: bool = False  # zookeeper.metadata.migration.enable
    random_seed: int | None = None
    """Seeds placement and topic ids; None draws from the OS (tests pass a number)."""


@dataclass
class ControllerManagers:
    config: ControllerConfig
    features: FeatureControlManager
    heartbeats: BrokerHeartbeatManager
    cluster: ClusterControlManager
    configs: ConfigurationControlManager
    replication: ReplicationControlManager
    producer_ids: ProducerIdControlManager
    random: random.Random = field(default_factory=random.Random)
    acls: AclControlManager = field(default_factory=AclControlManager)
    scram: ScramControlManager = field(default_factory=ScramControlManager)

    @classmethod
    def create(cls, config: ControllerConfig) -> ControllerManagers:
        features = FeatureControlManager()
        heartbeats = BrokerHeartbeatManager(config.broker_session_timeout_ms)
        cluster = ClusterControlManager(config.cluster_id, features, heartbeats)
        static = {
            "unclean.leader.election.enable": "true" if config.unclean_leader_election_enable else "false"
        }
        configs = ConfigurationControlManager(static)
        replication = ReplicationControlManager(
            cluster, features, configs, zk_migration_enabled=config.zk_migration_enabled
        )
        return cls(
            config=config,
            features=features,
            heartbeats=heartbeats,
            cluster=cluster,
            configs=configs,
            replication=replication,
            producer_ids=ProducerIdControlManager(),
            random=random.Random(config.random_seed),
        )
