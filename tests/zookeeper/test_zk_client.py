"""The asyncio ZooKeeper client against a real ZooKeeper: calls, versions, multi-ops, watches,
sessions, and the event loop never waiting on ZooKeeper."""

from __future__ import annotations

import asyncio
import contextlib
import threading

import pytest

from kraftpy.zookeeper import (
    CheckOp,
    CreateOp,
    SetOp,
    ZkBadVersionError,
    ZkClient,
    ZkNodeExistsError,
    ZkUnavailableError,
)
from tests.support.zk_server import ZkServer
from tools.cluster.launcher import free_ports

pytestmark = [pytest.mark.real]


async def _client(zk_server: ZkServer, **kw: object) -> ZkClient:
    c = ZkClient(zk_server.connect, **kw)  # type: ignore[arg-type]
    await c.start()
    return c


async def test_create_get_set_delete_with_versions(zk_server: ZkServer) -> None:
    zk = await _client(zk_server)
    try:
        await zk.create("/a/b", b"one", makepath=True)
        data, stat = await zk.get("/a/b")  # type: ignore[misc]
        assert data == b"one" and stat.version == 0
        stat = await zk.set("/a/b", b"two", version=0)
        assert stat.version == 1
        with pytest.raises(ZkBadVersionError):
            await zk.set("/a/b", b"three", version=0)
        with pytest.raises(ZkNodeExistsError):
            await zk.create("/a/b")
        assert await zk.get_children("/a") == ["b"]
        await zk.delete("/a", recursive=True)
        assert await zk.get("/a/b") is None and await zk.get_children("/a") is None
        seq = await zk.create("/n/item_", b"", sequence=True, makepath=True)
        assert seq == "/n/item_0000000000"
    finally:
        await zk.close()


async def test_get_many_answers_in_order_across_windows(zk_server: ZkServer) -> None:
    from kraftpy.zookeeper.client import GET_MANY_WINDOW

    zk = await _client(zk_server)
    try:
        n = GET_MANY_WINDOW + 5
        for i in range(0, n, 2):
            await zk.create(f"/many/{i}", str(i).encode(), makepath=True)
        await zk.set("/many/4", b"four")
        found = await zk.get_many([f"/many/{i}" for i in range(n)])
        assert [f is not None for f in found] == [i % 2 == 0 for i in range(n)]
        assert found[0] is not None and found[0][0] == b"0"
        assert found[4] is not None and found[4] == (b"four", found[4][1]) and found[4][1].version == 1
        assert await zk.get_many([]) == []
    finally:
        await zk.close()


async def test_a_refused_multi_changes_nothing_and_names_the_failing_op(zk_server: ZkServer) -> None:
    zk = await _client(zk_server)
    try:
        await zk.create("/epoch", b"1")
        with pytest.raises(ZkBadVersionError) as e:
            await zk.multi([CreateOp("/x", b"x"), CheckOp("/epoch", 5), SetOp("/epoch", b"2")])
        assert e.value.index == 1
        assert await zk.exists("/x") is None
        assert (await zk.get("/epoch"))[0] == b"1"  # type: ignore[index]
        await zk.multi([CheckOp("/epoch", 0), CreateOp("/x", b"x"), SetOp("/epoch", b"2", version=0)])
        assert (await zk.get("/x"))[0] == b"x"  # type: ignore[index]
    finally:
        await zk.close()


async def test_ephemeral_nodes_go_with_their_session_and_watches_fire_on_the_loop(
    zk_server: ZkServer,
) -> None:
    owner = await _client(zk_server)
    watcher = await _client(zk_server)
    seen: list[tuple[list[str] | None, threading.Thread]] = []
    changed = asyncio.Event()
    try:
        await watcher.ensure_path("/brokers/ids")

        def on_children(children: list[str] | None) -> None:
            seen.append((children, threading.current_thread()))
            changed.set()

        watcher.watch_children("/brokers/ids", on_children)
        await owner.create("/brokers/ids/7", b"{}", ephemeral=True)
        while not any(c == ["7"] for c, _ in seen):
            changed.clear()
            await asyncio.wait_for(changed.wait(), 10)
        await owner.close()
        while seen[-1][0] != []:
            changed.clear()
            await asyncio.wait_for(changed.wait(), 10)
        assert {t for _, t in seen} == {threading.current_thread()}
    finally:
        await owner.close()
        await watcher.close()


def expire_session(zk: ZkClient, connect: str) -> None:
    """Expire `zk`'s session from the server's side, as ZooKeeper does after a partition: another
    connection takes the session over and closes it (the recipe ZooKeeper's own tests use)."""
    from kazoo.client import KazooClient

    other = KazooClient(hosts=connect, client_id=zk._zk.client_id)
    other.start(timeout=10)
    other.stop()
    other.close()


async def test_an_expired_session_is_reported_lost_and_its_ephemerals_are_gone(zk_server: ZkServer) -> None:
    zk = await _client(zk_server, session_timeout_ms=4000)
    states: list[str] = []
    lost, back = asyncio.Event(), asyncio.Event()

    def on_session(state: str) -> None:
        states.append(state)
        if state == "LOST":
            lost.set()
        elif state == "CONNECTED" and lost.is_set():
            back.set()

    zk.on_session(on_session)
    try:
        await zk.create("/mine", b"", ephemeral=True)
        # The takeover races our client's own reconnect: when ours wins, the session moves back to it
        # and the other's close never reaches the server. Take it over again until it ends.
        async with asyncio.timeout(90):
            while not lost.is_set():
                await asyncio.to_thread(expire_session, zk, zk_server.connect)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(lost.wait(), 15)
        await asyncio.wait_for(back.wait(), 30)
        assert await zk.exists("/mine") is None
    finally:
        await zk.close()


async def test_an_unreachable_zookeeper_is_a_clear_error_and_the_loop_keeps_running() -> None:
    port = free_ports(1)[0]
    zk = ZkClient(f"127.0.0.1:{port}", connect_timeout_s=1.0)
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    ticker = asyncio.create_task(tick())
    try:
        with pytest.raises(ZkUnavailableError, match=f"127.0.0.1:{port}"):
            await zk.start()
        # The loop ticked all along while the client waited for ZooKeeper on its own thread.
        assert ticks > 10
    finally:
        ticker.cancel()
        await zk.close()
