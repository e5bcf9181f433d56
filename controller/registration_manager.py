"""A standby voter registers with the active controller (Kafka's ControllerRegistrationManager).

The active controller registers itself when it takes office; every other voter sends a
ControllerRegistration to whoever leads, until the committed metadata holds its registration as
this process means it (its migration readiness above all: the migration waits for every voter).
"""

from __future__ import annotations

import asyncio
import ssl as _ssl
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

import structlog

from controller.self_registration import registration_request, zk_migration_ready
from kraftpy.metadata import ControllerRegistration
from protocol.errors import Errors
from protocol.transport import RpcClient, RpcConnectionError
from protocol.transport.client import NO_RETRIES
from protocol.uuid import Uuid

if TYPE_CHECKING:
    from kraftpy.config import KafkaConfig

log = structlog.get_logger(__name__)

CHECK_INTERVAL_S = 1.0


class ControllerRegistrationManager:
    def __init__(
        self,
        cfg: KafkaConfig,
        voter_urls: Mapping[int, str],
        *,
        leader_id: Callable[[], int],
        active: Callable[[], bool],
        registered: Callable[[], ControllerRegistration | None],
        ssl: _ssl.SSLContext | None = None,
    ) -> None:
        self._cfg = cfg
        self._ssl = ssl
        self._urls = dict(voter_urls)
        self._leader_id = leader_id
        self._active = active
        self._registered = registered
        self.incarnation_id = Uuid.random()
        self._clients: dict[int, RpcClient] = {}
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="controller-registration")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        for client in self._clients.values():
            await client.close()

    def _needed(self) -> int | None:
        """The leader to register with, or None (leading, no leader known, or registered already)."""
        leader = self._leader_id()
        if self._active() or leader < 0 or leader == self._cfg.node_id or leader not in self._urls:
            return None
        reg = self._registered()
        if reg is not None and reg.zk_migration_ready == zk_migration_ready(self._cfg):
            return None
        return leader

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(CHECK_INTERVAL_S)
            leader = self._needed()
            if leader is None:
                continue
            client = self._clients.get(leader)
            if client is None:
                client = self._clients[leader] = RpcClient(
                    self._urls[leader], timeout=5.0, retry=NO_RETRIES, ssl=self._ssl
                )
            try:
                answer = await client.call(
                    "ControllerRegistration", registration_request(self._cfg, self.incarnation_id)
                )
            except (RpcConnectionError, TimeoutError) as e:
                log.debug("cannot reach the active controller to register", leader=leader, error=str(e))
                continue
            code = getattr(answer, "ErrorCode", 0)
            if code != Errors.NONE:
                log.info(
                    "controller registration refused; retrying",
                    leader=leader,
                    error=Errors(code).name,
                    message=getattr(answer, "ErrorMessage", None),
                )
            else:
                log.info(
                    "registered with the active controller",
                    leader=leader,
                    incarnation=str(self.incarnation_id),
                )
