"""One log dir (one disk) of a broker, with its own I/O thread and failure channel.

Every piece of disk work for the dir goes through `await log_dir.run(fn, *args, timeout=...)`: one
sync function per hop on the dir's single-thread executor, so a hung disk stalls only its own dir and
never the event loop, the default executor, or another dir.

The first OSError (EIO, ENOSPC, EROFS...) or timeout marks the dir offline and calls
`on_failure(log_dir, exc)` exactly once, as Kafka's LogDirFailureChannel.maybeAddOfflineLogDir does.
From then on nothing more is submitted: every call, including those already queued behind the
failing one, raises LogDirOfflineError (KAFKA_STORAGE_ERROR for clients). Other exceptions (bad
input, a corrupt file) propagate unchanged and leave the dir online. Running out of file descriptors
(EMFILE, ENFILE) is the process's limit, not the disk's: it raises LogDirResourceError and the dir
stays online (Kafka takes the dir offline).

A timeout abandons the future, not the thread. A thread blocked in a syscall on a dead disk sits in
uninterruptible sleep: Python cannot kill it, and waiting would block the caller just the same. The
executor is shut down without waiting; the stuck thread stays parked until the kernel gives up on the
I/O or the process exits. CPython joins executor threads at interpreter exit (`_python_exit` in
concurrent/futures/thread.py), so a broker holding a stuck thread must halt with os._exit after
flushing its logs rather than return from main.

`on_failure` and `fail` run on the event loop thread.

Broker-only: the controller runs its metadata log on one thread of its own (GroupCommitLog) and
stops on a disk error instead of failing a dir.
"""

from __future__ import annotations

import asyncio
import errno
import math
import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple, TypeVar, TypeVarTuple

import structlog

from broker.storage.dir_names import METADATA_TOPIC, PartitionDirName, parse_partition_dir_name
from broker.storage.errors import LogDirOfflineError, LogDirResourceError
from kraftpy.storage.atomic import fsync_dir
from protocol.uuid import Uuid

# The process's limits, not the disk's: a dir that hits them is not failed.
RESOURCE_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE})

log = structlog.get_logger("broker.storage")

Ts = TypeVarTuple("Ts")
T = TypeVar("T")

PROBE_FILE = ".kraftpy-probe"
# Names a filesystem or an operator may put in a log dir that are not partitions.
_NOT_PARTITIONS = {"lost+found"}


class LogDirStallError(OSError):
    """A call on the dir's executor did not finish within its timeout (a hung disk)."""


# How late past its deadline the loop may wake before the wait is taken for a paused process.
LATE_WAKE_S = 1.0


def _now() -> float:
    # One clock for the dir's thread and the event loop.
    return time.monotonic()


class _TimedCall:
    """A call on the dir's thread that notes when it starts and ends."""

    __slots__ = ("args", "fn", "log_dir", "started_at", "submitted_at")

    def __init__(self, log_dir: LogDir, fn: Callable[..., object], args: tuple[object, ...]) -> None:
        self.log_dir = log_dir
        self.fn = fn
        self.args = args
        self.submitted_at = _now()
        self.started_at: float | None = None

    def __call__(self) -> object:
        self.started_at = self.log_dir._last_progress = _now()
        try:
            return self.fn(*self.args)
        finally:
            self.log_dir._last_progress = _now()


class DirUsage(NamedTuple):
    total_bytes: int
    usable_bytes: int


FailureCallback = Callable[["LogDir", BaseException], None]


