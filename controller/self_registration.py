"""Controller registrations (KIP-919): RegisterControllerRecords, from the active controller itself
and from the ControllerRegistration requests of the other voters.

From metadata.version 3.7-IV0 every controller is registered with an incarnation id, its controller
listeners, the feature range it supports and whether it is ready for a ZooKeeper migration;
DescribeCluster with EndpointType=CONTROLLER answers from these records, and the migration waits
for every voter to be ready. Pure: the shell runs these as write events.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from controller.core.result import ControllerResult
from protocol.framing import ApiMessageAndVersion
from protocol.metadata_records import RegisterControllerRecord
from protocol.uuid import Uuid

if TYPE_CHECKING:
    from kraftpy.config import KafkaConfig

CONTROLLER_REGISTRATION_LEVEL = 15  # 3.7-IV0


def register_controller(
    *,
    node_id: int,
    incarnation_id: Uuid,
    listener_name: str,
    host: str,
    port: int,
    security_protocol: int,
    metadata_version: int,
    supported_metadata_versions: tuple[int, int],
    zk_migration_ready: bool = False,
) -> ControllerResult[None]:
    if metadata_version < CONTROLLER_REGISTRATION_LEVEL:
        return ControllerResult.of([], None)
    lo, hi = supported_metadata_versions
    record = RegisterControllerRecord(
        ControllerId=node_id,
        IncarnationId=incarnation_id,
        ZkMigrationReady=zk_migration_ready,
        EndPoints=[
            RegisterControllerRecord.ControllerEndpoint(
                Name=listener_name, Host=host, Port=port, SecurityProtocol=security_protocol
            )
        ],
        Features=[
            RegisterControllerRecord.ControllerFeature(
                Name="metadata.version", MinSupportedVersion=lo, MaxSupportedVersion=hi
            )
        ],
    )
    return ControllerResult.atomic_of([ApiMessageAndVersion(record, 0)], None)


def register_from_request(req: Any, metadata_version: int) -> ControllerResult[Any]:
    """ControllerRegistration from another voter, as the active controller writes it (Kafka's
    ClusterControlManager.registerController): refused when its features cannot run the cluster's
    metadata.version."""
    from protocol.errors import Errors
    from protocol.rpc.controller_registration import ControllerRegistrationResponse

    mv = next((f for f in req.Features if f.Name == "metadata.version"), None)
    if mv is not None and not mv.MinSupportedVersion <= metadata_version <= mv.MaxSupportedVersion:
        return ControllerResult.of(
            [],
            ControllerRegistrationResponse(
                ErrorCode=int(Errors.UNSUPPORTED_VERSION),
                ErrorMessage=(
                    f"controller {req.ControllerId} supports metadata.version "
                    f"{mv.MinSupportedVersion}-{mv.MaxSupportedVersion}, not {metadata_version}"
                ),
            ),
        )
    listener = req.Listeners[0] if req.Listeners else None
    result = register_controller(
        node_id=req.ControllerId,
        incarnation_id=req.IncarnationId,
        listener_name=listener.Name if listener else "CONTROLLER",
        host=listener.Host if listener else "",
        port=listener.Port if listener else 0,
        security_protocol=listener.SecurityProtocol if listener else 0,
        metadata_version=metadata_version,
        supported_metadata_versions=(mv.MinSupportedVersion, mv.MaxSupportedVersion) if mv else (1, 1),
        zk_migration_ready=req.ZkMigrationReady,
    )
    return ControllerResult.atomic_of(result.records, ControllerRegistrationResponse())


def registration_request(cfg: KafkaConfig, incarnation_id: Uuid) -> Any:
    """What this voter sends the active controller to register (Kafka's ControllerRegistrationManager)."""
    from kraftpy.storage.metadata_version import LATEST_LEVEL
    from protocol.rpc.controller_registration import ControllerRegistrationRequest
    from protocol.rpc.controller_registration import Feature as ControllerRegistrationFeature
    from protocol.rpc.controller_registration import Listener as ControllerRegistrationListener

    name = (cfg.controller_listener_names or ["CONTROLLER"])[0]
    endpoint = cfg.listener(name)
    return ControllerRegistrationRequest(
        ControllerId=cfg.node_id,
        IncarnationId=incarnation_id,
        ZkMigrationReady=zk_migration_ready(cfg),
        Listeners=[
            ControllerRegistrationListener(
                Name=endpoint.name,
                Host=endpoint.host or "localhost",
                Port=endpoint.port,
                SecurityProtocol=cfg.security_protocol(endpoint.name),
            )
        ],
        Features=[
            ControllerRegistrationFeature(
                Name="metadata.version", MinSupportedVersion=1, MaxSupportedVersion=LATEST_LEVEL
            )
        ],
    )


def zk_migration_ready(cfg: KafkaConfig) -> bool:
    # Kafka: ready when configured to migrate and pointed at ZooKeeper.
    return cfg.zookeeper_metadata_migration_enable and bool(cfg.zookeeper_connect)


def register_from_config(cfg: KafkaConfig, metadata_version: int) -> ControllerResult[None]:
    """This controller's registration: its first controller listener, a new incarnation id."""
    from kraftpy.storage.metadata_version import LATEST_LEVEL

    name = (cfg.controller_listener_names or ["CONTROLLER"])[0]
    endpoint = cfg.listener(name)
    return register_controller(
        node_id=cfg.node_id,
        incarnation_id=Uuid.random(),
        listener_name=endpoint.name,
        host=endpoint.host or "localhost",
        port=endpoint.port,
        security_protocol=cfg.security_protocol(endpoint.name),
        metadata_version=metadata_version,
        supported_metadata_versions=(1, LATEST_LEVEL),  # 3.0-IV1, the first KRaft version
        zk_migration_ready=zk_migration_ready(cfg),
    )
