"""Registered brokers and controllers (Kafka's ClusterImage / ClusterDelta).

The registrations themselves, and when a replica on a broker counts as online, are the shared
model's (kraftpy.metadata); this module only keeps them by id and replays records into them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any, ClassVar

from kraftpy.metadata import BrokerRegistration, ControllerRegistration, MetadataReplayError
from kraftpy.metadata.registration import sorted_dirs
from protocol.uuid import Uuid

# BrokerRegistrationChangeRecord.Fenced
FENCING_UNFENCE = -1
FENCING_NONE = 0
FENCING_FENCE = 1
# BrokerRegistrationChangeRecord.InControlledShutdown
CONTROLLED_SHUTDOWN_NONE = 0
CONTROLLED_SHUTDOWN_IN = 1


@dataclass(frozen=True)
class ClusterImage:
    brokers: Mapping[int, BrokerRegistration]
    controllers: Mapping[int, ControllerRegistration]

    EMPTY: ClassVar[ClusterImage]

    def is_empty(self) -> bool:
        return not self.brokers and not self.controllers

    def broker(self, broker_id: int) -> BrokerRegistration | None:
        return self.brokers.get(broker_id)

    def get(self, broker_id: int, /) -> BrokerRegistration | None:
        """Lets the replica rule (kraftpy.metadata.replicas) look brokers up here directly."""
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
        directories = sorted_dirs(log_dirs) if log_dirs else None
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
