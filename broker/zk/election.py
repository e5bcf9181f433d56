"""Who is controller in ZooKeeper mode: the broker that creates `/controller` (KafkaController.elect).

Every broker watches `/controller`. When it is gone, each tries to create it (ephemeral, version 2
JSON, `kraftControllerEpoch` -1) together with `/controller_epoch` + 1, in one multi-op checked
against the epoch znode's version: exactly one broker wins, and the epoch it wrote fences every
request and every ZooKeeper write of the controllers before it. The winner runs the controller
(`on_elected`) until `/controller` names someone else or its session ends (`on_resigned`).

During a migration a KRaft controller claims `/controller` as a persistent znode with its
`kraftControllerEpoch` (>= 0): it never disappears while that quorum leads, so no broker tries to
take it back, and one that was controller resigns.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import structlog

from kraftpy.zookeeper import CreateOp, SetOp, ZkBadVersionError, ZkClient, ZkError, ZkNodeExistsError
from protocol import znodes

log = structlog.get_logger("broker.zk")


class ControllerElection:
    def __init__(
        self,
        zk: ZkClient,
        broker_id: int,
        *,
        on_elected: Callable[[int, int], Awaitable[None]],
        on_resigned: Callable[[], Awaitable[None]],
    ) -> None:
        self.zk = zk
        self.broker_id = broker_id
        self.on_elected = on_elected
        self.on_resigned = on_resigned
        self.controller_id = -1
        # `/controller` as last read; None when absent or unreadable.
        self.znode: znodes.ControllerZnode | None = None
        self.active = False
        self._lock = asyncio.Lock()
        self._tasks: set[asyncio.Task[None]] = set()

    def start(self) -> None:
        self.zk.watch_data(znodes.CONTROLLER, self._changed)

    def _spawn(self, coro: Awaitable[None]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _changed(self, found: tuple[bytes, object] | None) -> None:
        if found is None:
            self.controller_id = -1
            self.znode = None
            self._spawn(self.elect())
            return
        try:
            self.znode = znodes.ControllerZnode.from_bytes(found[0])
            self.controller_id = self.znode.brokerid
        except znodes.ZnodeDecodeError as e:
            log.warning("unreadable /controller znode", error=str(e))
            self.controller_id = -1
            self.znode = None
        kraft = self.znode is not None and self.znode.kraftControllerEpoch >= 0
        if kraft:
            assert self.znode is not None
            log.info(
                "a KRaft controller holds /controller",
                controller_id=self.znode.brokerid,
                kraft_controller_epoch=self.znode.kraftControllerEpoch,
            )
        if self.active and (kraft or self.controller_id != self.broker_id):
            self._spawn(self.resign("/controller names another controller"))

    async def elect(self) -> None:
        async with self._lock:
            if self.active:
                return
            try:
                epoch, version = await self._read_epoch()
                wanted = znodes.ControllerZnode(
                    brokerid=self.broker_id, timestamp=str(int(time.time() * 1000)), kraftControllerEpoch=-1
                )
                await self.zk.multi(
                    [
                        CreateOp(znodes.CONTROLLER, wanted.to_bytes(), ephemeral=True),
                        SetOp(znodes.CONTROLLER_EPOCH, str(epoch + 1).encode(), version=version),
                    ]
                )
            except (ZkNodeExistsError, ZkBadVersionError):
                return  # another broker won
            except ZkError as e:
                log.warning("controller election failed", error=e.message)
                return
            self.active = True
            self.controller_id = self.broker_id
            self.znode = wanted
            log.info("won the controller election", controller_epoch=epoch + 1)
        await self.on_elected(epoch + 1, version + 1)

    async def _read_epoch(self) -> tuple[int, int]:
        found = await self.zk.get(znodes.CONTROLLER_EPOCH)
        if found is None:
            try:
                await self.zk.create(znodes.CONTROLLER_EPOCH, b"0")
            except ZkNodeExistsError:
                pass
            found = await self.zk.get(znodes.CONTROLLER_EPOCH)
            assert found is not None
        return znodes.decode_controller_epoch(found[0]), found[1].version

    async def resign(self, reason: str) -> None:
        async with self._lock:
            if not self.active:
                return
            self.active = False
            log.info("resigning as controller", reason=reason)
        await self.on_resigned()

    async def stop(self) -> None:
        """Give the controllership up on a clean stop, so another broker takes over at once."""
        was_active = self.active
        await self.resign("broker stopping")
        if was_active:
            try:
                await self.zk.delete(znodes.CONTROLLER)
            except ZkError:
                pass
        for t in list(self._tasks):
            t.cancel()
