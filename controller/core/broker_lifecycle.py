"""BrokerRegistration, BrokerHeartbeat and session expiry (reference 7.1, 7.2; KIP-858 "Controller")."""

from __future__ import annotations

import heapq
import logging
from typing import Any

from controller.core.broker_heartbeat import BrokerControlState, HeartbeatInputs
from controller.core.context import ControllerManagers
from controller.core.metadata_version import (
    FEATURE_NAME,
    MV_3_0_IV1,
    MV_3_4_IV0,
    is_directory_assignment_supported,
    register_broker_record_version,
)
from controller.core.replication_control import OperationView
from controller.core.result import ControllerResult
from kraftpy.metadata import BrokerRegistration, ZkMigrationState
from protocol.errors import Errors, KafkaError
from protocol.framing import ApiMessageAndVersion
from protocol.metadata_records import RegisterBrokerRecord
from protocol.rpc.broker_heartbeat import BrokerHeartbeatRequest, BrokerHeartbeatResponse
from protocol.rpc.broker_registration import BrokerRegistrationRequest, BrokerRegistrationResponse
from protocol.uuid import Uuid

log = logging.getLogger(__name__)


# ---- BrokerRegistration ----------------------------------------------------------------------


def _validate_log_dirs(m: ControllerManagers, broker_id: int, log_dirs: list[Uuid]) -> None:
    # Shipped Kafka answers INVALID_REGISTRATION here where KIP-858 says INVALID_REQUEST (docs/kip-deviations.md).
    if not log_dirs:
        raise KafkaError(Errors.INVALID_REGISTRATION, "No directories specified in request")
    if any(d.is_reserved() for d in log_dirs):
        raise KafkaError(Errors.INVALID_REGISTRATION, "Reserved directory ID in request")
    if len(set(log_dirs)) != len(log_dirs):
        raise KafkaError(Errors.INVALID_REGISTRATION, "Duplicate directory ID in request")
    for d in log_dirs:
        owner = m.cluster.directory_to_broker.get(d)
        if owner is not None and owner != broker_id:
            raise KafkaError(
                Errors.INVALID_REGISTRATION, f"Broker {owner} is already registered with directory {d}"
            )


def _validate_features(m: ControllerManagers, req: BrokerRegistrationRequest) -> None:
    offered = {f.Name: (f.MinSupportedVersion, f.MaxSupportedVersion) for f in req.Features}
    mv = m.features.metadata_version
    # A broker that names no metadata.version range only knows the lowest KRaft level.
    low, high = offered.get(FEATURE_NAME, (MV_3_0_IV1, MV_3_0_IV1))
    if not low <= mv <= high:
        raise KafkaError(
            Errors.UNSUPPORTED_VERSION,
            f"Unable to register because the broker does not support finalized version {mv} of "
            f"metadata.version. The broker wants a version between {low} and {high}, inclusive.",
        )
    for name, level in sorted(m.features.finalized.items()):
        if name == FEATURE_NAME:
            continue
        low, high = offered.get(name, (0, 0))
        if not low <= level <= high:
            raise KafkaError(
                Errors.UNSUPPORTED_VERSION,
                f"Unable to register because the broker does not support finalized version {level} of "
                f"{name}. The broker wants a version between {low} and {high}, inclusive.",
            )


