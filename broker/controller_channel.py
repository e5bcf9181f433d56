"""The broker's one way to the active controller: every broker-to-controller RPC goes through here.

It has a client per voter and sends to the one `ControllerLeader` names. Answers teach it: a
CurrentLeader hint moves it to the leader at once; NOT_CONTROLLER or a connection error moves it to
the next voter, and the call is tried there straight away (once per voter), so a heartbeat that was
not answered reaches the new leader without waiting for the caller's own retry.
"""

from __future__ import annotations

import asyncio
import ssl as _ssl
from collections.abc import Mapping
from typing import Any

import structlog

from broker.core.controller_leader import ControllerLeader
from kraftpy.config import KafkaConfig
from kraftpy.security.tls import controller_peer_context
from protocol.errors import Errors
from protocol.transport import RpcClient, RpcConnectionError
from protocol.transport.client import NO_RETRIES

log = structlog.get_logger("broker.controller")

# After a round of voters that all refused, wait this long before the next round within one call.
ROUND_BACKOFF_S = 0.05


def controller_urls(cfg: KafkaConfig) -> dict[int, str]:
    """Every voter of controller.quorum.voters: node id -> base URL."""
    return {v.id: v.url for v in cfg.quorum_voters}


class ControllerChannel:
    def __init__(
        self,
        voters: Mapping[int, str],
        *,
        timeout: float,
        leader: ControllerLeader | None = None,
        ssl: _ssl.SSLContext | None = None,
    ) -> None:
        """`voters`: node id -> base URL of its controller listener. Channels that share `leader`
        (the metadata fetcher's, the lifecycle's, the data plane's) share what any of them learns.
        `ssl`: the client context when the controller listener is TLS."""
        self.leader = leader if leader is not None else ControllerLeader(list(voters))
        self._clients = {
            v: RpcClient(url, timeout=timeout, retry=NO_RETRIES, ssl=ssl) for v, url in voters.items()
        }

    @classmethod
    def for_config(
        cls, cfg: KafkaConfig, *, timeout: float, leader: ControllerLeader | None = None
    ) -> ControllerChannel:
        """A channel to controller.quorum.voters, over TLS when the controller listener is (ConfigError
        when its TLS files cannot be used)."""
        return cls(controller_urls(cfg), timeout=timeout, leader=leader, ssl=controller_peer_context(cfg))

    def learn(self, response: Any) -> None:
        hint = getattr(response, "CurrentLeader", None)
        if hint is None or hint.LeaderEpoch < 0:
            return
        epoch = self.leader.leader_epoch
        if self.leader.learn(hint.LeaderId, hint.LeaderEpoch) and hint.LeaderEpoch > epoch:
            log.info("controller leader changed", leader_id=hint.LeaderId, leader_epoch=hint.LeaderEpoch)

    async def call(self, api: str, request: Any, version: int | None = None, **kw: Any) -> Any:
        """Like RpcClient.call, to the active controller; tries each voter at most once."""
        last: BaseException | None = None
        response: Any = None
        for attempt in range(len(self._clients)):
            target = self.leader.target()
            try:
                response = await self._clients[target].call(api, request, version, **kw)
            except RpcConnectionError as e:
                last = e
                self.leader.failed(target)
                continue
            self.learn(response)
            if getattr(response, "ErrorCode", 0) == Errors.NOT_CONTROLLER:
                self.leader.failed(target)
                if attempt + 1 < len(self._clients):
                    await asyncio.sleep(ROUND_BACKOFF_S)
                continue
            return response
        if response is not None:
            return response
        assert last is not None
        raise last

    def sent_bytes(self, api: str) -> int:
        """Request body bytes of `api` posted to any voter."""
        return sum(c.sent_bytes[api] for c in self._clients.values())

    def describe(self) -> dict[str, int]:
        return {"leader_id": self.leader.leader_id, "leader_epoch": self.leader.leader_epoch}

    async def close(self) -> None:
        for client in self._clients.values():
            await client.close()