class LogDir:
    def __init__(
        self,
        path: str | Path,
        dir_id: Uuid,
        on_failure: FailureCallback | None = None,
        *,
        default_timeout: float | None = 30.0,
    ) -> None:
        self.path = Path(path)
        self.dir_id = dir_id
        self.on_failure = on_failure
        self.default_timeout = default_timeout
        self.failure: BaseException | None = None
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"logdir-{dir_id}")
        # When the dir's thread last started or finished a call (a float written from that thread
        # and read on the loop, which needs no lock).
        self._last_progress = _now()
        self._waiting: set[asyncio.Future[object]] = set()

    @property
    def online(self) -> bool:
        return self.failure is None

    def __repr__(self) -> str:
        state = "online" if self.online else "offline"
        return f"LogDir({str(self.path)!r}, {self.dir_id}, {state})"

    # ---- running disk work

    async def run(self, fn: Callable[[*Ts], T], *args: *Ts, timeout: float | None = None) -> T:
        """Run `fn(*args)` on the dir's thread and return its result.

        `timeout` (seconds; the dir's default when None, unbounded when math.inf) bounds the wait. OSError or a timeout takes
        the dir offline and raises LogDirOfflineError from it; other exceptions pass through.
        """
        if self.failure is not None:
            raise LogDirOfflineError(self.path, str(self.failure))
        call = _TimedCall(self, fn, args)
        try:
            cfut = self._executor.submit(call)
        except RuntimeError:  # the executor was shut down: by fail() or close()
            raise LogDirOfflineError(self.path, "closed") from None
        fut = asyncio.wrap_future(cfut)
        limit = self.default_timeout if timeout is None else timeout
        if limit is not None and math.isinf(limit):
            limit = None  # e.g. opening a large log that must be recovered: no stall limit
        self._waiting.add(fut)
        try:
            stalled = await self._wait(fut, call, limit)
        except asyncio.CancelledError:
            fut.cancel()  # still queued: it never runs; already running: it finishes unobserved
            raise
        finally:
            self._waiting.discard(fut)
        if stalled:
            fut.cancel()
            stall = LogDirStallError(f"{getattr(fn, '__qualname__', fn)!s} did not finish within {limit}s")
            self.fail(stall)
            raise LogDirOfflineError(self.path, str(stall)) from stall
        if fut.cancelled():
            # Cancelled in the queue because the dir failed under an earlier call.
            raise LogDirOfflineError(self.path, str(self.failure) if self.failure else "closed")
        exc = fut.exception()
        if isinstance(exc, OSError) and exc.errno in RESOURCE_ERRNOS:
            log.error("out of file descriptors", path=str(self.path), error=repr(exc))
            raise LogDirResourceError(self.path, exc) from exc
        if isinstance(exc, OSError):
            self.fail(exc)
            raise LogDirOfflineError(self.path, str(exc)) from exc
        return fut.result()

    async def _wait(self, fut: asyncio.Future[T], call: _TimedCall, limit: float | None) -> bool:
        """Wait for `fut`; True when the dir stalled. The limit runs from when the call started,
        or, while it waits in the queue, from the later of its submission and the dir thread's last
        sign of progress: a call queued behind thousands of log opens waits on a busy disk, not on a
        hung one."""
        if limit is None:
            await asyncio.wait({fut})
            return False
        resumed: float | None = None
        while True:
            started = call.started_at
            # Queued: the thread answers for the time since it last finished something, but not for
            # the time before this call existed (an idle thread's last progress may be long ago).
            since = started if started is not None else max(self._last_progress, call.submitted_at)
            if resumed is not None:
                since = max(since, resumed)
            remaining = since + limit - _now()
            if remaining <= 0:
                return True
            wake_at = _now() + remaining
            done, _ = await asyncio.wait({fut}, timeout=remaining)
            if done:
                return False
            if _now() - wake_at > min(LATE_WAKE_S, limit / 2):
                # The loop woke far too late: the process was stopped (SIGSTOP, a frozen VM) or its
                # loop blocked, and the dir's thread with it. That says nothing about the disk, so
                # the call gets a whole limit from now.
                resumed = _now()

    def fail(self, exc: BaseException) -> bool:
        """Take the dir offline because of `exc`; True the first time, when `on_failure` is called."""
        if self.failure is not None:
            return False
        self.failure = exc
        self._executor.shutdown(wait=False, cancel_futures=True)
        # Callers waiting on calls the dir's thread is stuck in hear it now, not at their own limit.
        for waiting in list(self._waiting):
            waiting.cancel()
        log.error("log dir failed", path=str(self.path), dir_id=str(self.dir_id), error=repr(exc))
        if self.on_failure is not None:
            try:
                self.on_failure(self, exc)
            except Exception:
                log.exception("log dir failure callback raised", path=str(self.path))
        return True

    def close(self) -> None:
        """Stop taking work (broker shutdown). Queued work is dropped; running work is not waited for."""
        self._executor.shutdown(wait=False, cancel_futures=True)

    # ---- sync operations, meant for run()

    def probe(self) -> None:
        """Write, fsync and unlink a small file: raises OSError when the disk no longer takes writes."""
        path = self.path / PROBE_FILE
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, os.urandom(8))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.unlink(path)
        fsync_dir(self.path)

    def usage(self) -> DirUsage:
        st = os.statvfs(self.path)
        return DirUsage(st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize)

    def list_partition_dirs(self, *, include_metadata: bool = False) -> list[PartitionDirName]:
        """Partition dirs found here (logs, -future, -delete and -stray ones), sorted by name.

        Other entries are skipped; an unexpected dir name is logged. The metadata log's
        `__cluster_metadata-0` is left out unless asked for.
        """
        found: list[PartitionDirName] = []
        with os.scandir(self.path) as entries:
            for entry in entries:
                if not entry.is_dir(follow_symlinks=False):
                    continue
                parsed = parse_partition_dir_name(entry.name)
                if parsed is None:
                    if entry.name not in _NOT_PARTITIONS and not entry.name.startswith("."):
                        log.warning("not a partition dir, ignored", path=str(self.path), name=entry.name)
                    continue
                if parsed.topic_partition.topic == METADATA_TOPIC and not include_metadata:
                    continue
                found.append(parsed)
        found.sort(key=lambda p: p.name)
        return found
