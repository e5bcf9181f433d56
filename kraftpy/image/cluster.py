"""Registered brokers and controllers (Kafka's ClusterImage / ClusterDelta).

A broker registration carries its online log directories (LogDirs, sorted as Kafka keeps them);
an empty list means the broker registered before JBOD's metadata.version, and then every
directory counts as online (protocol.uuid.directory_is_online).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any, ClassVar

from kraftpy.image.errors import MetadataReplayError
from protocol.uuid import Uuid, directory_is_online

# BrokerRegistrationChangeRecord.Fenced
FENCING_UNFENCE = -1
FENCING_NONE = 0
FENCING_FENCE = 1
# BrokerRegistrationChangeRecord.InControlledShutdown
CONTROLLED_SHUTDOWN_NONE = 0
CONTROLLED_SHUTDOWN_IN = 1


@dataclass(frozen=True, slots=True)
class Endpoint:
    name: str
    host: str
    port: int
    security_protocol: int


@dataclass(frozen=True, slots=True)
class VersionRange:
    min_version: int
    max_version: int


# Listeners and features are keyed by name (maps in Kafka): kept sorted so equal registrations
# compare equal whatever order a record listed them in.
def _endpoints(raw: Iterable[Any] | None) -> tuple[Endpoint, ...]:
    eps = (Endpoint(e.Name, e.Host, e.Port, e.SecurityProtocol) for e in raw or ())
    return tuple(sorted(eps, key=lambda e: e.name))


def _features(raw: Iterable[Any] | None) -> tuple[tuple[str, VersionRange], ...]:
    feats = ((f.Name, VersionRange(f.MinSupportedVersion, f.MaxSupportedVersion)) for f in raw or ())
    return tuple(sorted(feats, key=lambda f: f[0]))


@dataclass(frozen=True, slots=True)
class BrokerRegistration:
    id: int
    epoch: int
    incarnation_id: Uuid
    listeners: tuple[Endpoint, ...] = ()
    supported_features: tuple[tuple[str, VersionRange], ...] = ()
    rack: str | None = None
    fenced: bool = True
    in_controlled_shutdown: bool = False
    is_migrating_zk_broker: bool = False
    directories: tuple[Uuid, ...] = ()

    @classmethod
    def from_record(cls, rec: Any) -> BrokerRegistration:
        return cls(
            id=rec.BrokerId,
            epoch=rec.BrokerEpoch,
            incarnation_id=rec.IncarnationId,
            listeners=_endpoints(rec.EndPoints),
            supported_features=_features(rec.Features),
            rack=rec.Rack,
            fenced=bool(rec.Fenced),
            in_controlled_shutdown=bool(getattr(rec, "InControlledShutdown", False)),
            is_migrating_zk_broker=bool(getattr(rec, "IsMigratingZkBroker", False)),
            directories=tuple(sorted(getattr(rec, "LogDirs", None) or ())),
        )

    def has_online_dir(self, directory: Uuid) -> bool:
        """DirectoryId.isOnline against this registration's LogDirs."""
        return directory_is_online(directory, self.directories)

    def listener(self, name: str) -> Endpoint | None:
        return next((e for e in self.listeners if e.name == name), None)

    @property
    def state(self) -> str:
        """fenced, controlled_shutdown or unfenced, as the tools print it."""
        if self.fenced:
            return "fenced"
        if self.in_controlled_shutdown:
            return "controlled_shutdown"
        return "unfenced"

    def is_active(self) -> bool:
        """ClusterControlManager.isActive: may lead partitions (unfenced and not shutting down)."""
        return not self.fenced and not self.in_controlled_shutdown


@dataclass(frozen=True, slots=True)
class ControllerRegistration:
    id: int
    incarnation_id: Uuid
    zk_migration_ready: bool = False
    listeners: tuple[Endpoint, ...] = ()
    supported_features: tuple[tuple[str, VersionRange], ...] = ()

    @classmethod
    def from_record(cls, rec: Any) -> ControllerRegistration:
        return cls(
            id=rec.ControllerId,
            incarnation_id=rec.IncarnationId,
            zk_migration_ready=bool(rec.ZkMigrationReady),
            listeners=_endpoints(rec.EndPoints),
            supported_features=_features(rec.Features),
        )


