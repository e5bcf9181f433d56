"""The two ways the controller process gives up: at startup (one line to fix) and while running (halt)."""

from __future__ import annotations

import contextlib
import os
import sys
from typing import NoReturn

import structlog

log = structlog.get_logger(__name__)

EXIT_FATAL = 70


class StartupError(Exception):
    """A reason the controller cannot start that the operator can act on; printed as one line."""


def halt(what: str, exc: BaseException) -> NoReturn:
    """Exit at once: speculative state may be ahead of the disk, and only a restart from the log is safe."""
    try:
        log.critical("fatal controller error; halting", error=what, exception=repr(exc))
        with contextlib.suppress(Exception):
            sys.stderr.flush()
    finally:
        # Even when the log cannot be written (a closed stderr): the process must not stay up.
        os._exit(EXIT_FATAL)
