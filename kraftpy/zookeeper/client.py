"""ZkClient: kazoo behind an asyncio face.

Every kazoo call runs on the client's own single thread (never the event loop, never the default
executor), one at a time and in the order they were asked for, so a ZooKeeper that stops answering
stalls only the callers waiting on it. kazoo's own thread delivers watches and session changes;
they reach the owner as plain callbacks on the event loop.

Sessions: `start` gives up after `connect_timeout_s` with ZkUnavailableError. Afterwards kazoo keeps
reconnecting; `on_session` callbacks hear CONNECTED, SUSPENDED (connection lost, session maybe still
alive) and LOST (the session expired: every ephemeral node of this client is gone).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

import structlog
from kazoo import exceptions as kz
from kazoo.client import KazooClient
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import KazooState
from kazoo.recipe.watchers import ChildrenWatch, DataWatch

from kraftpy.zookeeper.errors import (
    ZkBadVersionError,
    ZkConnectionLossError,
    ZkError,
    ZkNodeExistsError,
    ZkNoNodeError,
    ZkNotEmptyError,
    ZkSessionExpiredError,
    ZkUnavailableError,
)

log = structlog.get_logger("kraftpy.zookeeper")

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ZnodeStat:
    version: int
    cversion: int
    czxid: int
    mzxid: int
    ephemeral_owner: int
    ctime_ms: int
    mtime_ms: int
    num_children: int

    @classmethod
    def of(cls, stat: Any) -> ZnodeStat:
        return cls(
            stat.version,
            stat.cversion,
            stat.czxid,
            stat.mzxid,
            stat.ephemeralOwner,
            stat.ctime,
            stat.mtime,
            stat.numChildren,
        )


@dataclass(frozen=True, slots=True)
class CheckOp:
    path: str
    version: int


@dataclass(frozen=True, slots=True)
class CreateOp:
    path: str
    data: bytes = b""
    ephemeral: bool = False
    sequence: bool = False


@dataclass(frozen=True, slots=True)
class SetOp:
    path: str
    data: bytes
    version: int = -1


@dataclass(frozen=True, slots=True)
class DeleteOp:
    path: str
    version: int = -1


Op = CheckOp | CreateOp | SetOp | DeleteOp

_ERRORS: tuple[tuple[type[Exception], type[ZkError]], ...] = (
    (kz.NoNodeError, ZkNoNodeError),
    (kz.NodeExistsError, ZkNodeExistsError),
    (kz.BadVersionError, ZkBadVersionError),
    (kz.NotEmptyError, ZkNotEmptyError),
    (kz.SessionExpiredError, ZkSessionExpiredError),
    (kz.ConnectionLoss, ZkConnectionLossError),
    (kz.ConnectionClosedError, ZkConnectionLossError),
)


def _translate(e: Exception, path: str | None, index: int | None = None) -> ZkError:
    for kind, ours in _ERRORS:
        if isinstance(e, kind):
            return ours(f"{kind.__name__} at {path}" if path else kind.__name__, path=path, index=index)
    return ZkError(f"{type(e).__name__}: {e}", path=path, index=index)


GET_MANY_WINDOW = 1000


class ZkClient:
    def __init__(
        self, hosts: str, *, session_timeout_ms: int = 18000, connect_timeout_s: float = 10.0
    ) -> None:
        self.hosts = hosts
        self.session_timeout_ms = session_timeout_ms
        self.connect_timeout_s = connect_timeout_s
        self._zk = KazooClient(
            hosts=hosts,
            timeout=session_timeout_ms / 1000,
            connection_retry={"max_tries": -1, "delay": 0.1, "max_delay": 1.0},
        )
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="zookeeper")
        self._loop: asyncio.AbstractEventLoop | None = None
        self._session_callbacks: list[Callable[[str], None]] = []
        self._closed = False

    # ---- lifecycle -----------------------------------------------------------------------------

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._zk.add_listener(self._state_changed)
        try:
            await self._loop.run_in_executor(
                self._executor, functools.partial(self._zk.start, timeout=self.connect_timeout_s)
            )
        except KazooTimeoutError:
            raise ZkUnavailableError(
                f"cannot connect to ZooKeeper at {self.hosts} within {self.connect_timeout_s:g}s"
            ) from None
        except Exception as e:  # a malformed connect string, a refused resolve
            raise ZkUnavailableError(f"cannot connect to ZooKeeper at {self.hosts}: {e}") from None
        log.info("connected to ZooKeeper", hosts=self.hosts, session_id=hex(self.session_id or 0))

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        loop = asyncio.get_running_loop()

        def stop() -> None:
            try:
                self._zk.stop()
                self._zk.close()
            except Exception:
                pass

        await loop.run_in_executor(self._executor, stop)
        self._executor.shutdown(wait=False)

    @property
    def session_id(self) -> int | None:
        sid = self._zk.client_id
        return sid[0] if sid else None

    @property
    def connected(self) -> bool:
        return bool(self._zk.connected)

    def on_session(self, callback: Callable[[str], None]) -> None:
        self._session_callbacks.append(callback)

    def _state_changed(self, state: str) -> None:
        # kazoo's thread: hand over to the loop, never block here.
        name = {
            KazooState.LOST: "LOST",
            KazooState.SUSPENDED: "SUSPENDED",
            KazooState.CONNECTED: "CONNECTED",
        }.get(state, str(state))
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        for cb in list(self._session_callbacks):
            loop.call_soon_threadsafe(cb, name)

    # ---- calls ---------------------------------------------------------------------------------

    async def _call(self, path: str | None, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        if self._closed:
            raise ZkConnectionLossError("client closed", path=path)
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._executor, functools.partial(fn, *args, **kwargs))
        except kz.KazooException as e:
            raise _translate(e, path) from None

    async def get(self, path: str) -> tuple[bytes, ZnodeStat] | None:
        try:
            data, stat = await self._call(path, self._zk.get, path)
        except ZkNoNodeError:
            return None
        return data or b"", ZnodeStat.of(stat)

    async def get_many(self, paths: Sequence[str]) -> list[tuple[bytes, ZnodeStat] | None]:
        """Each path's data and stat, None where it does not exist. The reads are pipelined on the
        session, GET_MANY_WINDOW in flight at a time, rather than one round trip each: a copy of
        10,000 partition states is 10,000 reads."""
        if self._closed:
            raise ZkConnectionLossError("client closed")

        def run() -> list[tuple[bytes, ZnodeStat] | None]:
            out: list[tuple[bytes, ZnodeStat] | None] = []
            for start in range(0, len(paths), GET_MANY_WINDOW):
                window = paths[start : start + GET_MANY_WINDOW]
                pending = [self._zk.get_async(p) for p in window]
                for path, result in zip(window, pending, strict=True):
                    try:
                        data, stat = result.get()
                    except kz.NoNodeError:
                        out.append(None)
                        continue
                    except kz.KazooException as e:
                        raise _translate(e, path) from None
                    out.append((data or b"", ZnodeStat.of(stat)))
            return out

        return await asyncio.get_running_loop().run_in_executor(self._executor, run)

    async def exists(self, path: str) -> ZnodeStat | None:
        stat = await self._call(path, self._zk.exists, path)
        return ZnodeStat.of(stat) if stat is not None else None

    async def get_children(self, path: str) -> list[str] | None:
        try:
            return list(await self._call(path, self._zk.get_children, path))
        except ZkNoNodeError:
            return None

    async def create(
        self,
        path: str,
        data: bytes = b"",
        *,
        ephemeral: bool = False,
        sequence: bool = False,
        makepath: bool = False,
    ) -> str:
        return await self._call(
            path, self._zk.create, path, data, ephemeral=ephemeral, sequence=sequence, makepath=makepath
        )

    async def set(self, path: str, data: bytes, *, version: int = -1) -> ZnodeStat:
        return ZnodeStat.of(await self._call(path, self._zk.set, path, data, version=version))

    async def delete(self, path: str, *, version: int = -1, recursive: bool = False) -> None:
        try:
            await self._call(path, self._zk.delete, path, version=version, recursive=recursive)
        except ZkNoNodeError:
            if version != -1:
                raise

    async def ensure_path(self, path: str) -> None:
        await self._call(path, self._zk.ensure_path, path)

    async def multi(self, ops: list[Op]) -> list[Any]:
        """All of `ops` or none of them. A refused transaction raises the error of the operation that
        failed, with its index."""

        def run() -> list[Any]:
            t = self._zk.transaction()
            for op in ops:
                if isinstance(op, CheckOp):
                    t.check(op.path, op.version)
                elif isinstance(op, CreateOp):
                    t.create(op.path, op.data, ephemeral=op.ephemeral, sequence=op.sequence)
                elif isinstance(op, SetOp):
                    t.set_data(op.path, op.data, op.version)
                else:
                    t.delete(op.path, op.version)
            return list(t.commit())

        results = await self._call(None, run)
        for i, r in enumerate(results):
            if isinstance(r, Exception) and not isinstance(r, (kz.RolledBackError, kz.RuntimeInconsistency)):
                raise _translate(r, ops[i].path, i)
        return results

    # ---- watches -------------------------------------------------------------------------------

    def watch_children(self, path: str, callback: Callable[[list[str] | None], None]) -> Callable[[], None]:
        """`callback(children)` on the loop now and after every change of `path`'s children (None
        once it is gone); re-armed by kazoo, also across sessions. Returns a function that stops it."""
        return self._watch(lambda fn: ChildrenWatch(self._zk, path, fn, allow_session_lost=True), callback)

    def watch_data(
        self, path: str, callback: Callable[[tuple[bytes, ZnodeStat] | None], None]
    ) -> Callable[[], None]:
        """`callback((data, stat))` on the loop now and after every change of `path`; None while absent."""

        def adapt(data: bytes | None, stat: Any) -> tuple[bytes, ZnodeStat] | None:
            return None if stat is None else (data or b"", ZnodeStat.of(stat))

        return self._watch(lambda fn: DataWatch(self._zk, path, lambda d, s: fn(adapt(d, s))), callback)

    def _watch(
        self, make: Callable[[Callable[[Any], Any]], Any], callback: Callable[[Any], None]
    ) -> Callable[[], None]:
        loop = self._loop or asyncio.get_running_loop()
        stopped = False

        def on_change(value: Any) -> bool | None:
            if stopped or self._closed:
                return False  # kazoo: stop watching
            if not loop.is_closed():
                loop.call_soon_threadsafe(callback, value)
            return None

        loop.run_in_executor(self._executor, make, on_change)

        def stop() -> None:
            nonlocal stopped
            stopped = True

        return stop
