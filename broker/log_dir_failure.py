"""LogDirFailureChannel: where a log dir's failure is recorded, once, and from where it is delivered.

Kafka's LogDirFailureChannel: the first OSError or stall on a dir (`LogDir.fail`) lands here through
`maybe_add_offline_log_dir`, the `on_failure` of every `LogDir` of the broker. The failure is
recorded under the dir's path and handed to each subscriber exactly once, in the order they
subscribed; the broker's wiring states that order in one list. A second failure of the same dir
(two I/O errors racing on its executor) is not delivered again.

Like Kafka's LogDirFailureHandler, delivery begins at `start()`, once every part has subscribed: a
dir that fails earlier (while the broker scans its dirs or loads checkpoints) is delivered then,
once, like any other. Dirs unusable at startup are recorded too (`record_offline_at_start`) but
delivered to no one: they never had replicas or a directory id here, and the startup checks have
already reported them.

Everything runs on the event loop thread, as `LogDir.fail` does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import structlog

from broker.storage.log_dir import LogDir
from protocol.uuid import Uuid

log = structlog.get_logger("broker.log_dir_failure")


@dataclass(frozen=True, slots=True)
class LogDirFailure:
    path: str
    dir_id: Uuid | None
    """None for a dir that could not be used at startup (its id was never read)."""
    reason: str
    log_dir: LogDir | None = None


Subscriber = Callable[[LogDirFailure], None]


class LogDirFailureChannel:
    def __init__(self) -> None:
        self._failed: dict[str, LogDirFailure] = {}
        self._subscribers: list[tuple[str, Subscriber]] = []
        self._started = False

    def subscribe(self, name: str, subscriber: Subscriber) -> None:
        """Deliver every later failure to `subscriber`, after those subscribed before it."""
        self._subscribers.append((name, subscriber))

    @property
    def subscribers(self) -> list[str]:
        return [name for name, _ in self._subscribers]

    def start(self) -> None:
        """Every part has subscribed: deliver the failures so far, and each later one as it comes."""
        self._started = True
        for failure in list(self._failed.values()):
            if failure.log_dir is not None:
                self._deliver(failure)

    def record_offline_at_start(self, path: str, reason: str) -> None:
        self._failed.setdefault(path, LogDirFailure(path, None, reason))

    def maybe_add_offline_log_dir(self, log_dir: LogDir, exc: BaseException) -> bool:
        """`log_dir` failed with `exc`: record and deliver it, unless it was already; True when new."""
        path = str(log_dir.path)
        if path in self._failed:
            return False
        failure = LogDirFailure(path, log_dir.dir_id, repr(exc), log_dir)
        self._failed[path] = failure
        if self._started:
            self._deliver(failure)
        return True

    def _deliver(self, failure: LogDirFailure) -> None:
        for name, subscriber in list(self._subscribers):
            try:
                subscriber(failure)
            except Exception:
                # One part failing to react must not keep the failure from the parts after it.
                log.exception("log dir failure subscriber raised", subscriber=name, path=failure.path)

    @property
    def failed(self) -> Mapping[str, LogDirFailure]:
        """Every offline dir by path, in the order they failed."""
        return self._failed
