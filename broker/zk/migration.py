"""A ZooKeeper-mode broker during a migration to KRaft (KIP-866, with KIP-858's migration rules).

Configured with `zookeeper.metadata.migration.enable=true`, `controller.quorum.voters` and
`controller.listener.names`, the broker stays a ZooKeeper broker (its `/brokers/ids` znode, its
controller's LeaderAndIsr) and also:

- registers with the KRaft quorum as a migrating ZooKeeper broker (IsMigratingZkBroker, its log dir
  ids) and heartbeats, with the KRaft broker's own lifecycle (`broker.core.lifecycle`) and no
  directory assignments (as in Kafka, a ZooKeeper broker never sends AssignReplicasToDirs);
- halts on any log dir failure (KIP-858: "shutdown if any directory fails"), one unusable at
  startup included (`dir_failure_action`);
- once a KRaft controller holds `/controller` (a `kraftControllerEpoch` >= 0, `controller_target`),
  sends it what a controller serves: AlterPartition, CreateTopics, DeleteTopics, producer ids, and
  its controlled shutdown (BrokerHeartbeat WantShutDown, as a KRaft broker does), never contests
  that claim, and fences the KRaft controller's LeaderAndIsr, UpdateMetadata and StopReplica with
  its KRaft broker epoch (`fencing_broker_epoch`).

Unlike Kafka's, the broker does not follow the metadata log as an observer: nothing here reads it
(the KRaft controller still tells the broker everything through LeaderAndIsr and UpdateMetadata).
It reports the offset of its own registration as its metadata offset, which is how far a broker
must have read to be caught up.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable
from typing import Any

import structlog

from broker.controller_channel import ControllerChannel
from broker.core.assignments import AssignmentsManager, ReplicaView
from broker.core.broker_state import BrokerState
from broker.core.lifecycle import BrokerLifecycle, LifecycleConfig
from broker.lifecycle_manager import BrokerLifecycleManager, registration_info
from broker.startup import BrokerDirs
from broker.tasks import BrokerTasks
from kraftpy.config import KafkaConfig
from protocol.uuid import Uuid
from protocol.znodes import ControllerZnode

log = structlog.get_logger("broker.migration")

CONTROLLER_TIMEOUT_S = 10.0

# Controller-bound APIs a KRaft controller serves for a migrating ZooKeeper broker.
KRAFT_CONTROLLER_APIS = frozenset({"AlterPartition", "CreateTopics", "DeleteTopics", "AllocateProducerIds"})


def migration_configured(cfg: KafkaConfig) -> bool:
    return bool(cfg.zookeeper_metadata_migration_enable and cfg.controller_quorum_voters)


def migration_config_problem(cfg: KafkaConfig) -> str | None:
    """What a ZooKeeper broker with the migration flag lacks, in Kafka's words where it has them."""
    if not cfg.zookeeper_metadata_migration_enable:
        return None
    if not cfg.controller_quorum_voters:
        return "zookeeper.metadata.migration.enable requires controller.quorum.voters to be set"
    if not cfg.controller_listener_names:
        return "controller.listener.names must not be empty when running in ZooKeeper migration mode"
    return None


def is_kraft_controller(cfg: KafkaConfig, controller_id: int) -> bool:
    """Whether the controller `/controller` names is a KRaft controller (a voter), not a broker."""
    return controller_id >= 0 and controller_id in {v.id for v in cfg.quorum_voters}


class ControllerKind(enum.Enum):
    NONE = "none"
    """`/controller` is absent or unreadable: nobody to ask until it is written."""
    SELF = "self"
    ZK_BROKER = "zk_broker"
    KRAFT = "kraft"


@dataclasses.dataclass(frozen=True, slots=True)
class ControllerTarget:
    kind: ControllerKind
    controller_id: int = -1
    url: str | None = None
    """The KRaft controller's endpoint from controller.quorum.voters; None for the other kinds (a
    ZooKeeper-mode controller broker is found in the metadata cache) and for a KRaft controller
    this broker has no endpoint for."""

    @property
    def kraft(self) -> bool:
        return self.kind is ControllerKind.KRAFT

    @property
    def may_elect(self) -> bool:
        """Whether this broker may try to create `/controller`: never over a KRaft controller's
        persistent claim, which only that quorum (or a rollback) removes."""
        return self.kind is ControllerKind.NONE


def controller_target(cfg: KafkaConfig, broker_id: int, znode: ControllerZnode | None) -> ControllerTarget:
    """Who this broker's controller-bound requests go to, from `/controller` as last read.

    A `kraftControllerEpoch` >= 0 marks a KRaft controller's claim (KafkaZkClient's
    tryRegisterKRaftControllerAsActiveController); its `brokerid` is a voter's node id, reached at
    that voter's endpoint, never looked up among the brokers.
    """
    if znode is None or znode.brokerid < 0:
        return ControllerTarget(ControllerKind.NONE)
    if znode.kraftControllerEpoch >= 0:
        url = next((v.url for v in cfg.quorum_voters if v.id == znode.brokerid), None)
        return ControllerTarget(ControllerKind.KRAFT, znode.brokerid, url)
    if znode.brokerid == broker_id:
        return ControllerTarget(ControllerKind.SELF, broker_id)
    return ControllerTarget(ControllerKind.ZK_BROKER, znode.brokerid)


