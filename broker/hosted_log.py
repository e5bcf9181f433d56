"""HostedLog: one partition's log as the log manager holds it: the dir it lives in, opened on first use.

The control plane only needs `<topic>-<p>/` and its partition.metadata; the log itself (its
segment files) is opened the first time the data plane asks for it, on the dir's executor. When the
dir fails the log goes offline: `log()` raises KAFKA_STORAGE_ERROR from then on.
"""

from __future__ import annotations

import asyncio
import functools
from pathlib import Path

from broker.storage import LogConfig, LogDirOfflineError, PartitionLog
from broker.storage.dir_names import TopicPartition, log_dir_name
from broker.storage.log_dir import LogDir
from kraftpy.image import TopicIdPartition
from protocol.errors import Errors, KafkaError


class Flag:
    """`asyncio.Event`'s is_set/set/wait, with the Event made only when someone waits: a broker
    holds one per replica, and 100,000 of them are set at startup while almost none is waited on."""

    __slots__ = ("_event", "_value")

    def __init__(self) -> None:
        self._value = False
        self._event: asyncio.Event | None = None

    def is_set(self) -> bool:
        return self._value

    def set(self) -> None:
        if not self._value:
            self._value = True
            if self._event is not None:
                self._event.set()

    async def wait(self) -> bool:
        """True once set, or False when `wake()` gave up on it first."""
        if self._value:
            return True
        if self._event is None:
            self._event = asyncio.Event()
        await self._event.wait()
        return self._value

    def clear(self) -> None:
        """Unset; anyone already waiting on it keeps waiting for the next `set()`."""
        if self._value:
            self._value = False
            self._event = None  # set, and so released everyone who waited on it

    def wake(self) -> None:
        """Release those waiting without setting it: what they waited for will not come this time
        (the dir failed under the create), and they look again at why."""
        if self._event is not None and not self._value:
            self._event.set()
            self._event = None


class HostedLog:
    """One partition's log hosted here: the dir it lives in, opened on first use, offline with its dir."""

    def __init__(self, tp: TopicIdPartition, log_dir: LogDir | None, log_config: LogConfig) -> None:
        self.tp = tp
        self.log_dir = log_dir
        self.online = log_dir is not None
        self.log_config = log_config
        self.created = Flag()
        self._log: PartitionLog | None = None
        self._lock: asyncio.Lock | None = None
        self.offline_reason = ""

    @property
    def path(self) -> Path | None:
        if self.log_dir is None:
            return None
        return self.log_dir.path / log_dir_name(TopicPartition(self.tp.topic_name, self.tp.partition))

    def offline_error(self) -> KafkaError:
        return KafkaError(
            Errors.KAFKA_STORAGE_ERROR,
            f"partition {self.tp} is offline: {self.offline_reason or 'log dir offline'}",
        )

    async def log(self) -> PartitionLog:
        """The partition's log, opened on first use on its dir's executor."""
        if not self.online or self.log_dir is None:
            raise self.offline_error()
        if self._log is not None:
            return self._log
        while not await self.created.wait():
            if not self.online or self.log_dir is None:
                raise self.offline_error()
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if not self.online or self.log_dir is None:
                raise self.offline_error()
            if self._log is None:
                path = self.path
                assert path is not None
                try:
                    self._log = await self.log_dir.run(
                        functools.partial(
                            PartitionLog.open, path, topic_id=self.tp.topic_id, config=self.log_config
                        )
                    )
                except LogDirOfflineError:
                    raise self.offline_error() from None
        return self._log

    def replace_log(self, log: PartitionLog, log_dir: LogDir) -> PartitionLog | None:
        """Serve `log` in `log_dir` from now on (a future log swapped in); returns the one it replaces."""
        old, self._log = self._log, log
        self.log_dir = log_dir
        self.online = True
        self.offline_reason = ""
        self.created.set()
        return old

    def take_log(self) -> PartitionLog | None:
        opened, self._log = self._log, None
        return opened

    def go_offline(self, reason: str) -> PartitionLog | None:
        self.online = False
        self.offline_reason = reason
        self.created.wake()
        return self.take_log()