@dataclass(frozen=True)
class ClusterImage:
    brokers: Mapping[int, BrokerRegistration]
    controllers: Mapping[int, ControllerRegistration]

    EMPTY: ClassVar[ClusterImage]

    def is_empty(self) -> bool:
        return not self.brokers and not self.controllers

    def broker(self, broker_id: int) -> BrokerRegistration | None:
        return self.brokers.get(broker_id)

    def broker_epoch(self, broker_id: int) -> int:
        b = self.brokers.get(broker_id)
        return -1 if b is None else b.epoch

    def directory_to_broker(self) -> dict[Uuid, int]:
        """Which broker registered each directory id."""
        return {d: b.id for b in self.brokers.values() for d in b.directories}


ClusterImage.EMPTY = ClusterImage(MappingProxyType({}), MappingProxyType({}))


class ClusterDelta:
    def __init__(self, image: ClusterImage) -> None:
        self.image = image
        # None marks an unregistered broker
        self.changed_brokers: dict[int, BrokerRegistration | None] = {}
        self.changed_controllers: dict[int, ControllerRegistration] = {}

    def broker(self, broker_id: int) -> BrokerRegistration | None:
        if broker_id in self.changed_brokers:
            return self.changed_brokers[broker_id]
        return self.image.brokers.get(broker_id)

    def _broker_or_raise(self, broker_id: int, epoch: int, what: str) -> BrokerRegistration:
        current = self.broker(broker_id)
        if current is None:
            raise MetadataReplayError(f"cannot {what} broker {broker_id}: it is not registered")
        if current.epoch != epoch:
            raise MetadataReplayError(
                f"cannot {what} broker {broker_id}: record has epoch {epoch}, registration has {current.epoch}"
            )
        return current

    def replay_register_broker(self, rec: Any) -> None:
        self.changed_brokers[rec.BrokerId] = BrokerRegistration.from_record(rec)

    def replay_unregister_broker(self, rec: Any) -> None:
        self._broker_or_raise(rec.BrokerId, rec.BrokerEpoch, "unregister")
        self.changed_brokers[rec.BrokerId] = None

    def _change(
        self,
        broker_id: int,
        epoch: int,
        fenced: bool | None,
        in_controlled_shutdown: bool | None,
        directories: tuple[Uuid, ...] | None,
    ) -> None:
        current = self._broker_or_raise(broker_id, epoch, "change")
        updated = replace(
            current,
            fenced=current.fenced if fenced is None else fenced,
            in_controlled_shutdown=(
                current.in_controlled_shutdown if in_controlled_shutdown is None else in_controlled_shutdown
            ),
            directories=current.directories if directories is None else directories,
        )
        if updated != current:
            self.changed_brokers[broker_id] = updated

    def replay_fence_broker(self, rec: Any) -> None:
        self._change(rec.Id, rec.Epoch, True, None, None)

    def replay_unfence_broker(self, rec: Any) -> None:
        self._change(rec.Id, rec.Epoch, False, None, None)

    def replay_registration_change(self, rec: Any) -> None:
        fencing = {FENCING_UNFENCE: False, FENCING_NONE: None, FENCING_FENCE: True}
        shutdown = {CONTROLLED_SHUTDOWN_NONE: None, CONTROLLED_SHUTDOWN_IN: True}
        f = rec.Fenced
        s = getattr(rec, "InControlledShutdown", CONTROLLED_SHUTDOWN_NONE)
        if f not in fencing:
            raise MetadataReplayError(f"BrokerRegistrationChangeRecord has invalid Fenced value {f}")
        if s not in shutdown:
            raise MetadataReplayError(
                f"BrokerRegistrationChangeRecord has invalid InControlledShutdown value {s}"
            )
        log_dirs = getattr(rec, "LogDirs", None)
        # an empty LogDirs means "no change"
        directories = tuple(sorted(log_dirs)) if log_dirs else None
        self._change(rec.BrokerId, rec.BrokerEpoch, fencing[f], shutdown[s], directories)

    def replay_register_controller(self, rec: Any) -> None:
        self.changed_controllers[rec.ControllerId] = ControllerRegistration.from_record(rec)

    def apply(self) -> ClusterImage:
        brokers = dict(self.image.brokers)
        for broker_id, reg in self.changed_brokers.items():
            if reg is None:
                brokers.pop(broker_id, None)
            else:
                brokers[broker_id] = reg
        controllers = dict(self.image.controllers)
        controllers.update(self.changed_controllers)
        return ClusterImage(
            MappingProxyType(dict(sorted(brokers.items()))),
            MappingProxyType(dict(sorted(controllers.items()))),
        )