class DirFailureAction(enum.Enum):
    HALT = "halt"
    """Migration mode: stop at once, before telling anyone through ZooKeeper."""
    NOTIFY = "notify"
    """KIP-112: write `/log_dir_event_notification`; the controller moves the dir's leaders."""
    NOTIFY_AND_STOP = "notify_and_stop"
    """KIP-112 with no dir left online: notify, then stop."""


def dir_failure_action(*, migrating: bool, online_dirs_left: int) -> DirFailureAction:
    """What a ZooKeeper-mode broker does once a log dir's replicas are offline locally.

    During a migration any dir failure halts the broker (Kafka's ReplicaManager.handleLogDirFailure:
    "Shutdown broker because some log directory has failed during migration mode"; field bug 22):
    the KRaft controller learns of dirs only from registrations. Otherwise KIP-112 holds, and which
    dir failed does not matter: `metadata.log.dir` holds no metadata log in ZooKeeper mode, so its
    failure alone never stops the broker (field bug 18).
    """
    if migrating:
        return DirFailureAction.HALT
    if online_dirs_left > 0:
        return DirFailureAction.NOTIFY
    return DirFailureAction.NOTIFY_AND_STOP


def fencing_broker_epoch(*, kraft_controller_request: bool, zk_epoch: int, kraft_epoch: int | None) -> int:
    """The epoch a controller's LeaderAndIsr, UpdateMetadata or StopReplica must not be older than.

    A KRaft controller (isKRaftController) knows this broker by its KRaft registration, so its
    requests are fenced by that epoch, -1 (nothing to fence) until the registration is answered
    (Kafka's ZkBrokerEpochManager.isBrokerEpochStale). A broker not configured for a migration has
    no such epoch and keeps fencing with its `/brokers/ids` znode's.
    """
    if kraft_controller_request and kraft_epoch is not None:
        return kraft_epoch
    return zk_epoch


class _NoReplicas:
    def is_replica(self, topic_id: Uuid, partition: int) -> bool:
        return False


class KRaftRegistration:
    """This broker's registration and heartbeats with the KRaft quorum."""

    def __init__(
        self,
        cfg: KafkaConfig,
        dirs: BrokerDirs,
        tasks: BrokerTasks,
        *,
        now_ms: Callable[[], int],
        on_shutdown: Callable[[bool, str], None],
        started_at: float,
    ) -> None:
        info = dataclasses.replace(
            registration_info(cfg, dirs.cluster_id, Uuid.random()), is_migrating_zk_broker=True
        )
        self.lifecycle = BrokerLifecycle(
            info,
            sorted(dirs.log_dirs.values()),
            LifecycleConfig.from_kafka_config(cfg),
            # Every dir failure halts this broker at once; nothing waits on an acknowledgement.
            leads_partitions_in_dir=lambda _d: False,
        )
        # Nothing to place: its replicas count as placed in the controller's eyes.
        self.lifecycle.set_ready_to_unfence(True, now_ms())
        self.channel = ControllerChannel.for_config(cfg, timeout=CONTROLLER_TIMEOUT_S)
        self.manager = BrokerLifecycleManager(
            self.lifecycle,
            AssignmentsManager(cfg.node_id),
            self.channel,
            tasks,
            now_ms=now_ms,
            replica_view=_replica_view,
            on_heartbeat=self._on_heartbeat,
            on_assignments=lambda: None,
            on_shutdown=on_shutdown,
            started_at=started_at,
        )
        self._now_ms = now_ms

    def start(self) -> None:
        self.manager.start()

    def _on_heartbeat(self) -> None:
        lc = self.lifecycle
        if lc.registered and lc.metadata_offset < lc.broker_epoch:
            lc.set_metadata_offset(lc.broker_epoch)
            self.manager.wake()

    def begin_controlled_shutdown(self) -> None:
        self.manager.begin_controlled_shutdown()

    @property
    def registered(self) -> bool:
        return self.lifecycle.registered

    @property
    def unfenced(self) -> bool:
        return self.lifecycle.state is BrokerState.RUNNING

    async def call(self, api: str, request: Any, version: int | None = None, **kw: Any) -> Any:
        return await self.channel.call(api, request, version, **kw)

    async def close(self) -> None:
        await self.channel.close()

    def describe(self) -> dict[str, Any]:
        lc = self.lifecycle
        return {
            "registered": lc.registered,
            "broker_epoch": lc.broker_epoch,
            "state": lc.state.name,
            "fenced": lc.fenced,
            **self.channel.describe(),
        }


def _replica_view() -> ReplicaView:
    return _NoReplicas()