def register_broker(
    m: ControllerManagers, req: BrokerRegistrationRequest, version: int, now_ms: int, next_write_offset: int
) -> ControllerResult[BrokerRegistrationResponse]:
    """The checks of reference 7.1 in order, then one atomic batch ending in the RegisterBrokerRecord.

    The broker epoch of a new incarnation is the offset that record will get; the shell must
    append the batch at `next_write_offset`.
    """
    m.heartbeats.observe(now_ms)
    broker_id = req.BrokerId
    if req.ClusterId != m.cluster.cluster_id:
        raise KafkaError(
            Errors.INCONSISTENT_CLUSTER_ID,
            f"Expected cluster ID {m.cluster.cluster_id}, but got cluster ID {req.ClusterId}",
        )
    existing = m.cluster.registration(broker_id)
    new_incarnation = existing is None or existing.incarnation_id != req.IncarnationId
    if (
        existing is not None
        and new_incarnation
        and not existing.fenced
        and m.heartbeats.session_valid(broker_id, now_ms)
    ):
        raise KafkaError(
            Errors.DUPLICATE_BROKER_REGISTRATION,
            f"Another broker is registered with that broker id {broker_id} and its session has not expired.",
        )
    mv = m.features.metadata_version
    if req.IsMigratingZkBroker and not (m.config.zk_migration_enabled and mv >= MV_3_4_IV0):
        raise KafkaError(
            Errors.BROKER_ID_NOT_REGISTERED,
            "Controller does not support registering ZK brokers.",
        )
    if not req.IsMigratingZkBroker and m.features.zk_migration_state == ZkMigrationState.PRE_MIGRATION:
        raise KafkaError(
            Errors.BROKER_ID_NOT_REGISTERED,
            "Controller is in pre-migration mode and cannot register KRaft brokers until the metadata migration is complete.",
        )
    log_dirs = list(req.LogDirs)
    if is_directory_assignment_supported(mv):
        _validate_log_dirs(m, broker_id, log_dirs)
    elif len(log_dirs) > 1:
        # Field bug 1: a multi-dir broker below JBOD's metadata.version could never have a failed
        # dir handled (its replicas carry no directories), so it is refused outright.
        raise KafkaError(
            Errors.INVALID_REGISTRATION,
            "Multiple log directories (aka JBOD) are not supported in the current MetadataVersion "
            f"{mv}. Need 17 (3.7-IV2) or higher.",
        )
    _validate_features(m, req)

    record_version = register_broker_record_version(mv)
    directories = tuple(log_dirs) if record_version >= 3 else ()
    records: list[ApiMessageAndVersion] = []
    view = OperationView()
    if existing is not None and new_incarnation and not existing.fenced:
        # The old incarnation's session ran out but it was not fenced yet: fence it first so no
        # partition keeps a leader the new registration has replaced.
        m.replication.handle_broker_fenced(broker_id, records, view)
    if new_incarnation:
        epoch, fenced, in_controlled_shutdown = next_write_offset + len(records), True, False
    else:
        # Same incarnation (a resend, or the re-registration on crossing JBOD's metadata.version):
        # keep epoch and state (field bugs 3 and 4).
        assert existing is not None
        epoch, fenced, in_controlled_shutdown = (
            existing.epoch,
            existing.fenced,
            existing.in_controlled_shutdown,
        )
        after = existing.with_changes(directories=directories, registered_directories=frozenset(directories))
        m.replication.handle_replicas_now_offline(existing, after, records, view)

    fields: dict[str, Any] = {
        "BrokerId": broker_id,
        "IncarnationId": req.IncarnationId,
        "BrokerEpoch": epoch,
        "EndPoints": [
            RegisterBrokerRecord.BrokerEndpoint(
                Name=listener.Name,
                Host=listener.Host,
                Port=listener.Port,
                SecurityProtocol=listener.SecurityProtocol,
            )
            for listener in req.Listeners
        ],
        "Features": [
            RegisterBrokerRecord.BrokerFeature(
                Name=f.Name,
                MinSupportedVersion=f.MinSupportedVersion,
                MaxSupportedVersion=f.MaxSupportedVersion,
            )
            for f in req.Features
        ],
        "Rack": req.Rack,
        "Fenced": fenced,
    }
    if record_version >= 1:
        fields["InControlledShutdown"] = in_controlled_shutdown
    if record_version >= 2:
        fields["IsMigratingZkBroker"] = req.IsMigratingZkBroker
    if record_version >= 3:
        fields["LogDirs"] = list(directories)
    records.append(ApiMessageAndVersion(RegisterBrokerRecord(**fields), record_version))
    return ControllerResult.atomic_of(records, BrokerRegistrationResponse(ErrorCode=0, BrokerEpoch=epoch))


# ---- BrokerHeartbeat -------------------------------------------------------------------------


