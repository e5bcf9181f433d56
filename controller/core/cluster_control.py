"""Registered brokers (and controllers), their epochs, fencing and log directories.

State changes only in the `replay_*` methods. A RegisterBrokerRecord's offset is kept as
`register_broker_record_offset`, which the heartbeat's catch-up check compares against, and
every online directory id maps to the one broker that owns it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from controller.core.broker_heartbeat import BrokerControlState, BrokerHeartbeatManager
from controller.core.feature_control import FeatureControlManager
from controller.core.placement import UsableBroker, default_dir
from kraftpy.metadata import BrokerRegistration, ControllerRegistration
from kraftpy.metadata.registration import sorted_dirs
from protocol.errors import Errors, KafkaError
from protocol.uuid import Uuid

_ClusterSnapshot = tuple[
    dict[int, BrokerRegistration], dict[int, int], dict[Uuid, int], dict[int, ControllerRegistration]
]


class ClusterControlManager:
    def __init__(
        self, cluster_id: str, features: FeatureControlManager, heartbeats: BrokerHeartbeatManager
    ) -> None:
        self.cluster_id = cluster_id
        self.features = features
        self.heartbeats = heartbeats
        self.registrations: dict[int, BrokerRegistration] = {}
        self.register_broker_record_offsets: dict[int, int] = {}
        self.directory_to_broker: dict[Uuid, int] = {}
        self.controllers: dict[int, ControllerRegistration] = {}

    # ---- replay ------------------------------------------------------------------------------

    def replay_register_broker(self, record: Any, offset: int) -> None:
        broker_id = record.BrokerId
        existing = self.registrations.get(broker_id)
        registration = BrokerRegistration.from_record(record)
        self._move_directories(broker_id, existing.directories if existing else (), registration.directories)
        self.registrations[broker_id] = registration
        self.register_broker_record_offsets[broker_id] = offset
        if existing is None or existing.incarnation_id != record.IncarnationId:
            self.heartbeats.remove(broker_id)

    def replay_unregister_broker(self, record: Any) -> None:
        registration = self._registration_for_epoch(
            record.BrokerId, record.BrokerEpoch, "UnregisterBrokerRecord"
        )
        self._move_directories(record.BrokerId, registration.directories, ())
        del self.registrations[record.BrokerId]
        self.register_broker_record_offsets.pop(record.BrokerId, None)
        self.heartbeats.remove(record.BrokerId)

    def replay_broker_registration_change(self, record: Any) -> None:
        registration = self._registration_for_epoch(
            record.BrokerId, record.BrokerEpoch, "BrokerRegistrationChangeRecord"
        )
        changes: dict[str, object] = {}
        if record.Fenced == 1:
            changes["fenced"] = True
        elif record.Fenced == -1:
            changes["fenced"] = False
        elif record.Fenced != 0:
            raise ValueError(f"BrokerRegistrationChangeRecord: unknown Fenced value {record.Fenced}")
        if record.InControlledShutdown == 1:
            changes["in_controlled_shutdown"] = True
        elif record.InControlledShutdown != 0:
            raise ValueError(
                f"BrokerRegistrationChangeRecord: unknown InControlledShutdown value {record.InControlledShutdown}"
            )
        # An empty LogDirs means "unchanged" (older versions cannot carry the field at all).
        log_dirs = getattr(record, "LogDirs", None)
        if log_dirs:
            directories = sorted_dirs(log_dirs)
            self._move_directories(record.BrokerId, registration.directories, directories)
            changes["directories"] = directories
        self.registrations[record.BrokerId] = registration.with_changes(**changes)

    def replay_fence_broker(self, record: Any) -> None:
        registration = self._registration_for_epoch(record.Id, record.Epoch, "FenceBrokerRecord")
        self.registrations[record.Id] = registration.with_changes(fenced=True)

    def replay_unfence_broker(self, record: Any) -> None:
        registration = self._registration_for_epoch(record.Id, record.Epoch, "UnfenceBrokerRecord")
        self.registrations[record.Id] = registration.with_changes(fenced=False)

    def replay_register_controller(self, record: Any) -> None:
        self.controllers[record.ControllerId] = ControllerRegistration.from_record(record)

    def _registration_for_epoch(self, broker_id: int, epoch: int, what: str) -> BrokerRegistration:
        registration = self.registrations.get(broker_id)
        if registration is None or registration.epoch != epoch:
            raise ValueError(f"{what}: no broker {broker_id} registered with epoch {epoch}")
        return registration

    def _move_directories(self, broker_id: int, old: tuple[Uuid, ...], new: tuple[Uuid, ...]) -> None:
        for d in old:
            if self.directory_to_broker.get(d) == broker_id:
                del self.directory_to_broker[d]
        for d in new:
            owner = self.directory_to_broker.get(d)
            if owner is not None and owner != broker_id:
                raise ValueError(
                    f"BUG: directory {d} of broker {broker_id} is already registered to broker {owner}"
                )
            self.directory_to_broker[d] = broker_id

    # ---- queries -----------------------------------------------------------------------------

    def registration(self, broker_id: int) -> BrokerRegistration | None:
        return self.registrations.get(broker_id)

    def check_broker_epoch(self, broker_id: int, broker_epoch: int) -> BrokerRegistration:
        registration = self.registrations.get(broker_id)
        if registration is None:
            raise KafkaError(
                Errors.STALE_BROKER_EPOCH, f"No broker registration found for broker {broker_id}"
            )
        if registration.epoch != broker_epoch:
            raise KafkaError(
                Errors.STALE_BROKER_EPOCH,
                f"Expected broker epoch {registration.epoch}, but got broker epoch {broker_epoch}",
            )
        return registration

    def is_active(self, broker_id: int) -> bool:
        """Registered, unfenced and not shutting down: may lead and join ISRs."""
        r = self.registrations.get(broker_id)
        return r is not None and not r.fenced and not r.in_controlled_shutdown

    def default_dir(self, broker_id: int) -> Uuid:
        return default_dir(self.registrations.get(broker_id), self.features.metadata_version)

    def usable_brokers(self) -> Iterator[UsableBroker]:
        for r in self.registrations.values():
            yield UsableBroker(r.id, r.rack, r.fenced or r.in_controlled_shutdown)

    def unfenced_broker_ids(self) -> list[int]:
        return [b for b, r in self.registrations.items() if not r.fenced]

    def active_broker_ids(self) -> list[int]:
        return [b for b, r in self.registrations.items() if not r.fenced and not r.in_controlled_shutdown]

    def fenced_broker_count(self) -> int:
        return sum(1 for r in self.registrations.values() if r.fenced)

    @staticmethod
    def control_state(registration: BrokerRegistration) -> BrokerControlState:
        if registration.fenced:
            return BrokerControlState.FENCED
        if registration.in_controlled_shutdown:
            return BrokerControlState.CONTROLLED_SHUTDOWN
        return BrokerControlState.UNFENCED

    def state(self) -> tuple[object, ...]:
        return self.snapshot()

    def snapshot(self) -> _ClusterSnapshot:
        # Registrations are immutable: replay replaces them, so a copy of each dict suffices.
        return (
            dict(self.registrations),
            dict(self.register_broker_record_offsets),
            dict(self.directory_to_broker),
            dict(self.controllers),
        )

    def restore(self, snapshot: _ClusterSnapshot) -> None:
        (
            self.registrations,
            self.register_broker_record_offsets,
            self.directory_to_broker,
            self.controllers,
        ) = snapshot
