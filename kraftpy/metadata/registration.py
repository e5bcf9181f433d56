"""Broker and controller registrations, as RegisterBrokerRecord and RegisterControllerRecord say.

Which directory a replica may live in and still count as online (KIP-858 "Metadata caching", kept
stricter than shipped Kafka, see docs/kip-deviations.md):

- LOST is always offline.
- A broker registered without directories (before JBOD's metadata.version) has every dir online.
- A directory among the broker's online LogDirs is online.
- UNASSIGNED and MIGRATING are online on a broker registered with at most one dir (as before
  JBOD) and offline on a broker registered with several: nobody knows yet where such a replica
  lives, so it must not lead and does not count.
- Any other id (a failed, removed or unknown dir) is offline.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from protocol.uuid import LOST, MIGRATING, UNASSIGNED, Uuid


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One advertised listener of a registered broker or controller."""

    name: str
    host: str
    port: int
    security_protocol: int


@dataclass(frozen=True, slots=True)
class VersionRange:
    """The feature levels a node supports."""

    min_version: int
    max_version: int


# Listeners and features are keyed by name (maps in Kafka): kept sorted so equal registrations
# compare equal whatever order a record listed them in.
def endpoints(raw: Iterable[Any] | None) -> tuple[Endpoint, ...]:
    eps = (Endpoint(e.Name, e.Host, e.Port, e.SecurityProtocol) for e in raw or ())
    return tuple(sorted(eps, key=lambda e: e.name))


def features(raw: Iterable[Any] | None) -> tuple[tuple[str, VersionRange], ...]:
    feats = ((f.Name, VersionRange(f.MinSupportedVersion, f.MaxSupportedVersion)) for f in raw or ())
    return tuple(sorted(feats, key=lambda f: f[0]))


def sorted_dirs(log_dirs: Iterable[Uuid] | None) -> tuple[Uuid, ...]:
    """LogDirs as Kafka's BrokerRegistration keeps them: sorted, so that order never matters."""
    return tuple(sorted(log_dirs or ()))


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
    """The online log dirs: RegisterBrokerRecord.LogDirs, narrowed by BrokerRegistrationChangeRecords."""
    registered_directories: frozenset[Uuid] = field(default_factory=frozenset)
    """The LogDirs of the RegisterBrokerRecord itself; dirs reported offline since stay in here."""

    @classmethod
    def from_record(cls, rec: Any) -> BrokerRegistration:
        directories = sorted_dirs(getattr(rec, "LogDirs", None))
        return cls(
            id=rec.BrokerId,
            epoch=rec.BrokerEpoch,
            incarnation_id=rec.IncarnationId,
            listeners=endpoints(rec.EndPoints),
            supported_features=features(rec.Features),
            rack=rec.Rack,
            fenced=bool(rec.Fenced),
            in_controlled_shutdown=bool(getattr(rec, "InControlledShutdown", False)),
            is_migrating_zk_broker=bool(getattr(rec, "IsMigratingZkBroker", False)),
            directories=directories,
            registered_directories=frozenset(directories),
        )

    @property
    def multi_dir(self) -> bool:
        """Registered with several log dirs: KIP-858's stricter rules apply to this broker."""
        return len(self.registered_directories) > 1

    def directory_online(self, directory: Uuid) -> bool:
        """Whether a replica assigned to `directory` on this broker counts as online (module doc)."""
        if directory == LOST:
            return False
        if not self.directories:
            return True
        if directory in self.directories:
            return True
        if directory in (UNASSIGNED, MIGRATING):
            # A ZooKeeper broker in migration never places its replicas: they are wherever its
            # ZooKeeper-mode log manager put them, and online (KIP-858's migration section).
            return not self.multi_dir or self.is_migrating_zk_broker
        return False

    def directory_placed(self, directory: Uuid) -> bool:
        """Whether the controller knows where a replica assigned to `directory` lives (the
        KIP-858 condition for unfencing a multi-dir broker). LOST counts as known: it is the
        broker's way to say a replica sits in a dir it cannot reach. A ZooKeeper broker in
        migration never sends AssignReplicasToDirs (as in Kafka), so all of its replicas count as
        placed: otherwise it could never be unfenced, nor lead."""
        if directory == LOST or self.is_migrating_zk_broker:
            return True
        if directory in (UNASSIGNED, MIGRATING):
            return not self.multi_dir
        return not self.multi_dir or directory in self.registered_directories

    def endpoint(self, listener_name: str | None = None) -> Endpoint | None:
        """The listener called `listener_name`, or the first one when no name is given."""
        for ep in self.listeners:
            if listener_name is None or ep.name == listener_name:
                return ep
        return None

    def listener(self, name: str) -> Endpoint | None:
        return self.endpoint(name)

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

    def with_changes(self, **changes: object) -> BrokerRegistration:
        return replace(self, **changes)  # type: ignore[arg-type]


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
            listeners=endpoints(rec.EndPoints),
            supported_features=features(rec.Features),
        )
