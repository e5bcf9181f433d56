"""BrokerLifecycle with a fake clock: registration, heartbeats, fencing, offline dirs, shutdown."""

from __future__ import annotations

import random

import pytest

from broker.core.broker_state import BrokerState
from broker.core.lifecycle import (
    BrokerLifecycle,
    LifecycleConfig,
    RegistrationInfo,
    SendHeartbeat,
    SendRegistration,
    Shutdown,
)
from protocol.errors import Errors
from protocol.rpc.broker_heartbeat import BrokerHeartbeatResponse
from protocol.rpc.broker_registration import BrokerRegistrationResponse
from protocol.uuid import Uuid
from tests.broker_core.helpers import D1, D2, D3, FakeClock

CONFIG = LifecycleConfig(
    heartbeat_interval_ms=2000,
    session_timeout_ms=9000,
    initial_registration_timeout_ms=60000,
    log_dir_failure_timeout_ms=30000,
)
INFO = RegistrationInfo(broker_id=1, cluster_id="cluster-a", incarnation_id=Uuid.from_longs(7, 7))


def ok(**kw: object) -> BrokerHeartbeatResponse:
    return BrokerHeartbeatResponse(ErrorCode=0, **kw)


class Harness:
    def __init__(self, leads: bool = True, dirs: tuple[Uuid, ...] = (D3, D1, D2)) -> None:
        self.clock = FakeClock()
        self.leads = leads
        self.lc = BrokerLifecycle(
            INFO, dirs, CONFIG, rng=random.Random(5), leads_partitions_in_dir=lambda d: self.leads
        )
        self.lc.start(self.clock.now_ms)

    def poll(self) -> list[object]:
        return self.lc.poll(self.clock.now_ms)

    def one(self, kind: type) -> object:
        out = self.poll()
        assert len(out) == 1 and isinstance(out[0], kind), out
        return out[0]

    def register(self, epoch: int = 42) -> None:
        self.one(SendRegistration)
        self.lc.on_registration_response(
            self.clock.now_ms, BrokerRegistrationResponse(ErrorCode=0, BrokerEpoch=epoch)
        )

    def heartbeat(self, resp: BrokerHeartbeatResponse | None) -> SendHeartbeat:
        hb = self.one(SendHeartbeat)
        self.lc.on_heartbeat_response(self.clock.now_ms, resp)
        return hb  # type: ignore[return-value]

    def advance_to_wakeup(self) -> None:
        wake = self.lc.next_wakeup_ms()
        assert wake is not None
        self.clock.now_ms = max(self.clock.now_ms, wake)


def test_registration_is_sent_at_once_with_sorted_online_dirs_and_the_incarnation() -> None:
    h = Harness()
    assert h.lc.state is BrokerState.STARTING
    reg = h.one(SendRegistration).request  # type: ignore[attr-defined]
    assert reg.BrokerId == 1 and reg.ClusterId == "cluster-a"
    assert reg.IncarnationId == INFO.incarnation_id
    assert reg.LogDirs == sorted([D1, D2, D3])
    assert h.poll() == []  # one request at a time


def test_registration_retries_with_exponential_backoff_then_gives_up() -> None:
    h = Harness()
    start = h.clock.now_ms
    delays = []
    while True:
        out = h.poll()
        if out and isinstance(out[0], Shutdown):
            break
        if out:
            assert isinstance(out[0], SendRegistration)
            sent_at = h.clock.now_ms
            h.lc.on_registration_response(h.clock.now_ms, None, "connection refused")
            delays.append(h.lc.next_wakeup_ms() - sent_at)  # type: ignore[operator]
        h.advance_to_wakeup()
    shutdown = out[0]
    assert not shutdown.clean and "initial.broker.registration.timeout.ms" in shutdown.reason
    assert h.clock.now_ms - start == CONFIG.initial_registration_timeout_ms
    # 100 ms x2 with 2% jitter, capped at the session timeout
    assert 196 <= delays[0] <= 204 and 392 <= delays[1] <= 408
    assert max(delays) <= CONFIG.session_timeout_ms
    assert max(delays) >= 0.98 * CONFIG.session_timeout_ms  # the cap is reached
    assert h.lc.state is BrokerState.SHUTTING_DOWN
    assert h.poll() == []


def test_registration_error_code_is_retried_not_fatal() -> None:
    h = Harness()
    h.one(SendRegistration)
    h.lc.on_registration_response(h.clock.now_ms, BrokerRegistrationResponse(ErrorCode=Errors.NOT_CONTROLLER))
    assert not h.lc.registered
    h.advance_to_wakeup()
    h.register()
    assert h.lc.registered and h.lc.broker_epoch == 42


