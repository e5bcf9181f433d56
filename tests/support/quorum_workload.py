"""A client of a controller quorum, run inside a test's network namespace: a broker's heartbeats and
a stream of CreateTopics, whatever the controllers go through.

    python -m tests.support.quorum_workload --voters 1@H:P,2@H:P,3@H:P --cluster-id ID
        --out DIR --seconds N

It registers broker 100 and keeps it heartbeating, creates topics `t-0`, `t-1`, ... one at a time on
whichever controller is active, and appends the name of every topic whose creation was acknowledged
to `DIR/acknowledged.txt` (flushed at once). After N seconds it waits until every voter is healthy
and agree on the leader, and writes `DIR/final.json` with the least of their high watermarks.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path
from typing import Any

import aiohttp

from protocol.errors import Errors
from protocol.rpc.broker_heartbeat import BrokerHeartbeatRequest
from protocol.rpc.broker_registration import BrokerRegistrationRequest
from protocol.rpc.create_topics import CreateTopicsRequest
from protocol.transport import RpcClient, RpcConnectionError, RpcError
from protocol.transport.client import NO_RETRIES
from protocol.uuid import Uuid

BROKER_ID = 100


def broker_registration(cluster_id: str, broker_id: int) -> BrokerRegistrationRequest:
    """A one-dir broker's registration, for clients that stand in for a broker."""
    return BrokerRegistrationRequest(
        BrokerId=broker_id,
        ClusterId=cluster_id,
        IncarnationId=Uuid.random(),
        Listeners=[BrokerRegistrationRequest.Listener(Name="PLAINTEXT", Host="127.0.0.1", Port=9092)],
        Features=[
            BrokerRegistrationRequest.Feature(
                Name="metadata.version", MinSupportedVersion=1, MaxSupportedVersion=22
            )
        ],
        LogDirs=[Uuid.random()],
    )


