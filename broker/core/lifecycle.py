"""The broker's side of its registration with the controller (Kafka's BrokerLifecycleManager), without I/O.

It decides when to send BrokerRegistration and BrokerHeartbeat and what they carry, follows the
replies through the states of reference 7.10, and says when the broker must stop. The shell owns
the clock and the sockets: it calls `poll(now_ms)` and sends each request it returns, feeds the
reply (or None when none came back) to `on_registration_response` / `on_heartbeat_response`, and
sleeps until `next_wakeup_ms()` or until one of the `on_*`/`set_*` events arrives.

- Registration is retried with exponential backoff (100 ms x2, at most broker.session.timeout.ms,
  jitter 0.02); without a successful one within initial.broker.registration.timeout.ms the broker
  shuts down. A successful one is followed by a heartbeat at once.
- Heartbeats go every broker.heartbeat.interval.ms, one at a time. While the controller answers
  that the broker has not caught up yet, the next heartbeat goes 10 ms after the broker's metadata
  offset moves on instead (Kafka heartbeats every 10 ms while STARTING; only one carrying a new
  offset can get a different answer). `WantFence` stays set until
  the shell says the broker is ready to unfence (caught up, and under KIP-858 every hosted replica
  placed in the directory it really lives in); that change, and a directory failure, send the
  next heartbeat at once (or right after the one in flight).
- Every heartbeat carries every directory that failed since the process started; a failure counts
  as acknowledged only once a heartbeat carrying it gets ErrorCode NONE back (field bug 10). A
  failure still unacknowledged after log.dir.failure.timeout.ms, while the broker leads a
  partition in that directory, stops the broker (KIP-858; field bug 11).
- Controlled shutdown: WantShutDown on a heartbeat sent at once, repeated after 50 ms and then
  every interval, until the controller answers ShouldShutDown.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import structlog

from broker.core.backoff import ExponentialBackoff
from broker.core.broker_state import BrokerState
from protocol.errors import Errors
from protocol.rpc.broker_heartbeat import BrokerHeartbeatRequest, BrokerHeartbeatResponse
from protocol.rpc.broker_registration import BrokerRegistrationRequest, BrokerRegistrationResponse
from protocol.uuid import Uuid, describe_directory

log = structlog.get_logger("broker.lifecycle")

CAUGHT_UP_HEARTBEAT_DELAY_MS = 10
FIRST_SHUTDOWN_HEARTBEAT_DELAY_MS = 50


@dataclass(frozen=True)
class LifecycleConfig:
    heartbeat_interval_ms: int = 2000
    session_timeout_ms: int = 9000
    initial_registration_timeout_ms: int = 60000
    log_dir_failure_timeout_ms: int = 30000

    @classmethod
    def from_kafka_config(cls, cfg: Any) -> LifecycleConfig:
        return cls(
            heartbeat_interval_ms=cfg.broker_heartbeat_interval_ms,
            session_timeout_ms=cfg.broker_session_timeout_ms,
            initial_registration_timeout_ms=cfg.initial_broker_registration_timeout_ms,
            log_dir_failure_timeout_ms=cfg.log_dir_failure_timeout_ms,
        )


@dataclass(frozen=True)
class RegistrationInfo:
    """What BrokerRegistration says about this process, apart from its log dirs."""

    broker_id: int
    cluster_id: str
    incarnation_id: Uuid
    listeners: tuple[BrokerRegistrationRequest.Listener, ...] = ()
    features: tuple[BrokerRegistrationRequest.Feature, ...] = ()
    rack: str | None = None
    is_migrating_zk_broker: bool = False


@dataclass(frozen=True)
class SendRegistration:
    request: BrokerRegistrationRequest


@dataclass(frozen=True)
class SendHeartbeat:
    request: BrokerHeartbeatRequest


@dataclass(frozen=True)
class Shutdown:
    """The broker must stop. `clean`: a completed controlled shutdown (exit 0); else a failure."""

    reason: str
    clean: bool


Output = SendRegistration | SendHeartbeat | Shutdown


def _always(_dir: Uuid) -> bool:
    return True


class BrokerLifecycle:
    def __init__(
        self,
        info: RegistrationInfo,
        log_dirs: Sequence[Uuid],
        config: LifecycleConfig,
        *,
        rng: random.Random | None = None,
        leads_partitions_in_dir: Callable[[Uuid], bool] = _always,
    ) -> None:
        """`log_dirs`: the online log dir ids to register. `leads_partitions_in_dir(dir)` answers from
        the broker's latest metadata whether it leads any partition in that dir (field bug 11)."""
        self.info = info
        self.config = config
        self.rng = rng or random.Random()
        self.leads_partitions_in_dir = leads_partitions_in_dir
        self.backoff = ExponentialBackoff(100, 2, config.session_timeout_ms, 0.02)
        self.state = BrokerState.NOT_RUNNING
        self.broker_epoch = -1
        self.registered = False
        self.caught_up = False
        self.fenced = True
        self.ready_to_unfence = False
        self.metadata_offset = -1
        self._log_dirs = set(log_dirs)
        # dir id -> acknowledged by the controller
        self.offline_dirs: dict[Uuid, bool] = {}
        self._dir_deadlines: dict[Uuid, int] = {}
        # Past their deadline, still unacknowledged, but not led here when it passed: the broker may
        # learn only later that it leads there (metadata applied after the deadline), and must then
        # stop at once rather than never.
        self._overdue_dirs: set[Uuid] = set()
        self._registration_deadline_ms: int | None = None
        self._registration_failures = 0
        self._heartbeat_failures = 0
        self._in_flight: SendRegistration | SendHeartbeat | None = None
        self._next_send_ms: int | None = None
        self._send_after_in_flight = False
        self._behind = False
        """The last heartbeat answered that the broker has not caught up with the metadata."""
        self._shutdown_heartbeats = 0
        self._pending_shutdown: Shutdown | None = None
        self.shutdown: Shutdown | None = None
        self.reregistration_requested = False

    # ---- inputs from the shell -----------------------------------------------------------------

    def start(self, now_ms: int) -> None:
        if self.state is not BrokerState.NOT_RUNNING:
            return
        self.state = BrokerState.STARTING
        self._registration_deadline_ms = now_ms + self.config.initial_registration_timeout_ms
        self._next_send_ms = now_ms

    def set_metadata_offset(self, offset: int, now_ms: int | None = None) -> None:
        """The offset of the newest metadata the broker has applied (CurrentMetadataOffset).

        With `now_ms`, while a heartbeat has found the broker behind, the next one is brought
        forward to CAUGHT_UP_HEARTBEAT_DELAY_MS from now."""
        if offset <= self.metadata_offset:
            return
        self.metadata_offset = offset
        if (
            now_ms is not None
            and self._behind
            and self.state is BrokerState.STARTING
            and self._in_flight is None
            and self._next_send_ms is not None
            and self._next_send_ms > now_ms + CAUGHT_UP_HEARTBEAT_DELAY_MS
        ):
            self._next_send_ms = now_ms + CAUGHT_UP_HEARTBEAT_DELAY_MS

    def set_ready_to_unfence(self, ready: bool, now_ms: int) -> None:
        if ready == self.ready_to_unfence:
            return
        self.ready_to_unfence = ready
        log.info("ready to unfence" if ready else "wants to stay fenced", broker_id=self.info.broker_id)
        if self.registered:
            self._send_soon(now_ms)

    def on_dir_failure(self, dir_id: Uuid, now_ms: int) -> None:
        """A log dir went offline: report it at once, and from now on in every heartbeat."""
        if dir_id in self.offline_dirs:
            return
        self.offline_dirs[dir_id] = False
        self._log_dirs.discard(dir_id)
        self._dir_deadlines[dir_id] = now_ms + self.config.log_dir_failure_timeout_ms
        log.info("reporting offline log dir", dir_id=str(dir_id), registered=self.registered)
        if self.registered:
            self._send_soon(now_ms)

    def request_reregistration(self, now_ms: int) -> None:
        """Register again with the same incarnation (the registration in the metadata lacks dirs,
        KAFKA-16162); the controller keeps the epoch and fencing state of a same-incarnation resend."""
        if not self.registered or self.state in (BrokerState.SHUTTING_DOWN, BrokerState.NOT_RUNNING):
            return
        self.reregistration_requested = True
        self._send_soon(now_ms)

    def begin_controlled_shutdown(self, now_ms: int) -> None:
        if self.state in (
            BrokerState.PENDING_CONTROLLED_SHUTDOWN,
            BrokerState.SHUTTING_DOWN,
            BrokerState.NOT_RUNNING,
        ):
            return
        if not self.registered:
            self.state = BrokerState.SHUTTING_DOWN
            self._pending_shutdown = Shutdown("shut down before registering", clean=True)
            return
        log.info("beginning controlled shutdown", broker_id=self.info.broker_id)
        self.state = BrokerState.PENDING_CONTROLLED_SHUTDOWN
        self._shutdown_heartbeats = 0
        self._send_soon(now_ms)

    # ---- replies -------------------------------------------------------------------------------

    def on_registration_response(
        self, now_ms: int, response: BrokerRegistrationResponse | None, error: str | None = None
    ) -> None:
        if not isinstance(self._in_flight, SendRegistration):
            return
        self._in_flight = None
        if self.state is BrokerState.SHUTTING_DOWN:
            return
        if response is not None and response.ErrorCode == Errors.NONE:
            was_registered = self.registered
            self.registered = True
            self.reregistration_requested = False
            self.broker_epoch = response.BrokerEpoch
            self._registration_failures = 0
            log.info(
                "registered with the controller" if not was_registered else "registration refreshed",
                broker_id=self.info.broker_id,
                broker_epoch=self.broker_epoch,
                log_dirs=[str(d) for d in sorted(self._log_dirs)],
            )
            self._next_send_ms = now_ms
            self._send_after_in_flight = False
            return
        self._registration_failures += 1
        delay = self.backoff.backoff_ms(self._registration_failures, self.rng)
        log.warning(
            "broker registration failed",
            error=_describe(response, error),
            attempt=self._registration_failures,
            retry_in_ms=delay,
        )
        self._next_send_ms = now_ms + delay

    def on_heartbeat_response(
        self, now_ms: int, response: BrokerHeartbeatResponse | None, error: str | None = None
    ) -> None:
        sent = self._in_flight
        if not isinstance(sent, SendHeartbeat):
            return
        self._in_flight = None
        if self.state is BrokerState.SHUTTING_DOWN:
            return
        if response is None or response.ErrorCode != Errors.NONE:
            self._heartbeat_failures += 1
            delay = self.backoff.backoff_ms(self._heartbeat_failures, self.rng)
            log.warning(
                "broker heartbeat failed",
                error=_describe(response, error),
                attempt=self._heartbeat_failures,
                retry_in_ms=delay,
            )
            self._next_send_ms = now_ms + delay
            if self._send_after_in_flight:
                self._send_after_in_flight = False
                self._next_send_ms = now_ms
            return
        self._heartbeat_failures = 0
        for dir_id in sent.request.OfflineLogDirs:
            if self.offline_dirs.get(dir_id) is False:
                self.offline_dirs[dir_id] = True
                log.info("controller acknowledged offline log dir", dir_id=str(dir_id))
        self.caught_up = response.IsCaughtUp
        self.fenced = response.IsFenced
        self._behind = not response.IsCaughtUp
        interval = self.config.heartbeat_interval_ms
        delay = interval
        if self.state is BrokerState.STARTING:
            if response.IsCaughtUp:
                log.info("caught up with the metadata log", metadata_offset=self.metadata_offset)
                self.state = BrokerState.RECOVERY
                delay = CAUGHT_UP_HEARTBEAT_DELAY_MS
        elif self.state is BrokerState.RECOVERY:
            if not response.IsFenced:
                log.info("unfenced by the controller", broker_epoch=self.broker_epoch)
                self.state = BrokerState.RUNNING
        elif self.state is BrokerState.PENDING_CONTROLLED_SHUTDOWN:
            if response.ShouldShutDown:
                log.info("controller allowed the shutdown", broker_id=self.info.broker_id)
                self.state = BrokerState.SHUTTING_DOWN
                self._pending_shutdown = Shutdown("controlled shutdown complete", clean=True)
                self._next_send_ms = None
                return
            self._shutdown_heartbeats += 1
            if self._shutdown_heartbeats == 1:
                delay = FIRST_SHUTDOWN_HEARTBEAT_DELAY_MS
        self._next_send_ms = now_ms + delay
        if self._send_after_in_flight:
            self._send_after_in_flight = False
            self._next_send_ms = now_ms

    # ---- what to do now ------------------------------------------------------------------------

    def poll(self, now_ms: int) -> list[Output]:
        if self.shutdown is not None or self.state is BrokerState.NOT_RUNNING:
            return []
        failure = self._check_deadlines(now_ms)
        if failure is not None:
            self._pending_shutdown = failure
        if self._pending_shutdown is not None:
            self.shutdown, self._pending_shutdown = self._pending_shutdown, None
            self.state = BrokerState.SHUTTING_DOWN
            self._next_send_ms = None
            return [self.shutdown]
        if self._in_flight is not None or self._next_send_ms is None or now_ms < self._next_send_ms:
            return []
        self._next_send_ms = None
        out: SendRegistration | SendHeartbeat
        if not self.registered or self.reregistration_requested:
            out = SendRegistration(self.registration_request())
        else:
            out = SendHeartbeat(self.heartbeat_request())
        self._in_flight = out
        return [out]

    def next_wakeup_ms(self) -> int | None:
        if self.shutdown is not None or self.state is BrokerState.NOT_RUNNING:
            return None
        times: list[int] = list(self._dir_deadlines.values())
        if self._pending_shutdown is not None:
            return 0
        if self._in_flight is None and self._next_send_ms is not None:
            times.append(self._next_send_ms)
        if not self.registered and self._registration_deadline_ms is not None:
            times.append(self._registration_deadline_ms)
        return min(times) if times else None

    @property
    def in_flight(self) -> bool:
        return self._in_flight is not None

    # ---- requests ------------------------------------------------------------------------------

    def registration_request(self) -> BrokerRegistrationRequest:
        i = self.info
        return BrokerRegistrationRequest(
            BrokerId=i.broker_id,
            ClusterId=i.cluster_id,
            IncarnationId=i.incarnation_id,
            Listeners=list(i.listeners),
            Features=list(i.features),
            Rack=i.rack,
            IsMigratingZkBroker=i.is_migrating_zk_broker,
            LogDirs=sorted(self._log_dirs),
            PreviousBrokerEpoch=-1,
        )

    def heartbeat_request(self) -> BrokerHeartbeatRequest:
        return BrokerHeartbeatRequest(
            BrokerId=self.info.broker_id,
            BrokerEpoch=self.broker_epoch,
            CurrentMetadataOffset=max(self.metadata_offset, 0),
            WantFence=not self.ready_to_unfence,
            WantShutDown=self.state is BrokerState.PENDING_CONTROLLED_SHUTDOWN,
            OfflineLogDirs=sorted(self.offline_dirs),
        )

    # ---- internals -----------------------------------------------------------------------------

    def _send_soon(self, now_ms: int) -> None:
        if self._in_flight is not None:
            self._send_after_in_flight = True
        else:
            self._next_send_ms = now_ms

    def _check_deadlines(self, now_ms: int) -> Shutdown | None:
        if (
            not self.registered
            and self._registration_deadline_ms is not None
            and now_ms >= self._registration_deadline_ms
        ):
            return Shutdown(
                f"no successful broker registration within initial.broker.registration.timeout.ms="
                f"{self.config.initial_registration_timeout_ms}",
                clean=False,
            )
        for dir_id in sorted(self._overdue_dirs):
            if self.offline_dirs.get(dir_id):
                self._overdue_dirs.discard(dir_id)
            elif self.leads_partitions_in_dir(dir_id):
                return self._unreported_dir_shutdown(dir_id)
        for dir_id, deadline in sorted(self._dir_deadlines.items(), key=lambda kv: kv[1]):
            if now_ms < deadline:
                continue
            del self._dir_deadlines[dir_id]
            if self.offline_dirs.get(dir_id):
                continue
            if self.leads_partitions_in_dir(dir_id):
                return self._unreported_dir_shutdown(dir_id)
            self._overdue_dirs.add(dir_id)
            log.warning(
                "offline log dir still not acknowledged, but this broker leads no partition in it",
                dir_id=str(dir_id),
            )
        return None

    def _unreported_dir_shutdown(self, dir_id: Uuid) -> Shutdown:
        return Shutdown(
            f"could not report offline log dir {describe_directory(dir_id)} to the controller within "
            f"log.dir.failure.timeout.ms={self.config.log_dir_failure_timeout_ms} while leading "
            "partitions in it",
            clean=False,
        )


def _describe(response: Any, error: str | None) -> str:
    if response is None:
        return error or "no response"
    try:
        return Errors(response.ErrorCode).name
    except ValueError:
        return str(response.ErrorCode)