def test_heartbeats_after_registration_move_through_starting_recovery_running() -> None:
    h = Harness()
    h.register()
    hb = h.heartbeat(ok(IsCaughtUp=False, IsFenced=True)).request
    assert hb.BrokerEpoch == 42 and hb.WantFence and not hb.WantShutDown
    assert h.lc.state is BrokerState.STARTING
    assert h.lc.next_wakeup_ms() == h.clock.now_ms + CONFIG.heartbeat_interval_ms
    h.advance_to_wakeup()
    h.lc.set_metadata_offset(17)
    hb = h.heartbeat(ok(IsCaughtUp=True, IsFenced=True)).request
    assert hb.CurrentMetadataOffset == 17
    assert h.lc.state is BrokerState.RECOVERY
    assert h.lc.next_wakeup_ms() == h.clock.now_ms + 10
    h.advance_to_wakeup()
    h.heartbeat(ok(IsCaughtUp=True, IsFenced=True))
    assert h.lc.state is BrokerState.RECOVERY


def test_while_behind_the_next_heartbeat_follows_the_metadata_offset_moving_on() -> None:
    h = Harness()
    h.register()
    h.lc.set_metadata_offset(5, h.clock.now_ms)
    h.heartbeat(ok(IsCaughtUp=False, IsFenced=True))
    assert h.lc.next_wakeup_ms() == h.clock.now_ms + CONFIG.heartbeat_interval_ms
    h.clock.advance(100)
    h.lc.set_metadata_offset(5, h.clock.now_ms)  # no news: the interval stands
    assert h.lc.next_wakeup_ms() == h.clock.now_ms - 100 + CONFIG.heartbeat_interval_ms
    h.lc.set_metadata_offset(9, h.clock.now_ms)
    assert h.lc.next_wakeup_ms() == h.clock.now_ms + 10
    h.advance_to_wakeup()
    assert h.heartbeat(ok(IsCaughtUp=True, IsFenced=True)).request.CurrentMetadataOffset == 9
    assert h.lc.state is BrokerState.RECOVERY
    # caught up: metadata coming in no longer hurries the heartbeats
    h.advance_to_wakeup()
    h.heartbeat(ok(IsCaughtUp=True, IsFenced=True))
    h.lc.set_metadata_offset(12, h.clock.now_ms)
    assert h.lc.next_wakeup_ms() == h.clock.now_ms + CONFIG.heartbeat_interval_ms


def test_a_heartbeat_in_flight_is_not_doubled_when_the_offset_moves() -> None:
    h = Harness()
    h.register()
    h.heartbeat(ok(IsCaughtUp=False, IsFenced=True))
    h.advance_to_wakeup()
    h.one(SendHeartbeat)
    h.lc.set_metadata_offset(3, h.clock.now_ms)
    assert h.poll() == []
    assert h.lc.metadata_offset == 3


def test_ready_to_unfence_sends_a_heartbeat_at_once_without_want_fence() -> None:
    h = Harness()
    h.register()
    h.heartbeat(ok(IsCaughtUp=True, IsFenced=True))
    h.advance_to_wakeup()
    h.heartbeat(ok(IsCaughtUp=True, IsFenced=True))
    assert h.poll() == []
    h.lc.set_ready_to_unfence(True, h.clock.now_ms)
    hb = h.heartbeat(ok(IsCaughtUp=True, IsFenced=False)).request
    assert not hb.WantFence
    assert h.lc.state is BrokerState.RUNNING and not h.lc.fenced


def test_ready_to_unfence_during_a_heartbeat_sends_the_next_right_after_it() -> None:
    h = Harness()
    h.register()
    h.one(SendHeartbeat)
    h.lc.set_ready_to_unfence(True, h.clock.now_ms)
    assert h.poll() == []
    h.lc.on_heartbeat_response(h.clock.now_ms, ok(IsCaughtUp=True))
    assert not h.one(SendHeartbeat).request.WantFence  # type: ignore[attr-defined]


def test_failed_dir_is_reported_at_once_and_in_every_heartbeat_after() -> None:
    h = Harness()
    h.register()
    h.heartbeat(ok(IsCaughtUp=True, IsFenced=False))
    assert h.poll() == []  # next one due in 10 ms
    h.lc.on_dir_failure(D2, h.clock.now_ms)
    hb = h.heartbeat(ok(IsCaughtUp=True, IsFenced=False)).request
    assert hb.OfflineLogDirs == [D2]
    for _ in range(3):
        h.advance_to_wakeup()
        assert h.heartbeat(ok(IsCaughtUp=True, IsFenced=False)).request.OfflineLogDirs == [D2]
    h.lc.on_dir_failure(D1, h.clock.now_ms)
    assert h.heartbeat(ok()).request.OfflineLogDirs == sorted([D1, D2])


