"""A real process serving /rpc/...: msgpack and JSON, refused requests, and it keeps serving."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import msgpack
import pytest

from protocol.errors import Errors
from protocol.rpc import (
    AssignReplicasToDirsRequest,
    BrokerHeartbeatRequest,
    BrokerRegistrationRequest,
)
from protocol.transport import RpcClient
from protocol.uuid import Uuid

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def demo_server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    err = (tmp_path / "server.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.support.demo_server", "--port", "0"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=err,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().decode()
        assert line.startswith("LISTENING "), (
            f"server did not start: {line!r} {(tmp_path / 'server.log').read_text()}"
        )
        yield f"http://127.0.0.1:{int(line.split()[1])}", tmp_path / "server.log"
        assert proc.poll() is None, "the server process died"
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        err.close()


async def _raw(url: str, body: bytes, ctype: str, version: str | None = None) -> tuple[int, object]:
    headers = {"Content-Type": ctype}
    if version:
        headers["Kafka-Api-Version"] = version
    async with aiohttp.ClientSession() as s, s.post(url, data=body, headers=headers) as r:
        raw = await r.read()
        return r.status, (msgpack.unpackb(raw) if "msgpack" in r.content_type else json.loads(raw))


async def test_real_process_msgpack_and_json(demo_server: tuple[str, Path]) -> None:
    url, _ = demo_server
    inc = Uuid.random()
    reg = BrokerRegistrationRequest(BrokerId=7, ClusterId="demo", IncarnationId=inc, LogDirs=[Uuid.random()])
    async with RpcClient(url) as msgpack_client, RpcClient(url, encoding="json") as json_client:
        for c in (msgpack_client, json_client):
            resp = await c.call("BrokerRegistration", reg)
            assert resp.ErrorCode == 0 and resp.BrokerEpoch == 1007
            hb = await c.call(
                "BrokerHeartbeat", BrokerHeartbeatRequest(BrokerId=7, BrokerEpoch=1007, WantFence=False)
            )
            assert hb.IsCaughtUp and not hb.IsFenced
            R = AssignReplicasToDirsRequest
            d, t = Uuid.random(), Uuid.random()
            a = await c.call(
                "AssignReplicasToDirs",
                R(
                    BrokerId=7,
                    BrokerEpoch=1007,
                    Directories=[
                        R.DirectoryData(
                            Id=d,
                            Topics=[R.TopicData(TopicId=t, Partitions=[R.PartitionData(PartitionIndex=3)])],
                        )
                    ],
                ),
            )
            assert a.Directories[0].Id == d and a.Directories[0].Topics[0].TopicId == t
            assert a.Directories[0].Topics[0].Partitions[0].PartitionIndex == 3

    # the wire itself: Uuid is 16-byte bin in msgpack and 22-char text in JSON
    status, body = await _raw(
        f"{url}/rpc/BrokerRegistration", msgpack.packb(reg.to_wire(4, "msgpack")), "application/msgpack"
    )
    assert status == 200 and body == {"ThrottleTimeMs": 0, "ErrorCode": 0, "BrokerEpoch": 1007}
    wire = reg.to_wire(4, "json")
    assert wire["IncarnationId"] == str(inc) and len(wire["IncarnationId"]) == 22
    status, body = await _raw(f"{url}/rpc/BrokerRegistration", json.dumps(wire).encode(), "application/json")
    assert status == 200 and body["BrokerEpoch"] == 1007


async def test_real_process_refuses_bad_requests_and_keeps_serving(demo_server: tuple[str, Path]) -> None:
    url, log_path = demo_server
    for api in ("BrokerRegistration", "BrokerHeartbeat", "AssignReplicasToDirs"):
        for body, ctype in (
            (b"\x00garbage\xff\xfe", "application/msgpack"),
            (b"garbage{", "application/json"),
        ):
            status, data = await _raw(f"{url}/rpc/{api}", body, ctype)
            assert status == 400, (api, ctype)
            assert (
                isinstance(data, dict)
                and data["ErrorCode"] == Errors.INVALID_REQUEST
                and data["ErrorMessage"]
            )

    status, data = await _raw(f"{url}/rpc/NoSuchApi", b"{}", "application/json")
    assert status == 404 and "NoSuchApi" in data["ErrorMessage"]  # type: ignore[index]

    hb = json.dumps(BrokerHeartbeatRequest(BrokerId=1).to_wire(1)).encode()
    status, data = await _raw(f"{url}/rpc/BrokerHeartbeat", hb, "application/json", version="9")
    assert status == 400 and data["ErrorCode"] == Errors.UNSUPPORTED_VERSION  # type: ignore[index]

    async with RpcClient(url) as c:
        wrong = BrokerRegistrationRequest(BrokerId=1, ClusterId="wrong-cluster")
        assert (await c.call("BrokerRegistration", wrong)).ErrorCode == Errors.INCONSISTENT_CLUSTER_ID
        crash = BrokerRegistrationRequest(BrokerId=1, ClusterId="crash")
        assert (await c.call("BrokerRegistration", crash)).ErrorCode == Errors.UNKNOWN_SERVER_ERROR
        # still serving after all of that
        assert (await c.call("BrokerHeartbeat", BrokerHeartbeatRequest(BrokerId=1))).ErrorCode == 0

    async with aiohttp.ClientSession() as s:
        async with s.get(f"{url}/healthz") as r:
            assert r.status == 200 and (await r.json())["status"] == "ok"
        async with s.get(f"{url}/metrics") as r:
            text = await r.text()
    assert (
        'kafka_network_requestmetrics_errors_total{error="INVALID_REQUEST",request="BrokerHeartbeat"} 2.0'
        in text
    )
    assert "process_cpu_seconds_total" in text
    # the unexpected exception's traceback is in the server's log, not in any reply
    assert "demo handler crashed on purpose" in log_path.read_text()