def process_broker_heartbeat(
    m: ControllerManagers, req: BrokerHeartbeatRequest, version: int, now_ms: int, next_write_offset: int
) -> ControllerResult[BrokerHeartbeatResponse]:
    """Reference 7.2 with KIP-858's unfencing condition.

    Records, in order: for newly offline dirs, PartitionChangeRecords for exactly the partitions
    assigned to them and then a BrokerRegistrationChangeRecord with the remaining LogDirs; then the
    records of a state change (fence, unfence plus elections, controlled shutdown). Offline dirs
    go first so an unfencing in the same heartbeat never elects a replica in a dir just lost.
    """
    m.heartbeats.observe(now_ms)
    broker_id = req.BrokerId
    registration = m.cluster.registration(broker_id)
    register_offset = m.cluster.register_broker_record_offsets.get(broker_id)
    if registration is None or register_offset is None:
        raise KafkaError(
            Errors.STALE_BROKER_EPOCH, f"Broker {broker_id} sent a heartbeat before registration"
        )
    m.cluster.check_broker_epoch(broker_id, req.BrokerEpoch)

    records: list[ApiMessageAndVersion] = []
    view = OperationView()
    all_dirs_offline = False
    if req.OfflineLogDirs and is_directory_assignment_supported(m.features.metadata_version):
        all_dirs_offline = _handle_offline_log_dirs(m, registration, req.OfflineLogDirs, records, view)

    current = m.cluster.control_state(registration)
    caught_up = req.CurrentMetadataOffset >= register_offset
    if all_dirs_offline:
        nxt = BrokerControlState.SHUTDOWN_NOW
    else:
        # Only leaving FENCED asks whether every replica is placed; the steady heartbeat of an
        # unfenced broker skips the look at its dirs.
        fenced_now = current is BrokerControlState.FENCED
        unplaced = m.replication.unplaced_directories(registration) if fenced_now else []
        if unplaced and not req.WantFence:
            log.info(
                "broker %d stays fenced: it has replicas in directories it has not placed (%s)",
                broker_id,
                ", ".join(str(d) for d in unplaced),
            )
        inputs = HeartbeatInputs(
            want_fence=req.WantFence,
            want_shut_down=req.WantShutDown,
            caught_up=caught_up,
            # A fenced broker still marked as shutting down must register again first.
            may_unfence=not unplaced and not registration.in_controlled_shutdown,
            has_leaderships=lambda: m.replication.has_leaderships(broker_id, view),
        )
        lowest = (
            m.heartbeats.lowest_active_offset(b for b in m.cluster.active_broker_ids() if b != broker_id)
            if current is BrokerControlState.CONTROLLED_SHUTDOWN
            else -1
        )
        nxt = m.heartbeats.next_state(broker_id, current, inputs, lowest)

    if nxt is not current:
        if nxt in (BrokerControlState.FENCED, BrokerControlState.SHUTDOWN_NOW):
            m.replication.handle_broker_fenced(broker_id, records, view)
        elif nxt is BrokerControlState.UNFENCED:
            m.replication.handle_broker_unfenced(broker_id, records, view)
        elif nxt is BrokerControlState.CONTROLLED_SHUTDOWN:
            m.replication.handle_broker_in_controlled_shutdown(broker_id, records, view)
            # It may shut down once every active broker has read past this batch.
            m.heartbeats.set_controlled_shutdown_offset(broker_id, next_write_offset + len(records) - 1)
    m.heartbeats.touch(broker_id, now_ms, req.CurrentMetadataOffset)
    response = BrokerHeartbeatResponse(
        ErrorCode=0,
        IsCaughtUp=caught_up,
        IsFenced=nxt.fenced,
        ShouldShutDown=nxt.should_shut_down,
    )
    return ControllerResult.of(records, response)


UNKNOWN_DIRS_SHOWN = 10


def _handle_offline_log_dirs(
    m: ControllerManagers,
    registration: BrokerRegistration,
    offline_log_dirs: list[Uuid],
    records: list[ApiMessageAndVersion],
    view: OperationView,
) -> bool:
    """Returns True when no registered dir stays online."""
    reported = set(offline_log_dirs)
    # Dirs the broker never registered are ignored with a warning, as shipped Kafka ignores them;
    # answering LOG_DIR_NOT_FOUND (KIP-858) would fail every later heartbeat too, since a broker
    # repeats all its offline dirs until it restarts (docs/kip-deviations.md).
    unknown = [d for d in reported if d not in registration.registered_directories]
    if unknown:
        # A hostile heartbeat may name a million: the line names a few, in a stable order.
        shown = heapq.nsmallest(UNKNOWN_DIRS_SHOWN, unknown)
        more = f" and {len(unknown) - len(shown)} more" if len(unknown) > len(shown) else ""
        log.warning(
            "broker %d reported unknown offline log dirs %s%s; ignoring them",
            registration.id,
            ", ".join(str(d) for d in shown),
            more,
        )
    newly_offline = [d for d in registration.directories if d in reported]
    if not newly_offline:
        return False
    remaining = m.replication.handle_directories_offline(registration, newly_offline, records, view)
    if not remaining:
        log.warning("broker %d reported every log dir offline; fencing it", registration.id)
        return True
    return False


# ---- session expiry --------------------------------------------------------------------------


def maybe_fence_one_stale_broker(m: ControllerManagers, now_ms: int) -> ControllerResult[int | None]:
    """Fence the unfenced broker heard from longest ago if its session expired; the response is
    its id (None when no session expired). The shell calls this again until it answers None."""
    m.heartbeats.observe(now_ms)
    stale = m.heartbeats.stalest(m.cluster.unfenced_broker_ids(), now_ms)
    if stale is None:
        return ControllerResult.of([], None)
    log.info("fencing broker %d: its session expired", stale)
    records: list[ApiMessageAndVersion] = []
    m.replication.handle_broker_fenced(stale, records, OperationView())
    return ControllerResult.of(records, stale)