def test_offline_dir_is_acknowledged_only_by_a_successful_heartbeat() -> None:
    """Field bug 10 (KAFKA-15451): cleared only after a successful heartbeat."""
    h = Harness()
    h.register()
    h.heartbeat(ok())
    h.lc.on_dir_failure(D2, h.clock.now_ms)
    h.heartbeat(None)  # nothing came back
    assert h.lc.offline_dirs == {D2: False}
    h.advance_to_wakeup()
    h.heartbeat(BrokerHeartbeatResponse(ErrorCode=Errors.NOT_CONTROLLER))
    assert h.lc.offline_dirs == {D2: False}
    h.advance_to_wakeup()
    h.heartbeat(ok())
    assert h.lc.offline_dirs == {D2: True}


def test_dir_failing_while_a_heartbeat_is_in_flight_is_acknowledged_only_by_a_later_one() -> None:
    h = Harness()
    h.register()
    h.one(SendHeartbeat)
    h.lc.on_dir_failure(D2, h.clock.now_ms)
    h.lc.on_heartbeat_response(h.clock.now_ms, ok())  # that heartbeat did not carry D2
    assert h.lc.offline_dirs == {D2: False}
    hb = h.one(SendHeartbeat).request  # type: ignore[attr-defined]
    assert hb.OfflineLogDirs == [D2]


def test_dir_failure_before_registration_is_left_out_of_log_dirs_and_reported_after() -> None:
    h = Harness()
    h.lc.on_dir_failure(D3, h.clock.now_ms)
    reg = h.one(SendRegistration).request  # type: ignore[attr-defined]
    assert reg.LogDirs == sorted([D1, D2])
    h.lc.on_registration_response(h.clock.now_ms, BrokerRegistrationResponse(ErrorCode=0, BrokerEpoch=5))
    assert h.one(SendHeartbeat).request.OfflineLogDirs == [D3]  # type: ignore[attr-defined]


@pytest.mark.parametrize("leads", [True, False])
def test_unacknowledged_dir_failure_shuts_the_broker_down_only_while_leading_there(leads: bool) -> None:
    """Field bug 11 (KAFKA-15649) with KIP-858's condition on leadership."""
    h = Harness(leads=leads)
    h.register()
    h.heartbeat(ok())
    failed_at = h.clock.now_ms
    h.lc.on_dir_failure(D2, failed_at)
    while True:
        out = h.poll()
        if out and isinstance(out[0], Shutdown):
            break
        if out:
            h.lc.on_heartbeat_response(h.clock.now_ms, None, "controller unreachable")
        if h.clock.now_ms > failed_at + 60_000:
            break
        h.advance_to_wakeup()
    if leads:
        assert isinstance(out[0], Shutdown) and not out[0].clean
        assert "log.dir.failure.timeout.ms" in out[0].reason
        assert h.clock.now_ms == failed_at + CONFIG.log_dir_failure_timeout_ms
    else:
        assert h.lc.shutdown is None
        assert h.lc.offline_dirs == {D2: False}


def test_acknowledged_dir_failure_never_shuts_the_broker_down() -> None:
    h = Harness(leads=True)
    h.register()
    h.heartbeat(ok())
    h.lc.on_dir_failure(D2, h.clock.now_ms)
    h.heartbeat(ok())
    h.clock.advance(CONFIG.log_dir_failure_timeout_ms + 1)
    out = h.poll()
    assert all(not isinstance(o, Shutdown) for o in out)
    assert h.lc.shutdown is None


def test_controlled_shutdown_waits_for_should_shut_down() -> None:
    h = Harness()
    h.register()
    h.heartbeat(ok(IsCaughtUp=True))
    h.advance_to_wakeup()
    h.lc.set_ready_to_unfence(True, h.clock.now_ms)
    h.heartbeat(ok(IsCaughtUp=True, IsFenced=False))
    assert h.lc.state is BrokerState.RUNNING
    h.lc.begin_controlled_shutdown(h.clock.now_ms)
    assert h.lc.state is BrokerState.PENDING_CONTROLLED_SHUTDOWN
    hb = h.heartbeat(ok(IsFenced=False, ShouldShutDown=False)).request
    assert hb.WantShutDown and not hb.WantFence
    assert h.lc.next_wakeup_ms() == h.clock.now_ms + 50
    h.advance_to_wakeup()
    h.heartbeat(ok(IsFenced=False, ShouldShutDown=False))
    assert h.lc.next_wakeup_ms() == h.clock.now_ms + CONFIG.heartbeat_interval_ms
    h.advance_to_wakeup()
    h.heartbeat(ok(IsFenced=True, ShouldShutDown=True))
    assert h.lc.state is BrokerState.SHUTTING_DOWN
    out = h.poll()
    assert out == [Shutdown("controlled shutdown complete", clean=True)]
    assert h.poll() == [] and h.lc.next_wakeup_ms() is None


