"""BrokerLifecycleManager: sends what the broker's lifecycle and assignments queue decide, when due.

Kafka's BrokerLifecycleManager. The decisions are sans-IO (`broker.core.lifecycle.BrokerLifecycle`:
registration, heartbeats, offline dirs until acknowledged, controlled shutdown; and
`broker.core.assignments.AssignmentsManager`: batched AssignReplicasToDirs). One task polls both,
sends what is due, and sleeps until the next deadline or a `wake()`.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import Any

import structlog

from broker.controller_channel import ControllerChannel
from broker.core.assignments import AssignmentsManager, ReplicaView
from broker.core.broker_state import BrokerState
from broker.core.lifecycle import BrokerLifecycle, RegistrationInfo, SendHeartbeat, SendRegistration, Shutdown
from broker.log_dir_failure import LogDirFailure
from broker.tasks import BrokerTasks
from kraftpy.config import KafkaConfig
from kraftpy.storage.metadata_version import LATEST_LEVEL
from protocol.rpc.broker_registration import BrokerRegistrationRequest
from protocol.transport import RpcConnectionError, RpcError
from protocol.uuid import Uuid

log = structlog.get_logger("broker.lifecycle")

SUPPORTED_FEATURES = (
    ("metadata.version", 1, LATEST_LEVEL),
    ("kraft.version", 0, 1),
    ("group.version", 0, 1),
    ("transaction.version", 0, 2),
)


def registration_info(cfg: KafkaConfig, cluster_id: str, incarnation_id: Uuid) -> RegistrationInfo:
    """What this broker registers with: its listeners (not the controllers'), features and rack."""
    controller_names = set(cfg.controller_listener_names or [])
    listeners = tuple(
        BrokerRegistrationRequest.Listener(
            Name=e.name,
            Host=e.host or "127.0.0.1",
            Port=e.port,
            SecurityProtocol=cfg.security_protocol(e.name),
        )
        for e in cfg.advertised_listener_list
        if e.name not in controller_names
    )
    features = tuple(
        BrokerRegistrationRequest.Feature(Name=n, MinSupportedVersion=lo, MaxSupportedVersion=hi)
        for n, lo, hi in SUPPORTED_FEATURES
    )
    return RegistrationInfo(
        broker_id=cfg.node_id,
        cluster_id=cluster_id,
        incarnation_id=incarnation_id,
        listeners=listeners,
        features=features,
        rack=cfg.broker_rack,
    )


class BrokerLifecycleManager:
    def __init__(
        self,
        lifecycle: BrokerLifecycle,
        assignments: AssignmentsManager,
        client: ControllerChannel,
        tasks: BrokerTasks,
        *,
        now_ms: Callable[[], int],
        replica_view: Callable[[], ReplicaView],
        on_heartbeat: Callable[[], None],
        on_assignments: Callable[[], None],
        on_shutdown: Callable[[bool, str], None],
        started_at: float,
    ) -> None:
        """`on_heartbeat`: a heartbeat was answered (the broker may have moved to RECOVERY or
        RUNNING); `on_assignments`: an AssignReplicasToDirs was answered; `on_shutdown(clean,
        reason)`: the lifecycle is over; `started_at`: process start, for "seconds to unfence"."""
        self.lifecycle = lifecycle
        self.assignments = assignments
        self._client = client
        self._tasks = tasks
        self._now_ms = now_ms
        self._replica_view = replica_view
        self._on_heartbeat = on_heartbeat
        self._on_assignments = on_assignments
        self._on_shutdown = on_shutdown
        self.started_at = started_at
        self.unfenced_at: float | None = None
        self._wakeup = asyncio.Event()

    def start(self) -> None:
        self.lifecycle.start(self._now_ms())
        self._tasks.spawn(self._run(), "lifecycle")

    def wake(self) -> None:
        self._wakeup.set()

    def on_dir_failure(self, failure: LogDirFailure) -> None:
        """Subscribed to the LogDirFailureChannel: OfflineLogDirs in a heartbeat sent at once."""
        if failure.dir_id is not None:
            self.lifecycle.on_dir_failure(failure.dir_id, self._now_ms())
        self.wake()

    def begin_controlled_shutdown(self) -> None:
        self.lifecycle.begin_controlled_shutdown(self._now_ms())
        self.wake()

    async def _run(self) -> None:
        lc = self.lifecycle
        while True:
            self._wakeup.clear()
            now = self._now_ms()
            for out in lc.poll(now):
                if isinstance(out, SendRegistration):
                    self._tasks.spawn(self._send_registration(out), "broker-registration")
                elif isinstance(out, SendHeartbeat):
                    self._tasks.spawn(self._send_heartbeat(out), "broker-heartbeat")
                elif isinstance(out, Shutdown):
                    self._on_shutdown(out.clean, out.reason)
                    return
            epoch = lc.broker_epoch if lc.registered else -1
            req = self.assignments.poll(now, self._replica_view(), epoch)
            if req is not None:
                self._tasks.spawn(self._send_assignments(req), "assign-replicas-to-dirs")
            wakes = [w for w in (lc.next_wakeup_ms(), self.assignments.next_wakeup_ms()) if w is not None]
            timeout = max(0, min(wakes) - now) / 1000 if wakes else None
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wakeup.wait(), timeout)

    async def _call(self, api: str, req: Any) -> tuple[Any, str | None]:
        try:
            return await self._client.call(api, req), None
        except (RpcConnectionError, RpcError) as e:
            return None, str(e)

    async def _send_registration(self, out: SendRegistration) -> None:
        resp, err = await self._call("BrokerRegistration", out.request)
        self.lifecycle.on_registration_response(self._now_ms(), resp, err)
        self.wake()

    async def _send_heartbeat(self, out: SendHeartbeat) -> None:
        resp, err = await self._call("BrokerHeartbeat", out.request)
        lc = self.lifecycle
        lc.on_heartbeat_response(self._now_ms(), resp, err)
        if lc.state is BrokerState.RUNNING and self.unfenced_at is None:
            self.unfenced_at = time.monotonic()
            log.info(
                "broker is running (unfenced)",
                seconds_since_start=round(self.unfenced_at - self.started_at, 3),
            )
        self._on_heartbeat()
        self.wake()

    @property
    def assignment_bytes(self) -> int:
        """Bytes of AssignReplicasToDirs bodies posted (msgpack; a request sent to two voters counts twice), for the startup benchmark."""
        return self._client.sent_bytes("AssignReplicasToDirs")

    async def _send_assignments(self, req: Any) -> None:
        resp, err = await self._call("AssignReplicasToDirs", req)
        self.assignments.on_response(self._now_ms(), resp, err, req)
        self._on_assignments()
        self.wake()
