"""The broker's channel to the active controller, against real HTTP servers on 127.0.0.1.

One controller answers like a non-active voter (NOT_CONTROLLER), one is dead (its port closed), one
is active: a call lands on the active one within the same call, and a CurrentLeader hint in a Fetch
answer sends the next call straight there.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from aiohttp import web

from broker.controller_channel import ControllerChannel
from protocol.errors import Errors, KafkaError
from protocol.rpc.broker_heartbeat import BrokerHeartbeatRequest, BrokerHeartbeatResponse
from protocol.rpc.current_leader import LeaderIdAndEpoch
from protocol.rpc.fetch import FetchRequest, FetchResponse
from protocol.transport import create_app, start_server
from tools.cluster.launcher import free_port

Served = list[tuple[int, str]]


@pytest.fixture
async def controllers() -> AsyncIterator[Callable[..., Any]]:
    runners: list[web.AppRunner] = []

    async def start(node_id: int, *, active: bool, served: Served, leader: tuple[int, int]) -> str:
        async def heartbeat(req: BrokerHeartbeatRequest, version: int) -> BrokerHeartbeatResponse:
            served.append((node_id, "BrokerHeartbeat"))
            if not active:
                raise KafkaError(Errors.NOT_CONTROLLER, "not the active controller")
            return BrokerHeartbeatResponse(IsFenced=False)

        async def fetch(req: FetchRequest, version: int) -> FetchResponse:
            served.append((node_id, "Fetch"))
            hint = LeaderIdAndEpoch(LeaderId=leader[0], LeaderEpoch=leader[1])
            code = Errors.NONE if active else Errors.NOT_LEADER_OR_FOLLOWER
            return FetchResponse(ErrorCode=int(code), CurrentLeader=hint)

        runner, port = await start_server(create_app({"BrokerHeartbeat": heartbeat, "Fetch": fetch}))
        runners.append(runner)
        return f"http://127.0.0.1:{port}"

    yield start
    for runner in runners:
        await runner.cleanup()


async def test_a_call_finds_the_active_controller_past_a_refusal_and_a_dead_voter(
    controllers: Callable[..., Any],
) -> None:
    served: Served = []
    voters = {
        1: await controllers(1, active=False, served=served, leader=(3, 4)),
        2: f"http://127.0.0.1:{free_port()}",  # nobody listens: a dead controller
        3: await controllers(3, active=True, served=served, leader=(3, 4)),
    }
    channel = ControllerChannel(voters, timeout=2.0)
    try:
        resp = await channel.call("BrokerHeartbeat", BrokerHeartbeatRequest(BrokerId=7, BrokerEpoch=1))
        assert resp.ErrorCode == 0 and resp.IsFenced is False
        assert served == [(1, "BrokerHeartbeat"), (3, "BrokerHeartbeat")]
        assert channel.leader.target() == 3
    finally:
        await channel.close()


async def test_a_fetch_hint_sends_the_next_call_to_the_leader(controllers: Callable[..., Any]) -> None:
    served: Served = []
    voters = {
        1: await controllers(1, active=False, served=served, leader=(2, 9)),
        2: await controllers(2, active=True, served=served, leader=(2, 9)),
    }
    channel = ControllerChannel(voters, timeout=2.0)
    try:
        first = await channel.call("Fetch", FetchRequest(ReplicaId=7, CurrentLeaderEpoch=8))
        # The fetcher sees the follower's answer (its state machine moves to epoch 9) ...
        assert first.ErrorCode == Errors.NOT_LEADER_OR_FOLLOWER
        assert channel.describe() == {"leader_id": 2, "leader_epoch": 9}
        # ... and its next fetch, and any heartbeat, go to the leader at once.
        assert (await channel.call("Fetch", FetchRequest(ReplicaId=7, CurrentLeaderEpoch=9))).ErrorCode == 0
        await channel.call("BrokerHeartbeat", BrokerHeartbeatRequest(BrokerId=7, BrokerEpoch=1))
        assert served == [(1, "Fetch"), (2, "Fetch"), (2, "BrokerHeartbeat")]
    finally:
        await channel.close()


async def test_when_no_voter_is_reachable_the_connection_error_reaches_the_caller() -> None:
    from protocol.transport import RpcConnectionError

    channel = ControllerChannel({1: f"http://127.0.0.1:{free_port()}"}, timeout=1.0)
    try:
        with pytest.raises(RpcConnectionError):
            await channel.call("BrokerHeartbeat", BrokerHeartbeatRequest(BrokerId=7, BrokerEpoch=1))
    finally:
        await channel.close()
