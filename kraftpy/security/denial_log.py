"""Authorization denials in the log without flooding it: a client that keeps asking for what it may
not have (a Metadata request every few hundred ms for a topic it may not describe) would otherwise
write a line per request. Each (principal, operation, resource) is logged at most once per
interval; the line that ends a quiet interval says how many identical denials it left out.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import structlog

log = structlog.get_logger("kraftpy.authorizer")

DENIAL_LOG_INTERVAL_S = 60.0

MAX_TRACKED = 10_000
"""Denials remembered at once; past it the one logged longest ago is forgotten (and the count of
its left-out repeats with it), so a client naming ever new resources cannot grow the table."""

Key = tuple[str, str, str]


class DenialLog:
    """Logs `authorization failed` for a (principal, operation, resource) when it was not logged in
    the last `interval_s` seconds of `clock` (monotonic), and counts it otherwise."""

    def __init__(
        self,
        interval_s: float = DENIAL_LOG_INTERVAL_S,
        *,
        clock: Callable[[], float] = time.monotonic,
        max_tracked: int = MAX_TRACKED,
    ) -> None:
        self.interval_s = interval_s
        self._clock = clock
        self._max_tracked = max_tracked
        self._logged: dict[Key, tuple[float, int]] = {}
        """key -> (when it was last logged, denials left out since); oldest logged first."""

    def denied(self, principal: str, host: str, operation: str, resource: str) -> None:
        now = self._clock()
        key = (principal, operation, resource)
        last = self._logged.get(key)
        if last is not None and now - last[0] < self.interval_s:
            self._logged[key] = (last[0], last[1] + 1)
            return
        log.info(
            "authorization failed",
            principal=principal,
            host=host,
            operation=operation,
            resource=resource,
            suppressed=last[1] if last is not None else 0,
        )
        # re-inserted at the end, so the first key is always the one logged longest ago
        self._logged.pop(key, None)
        while len(self._logged) >= self._max_tracked:
            del self._logged[next(iter(self._logged))]
        self._logged[key] = (now, 0)