def test_controlled_shutdown_before_registration_stops_at_once() -> None:
    h = Harness()
    h.lc.begin_controlled_shutdown(h.clock.now_ms)
    out = h.poll()
    assert len(out) == 1 and isinstance(out[0], Shutdown) and out[0].clean


def test_heartbeat_failures_back_off_and_do_not_reregister() -> None:
    h = Harness()
    h.register()
    h.heartbeat(BrokerHeartbeatResponse(ErrorCode=Errors.STALE_BROKER_EPOCH))
    assert 196 <= h.lc.next_wakeup_ms() - h.clock.now_ms <= 204  # type: ignore[operator]
    h.advance_to_wakeup()
    assert isinstance(h.poll()[0], SendHeartbeat)


def test_reregistration_keeps_the_incarnation() -> None:
    h = Harness()
    h.register(epoch=42)
    h.heartbeat(ok())
    h.lc.request_reregistration(h.clock.now_ms)
    reg = h.one(SendRegistration).request  # type: ignore[attr-defined]
    assert reg.IncarnationId == INFO.incarnation_id
    h.lc.on_registration_response(h.clock.now_ms, BrokerRegistrationResponse(ErrorCode=0, BrokerEpoch=42))
    assert isinstance(h.poll()[0], SendHeartbeat)


def test_dir_failure_deadline_fires_on_time_while_every_heartbeat_hangs() -> None:
    """A heartbeat that never returns (controller gone, RPC retrying) must not hold the deadline."""
    h = Harness(leads=True)
    h.register()
    h.heartbeat(ok())
    failed_at = h.clock.now_ms
    h.lc.on_dir_failure(D2, failed_at)
    assert isinstance(h.one(SendHeartbeat), SendHeartbeat)  # and it hangs: no response ever
    assert h.lc.next_wakeup_ms() == failed_at + CONFIG.log_dir_failure_timeout_ms
    h.clock.now_ms = failed_at + CONFIG.log_dir_failure_timeout_ms - 1
    assert h.poll() == []
    h.advance_to_wakeup()
    out = h.poll()
    assert len(out) == 1 and isinstance(out[0], Shutdown) and not out[0].clean
    assert h.clock.now_ms == failed_at + CONFIG.log_dir_failure_timeout_ms


def test_overdue_dir_failure_stops_the_broker_once_it_learns_it_leads_there() -> None:
    """The deadline can pass before the broker has applied the metadata that makes it leader in
    the failed dir (the controller dead meanwhile): it stops as soon as it learns, not never."""
    h = Harness(leads=False)
    h.register()
    h.heartbeat(ok())
    failed_at = h.clock.now_ms
    h.lc.on_dir_failure(D2, failed_at)
    h.one(SendHeartbeat)  # hangs
    h.clock.now_ms = failed_at + CONFIG.log_dir_failure_timeout_ms
    assert h.poll() == []
    assert h.lc.next_wakeup_ms() is None  # nothing to wake for: no busy loop while it waits
    h.leads = True  # late metadata: it led partitions in D2 all along
    h.clock.advance(1)
    out = h.poll()
    assert len(out) == 1 and isinstance(out[0], Shutdown) and not out[0].clean
    assert "log.dir.failure.timeout.ms" in out[0].reason


def test_overdue_dir_failure_acknowledged_later_never_stops_the_broker() -> None:
    h = Harness(leads=False)
    h.register()
    h.heartbeat(ok())
    h.lc.on_dir_failure(D2, h.clock.now_ms)
    h.clock.advance(CONFIG.log_dir_failure_timeout_ms)
    sent = h.one(SendHeartbeat)
    assert D2 in sent.request.OfflineLogDirs  # type: ignore[attr-defined]
    h.lc.on_heartbeat_response(h.clock.now_ms, ok())
    h.leads = True
    h.clock.advance(1)
    assert all(not isinstance(o, Shutdown) for o in h.poll())
    assert h.lc.shutdown is None
