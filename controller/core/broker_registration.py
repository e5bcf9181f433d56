"""A broker's registration as the controller holds it, and when its replicas count as online.

Which directory a replica may live in and still count (KIP-858 "Metadata caching", kept stricter
than shipped Kafka, see docs/kip-deviations.md):

- LOST is always offline.
- A broker registered without directories (before JBOD's metadata.version) has every dir online.
- A directory among the broker's online LogDirs is online.
- UNASSIGNED and MIGRATING are online on a broker registered with at most one dir (as before
  JBOD) and offline on a broker registered with several: the controller does not know yet where
  such a replica lives, so it must not lead and does not count.
- Any other id (a failed, removed or unknown dir) is offline.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import NamedTuple

from protocol.uuid import LOST, MIGRATING, UNASSIGNED, Uuid


class Endpoint(NamedTuple):
    name: str
    host: str
    port: int
    security_protocol: int


class FeatureRange(NamedTuple):
    min_supported: int
    max_supported: int


@dataclass(frozen=True, slots=True)
class BrokerRegistration:
    id: int
    epoch: int
    incarnation_id: Uuid
    listeners: tuple[Endpoint, ...] = ()
    supported_features: tuple[tuple[str, FeatureRange], ...] = ()
    rack: str | None = None
    fenced: bool = True
    in_controlled_shutdown: bool = False
    is_migrating_zk_broker: bool = False
    directories: tuple[Uuid, ...] = ()
    """The online log dirs: RegisterBrokerRecord.LogDirs, narrowed by BrokerRegistrationChangeRecords."""
    registered_directories: frozenset[Uuid] = field(default_factory=frozenset)
    """The LogDirs of the RegisterBrokerRecord itself; dirs reported offline since stay in here."""

    @property
    def multi_dir(self) -> bool:
        """Registered with several log dirs: KIP-858's stricter rules apply to this broker."""
        return len(self.registered_directories) > 1

    def directory_online(self, directory: Uuid) -> bool:
        if directory == LOST:
            return False
        if not self.directories:
            return True
        if directory in self.directories:
            return True
        if directory in (UNASSIGNED, MIGRATING):
            return not self.multi_dir
        return False

    def directory_placed(self, directory: Uuid) -> bool:
        """Whether the controller knows where a replica assigned to `directory` lives (the
        KIP-858 condition for unfencing a multi-dir broker). LOST counts as known: it is the
        broker's way to say a replica sits in a dir it cannot reach."""
        if directory == LOST:
            return True
        if directory in (UNASSIGNED, MIGRATING):
            return not self.multi_dir
        return not self.multi_dir or directory in self.registered_directories

    def feature_range(self, name: str) -> FeatureRange | None:
        for feature_name, feature_range in self.supported_features:
            if feature_name == name:
                return feature_range
        return None

    def endpoint(self, listener_name: str | None = None) -> Endpoint | None:
        for ep in self.listeners:
            if listener_name is None or ep.name == listener_name:
                return ep
        return None

    def with_changes(self, **changes: object) -> BrokerRegistration:
        return replace(self, **changes)  # type: ignore[arg-type]
