"""The active controller registers itself (Kafka's ControllerRegistrationManager, KIP-919).

From metadata.version 3.7-IV0 every controller writes a RegisterControllerRecord with a fresh
incarnation id when it starts, naming its controller listeners and the feature range it supports;
DescribeCluster with EndpointType=CONTROLLER answers from these records. Pure: the shell runs it
as a write event after activation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

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
) -> ControllerResult[None]:
    if metadata_version < CONTROLLER_REGISTRATION_LEVEL:
        return ControllerResult.of([], None)
    lo, hi = supported_metadata_versions
    record = RegisterControllerRecord(
        ControllerId=node_id,
        IncarnationId=incarnation_id,
        ZkMigrationReady=False,
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
    )