class Workload:
    def __init__(self, voters: dict[int, str], cluster_id: str, out: Path) -> None:
        self.urls = {i: f"http://{hp}" for i, hp in voters.items()}
        self.clients = {i: RpcClient(u, timeout=3.0, retry=NO_RETRIES) for i, u in self.urls.items()}
        self.cluster_id = cluster_id
        self.out = out
        self.leader: int | None = None
        self.broker_epoch = -1
        self.acked = 0
        self.errors: dict[str, int] = {}

    async def health(self, session: aiohttp.ClientSession, voter: int) -> dict[str, Any] | None:
        try:
            async with session.get(
                f"{self.urls[voter]}/healthz", timeout=aiohttp.ClientTimeout(total=1)
            ) as r:
                return await r.json()
        except Exception:
            return None

    async def find_leader(self, session: aiohttp.ClientSession) -> int | None:
        for voter in self.urls:
            h = await self.health(session, voter)
            if h and h.get("active"):
                return voter
        return None

    def note(self, what: str) -> None:
        self.errors[what] = self.errors.get(what, 0) + 1

    async def call(self, api: str, req: Any) -> Any:
        if self.leader is None:
            raise RpcConnectionError(Errors.NOT_CONTROLLER, "no leader known")
        resp = await self.clients[self.leader].call(api, req)
        code = getattr(resp, "ErrorCode", 0)
        if code == Errors.NOT_CONTROLLER:
            self.leader = None
        return resp

    async def register(self) -> None:
        resp = await self.call("BrokerRegistration", broker_registration(self.cluster_id, BROKER_ID))
        if resp.ErrorCode == 0:
            self.broker_epoch = resp.BrokerEpoch

    async def heartbeats(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                if self.broker_epoch < 0:
                    await self.register()
                else:
                    resp = await self.call(
                        "BrokerHeartbeat",
                        BrokerHeartbeatRequest(
                            BrokerId=BROKER_ID, BrokerEpoch=self.broker_epoch, CurrentMetadataOffset=1 << 40
                        ),
                    )
                    if resp.ErrorCode == Errors.STALE_BROKER_EPOCH:
                        self.broker_epoch = -1
            except (RpcConnectionError, RpcError) as e:
                self.note(f"heartbeat:{e.code.name}")
                self.leader = None
            await asyncio.sleep(0.25)

    async def topics(self, stop: asyncio.Event, acked_file: Any) -> None:
        n = 0
        while not stop.is_set():
            name = f"t-{n}"
            try:
                resp = await self.call(
                    "CreateTopics",
                    CreateTopicsRequest(
                        Topics=[
                            CreateTopicsRequest.CreatableTopic(
                                Name=name, NumPartitions=1, ReplicationFactor=1
                            )
                        ]
                    ),
                )
                code = resp.Topics[0].ErrorCode if resp.Topics else resp.ErrorCode
                if code in (0, Errors.TOPIC_ALREADY_EXISTS):
                    if code == 0:
                        acked_file.write(name + "\n")
                        acked_file.flush()
                        self.acked += 1
                    n += 1
                else:
                    self.note(f"create:{Errors(code).name}")
                    await asyncio.sleep(0.05)
            except (RpcConnectionError, RpcError) as e:
                self.note(f"create:{e.code.name}")
                self.leader = None
                await asyncio.sleep(0.05)

    async def leader_finder(self, session: aiohttp.ClientSession, stop: asyncio.Event) -> None:
        while not stop.is_set():
            if self.leader is None:
                self.leader = await self.find_leader(session)
            await asyncio.sleep(0.05)

    async def run(self, seconds: float) -> None:
        self.out.mkdir(parents=True, exist_ok=True)
        stop = asyncio.Event()
        async with aiohttp.ClientSession() as session:
            with open(self.out / "acknowledged.txt", "a") as acked:
                tasks = [
                    asyncio.ensure_future(self.leader_finder(session, stop)),
                    asyncio.ensure_future(self.heartbeats(stop)),
                    asyncio.ensure_future(self.topics(stop, acked)),
                ]
                await asyncio.sleep(seconds)
                stop.set()
                await asyncio.gather(*tasks, return_exceptions=True)
            final = await self.converge(session)
        for c in self.clients.values():
            await c.close()
        final.update(acknowledged=self.acked, errors=self.errors)
        (self.out / "final.json").write_text(json.dumps(final))

    async def converge(self, session: aiohttp.ClientSession, timeout: float = 90.0) -> dict[str, Any]:
        """Once every voter is up, agrees on one leader and on the high watermark, that is the end."""
        deadline = time.monotonic() + timeout
        last: dict[int, Any] = {}
        while time.monotonic() < deadline:
            last = {v: await self.health(session, v) for v in self.urls}
            hs = list(last.values())
            if all(hs):
                leaders = {h["raft"]["leader_id"] for h in hs if h}
                active = [v for v, h in last.items() if h and h.get("active")]
                if len(leaders) == 1 and len(active) == 1:
                    # Below each voter's high watermark everything is committed: the least of them
                    # is a point every voter's log must agree up to. A voter restarted a moment ago
                    # knows no high watermark yet (0 until its first fetch), so that point must
                    # also reach the active leader's: the leader has committed its own epoch's
                    # start, so its high watermark is past every write acknowledged before.
                    low = min(h["high_watermark"] for h in hs if h)
                    if low >= last[active[0]]["high_watermark"]:
                        return {"converged": True, "leader": active[0], "high_watermark": low}
            await asyncio.sleep(0.1)
        return {"converged": False, "health": {str(k): v for k, v in last.items()}}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--voters", required=True)
    p.add_argument("--cluster-id", required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--seconds", type=float, required=True)
    a = p.parse_args()
    voters = {int(e.split("@")[0]): e.split("@")[1] for e in a.voters.split(",")}
    asyncio.run(Workload(voters, a.cluster_id, a.out).run(a.seconds))


if __name__ == "__main__":
    main()
