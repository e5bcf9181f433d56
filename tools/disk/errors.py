"""What can go wrong with a loop-device disk, as exceptions the CLI prints as one line."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


class DiskError(Exception):
    """A disk operation could not be done; the message says why and what to do."""


class NotRootError(DiskError):
    pass


class MissingToolError(DiskError):
    pass


class DiskNotFoundError(DiskError):
    pass


class DiskExistsError(DiskError):
    pass


class InvalidTransitionError(DiskError):
    """The operation makes no sense in the disk's current state (e.g. `unfill` on a disk that is not full)."""


class CommandFailedError(DiskError):
    def __init__(self, argv: Sequence[str], returncode: int, stderr: str) -> None:
        self.argv = list(argv)
        self.returncode = returncode
        self.stderr = stderr.strip()
        detail = " ".join(self.stderr.split()) or "no error output"
        super().__init__(f"`{' '.join(self.argv)}` failed (exit {returncode}): {detail}")


@dataclass(frozen=True)
class Holder:
    """A process that keeps a filesystem busy, and how (open fd, cwd, mapping, private mount copy)."""

    pid: int
    command: str
    how: str
    path: str = ""

    def describe(self) -> str:
        where = f" {self.path}" if self.path else ""
        return f"pid {self.pid} ({self.command}: {self.how}{where})"


class DiskBusyError(DiskError):
    """Something still holds files on the disk; nothing was changed."""

    def __init__(self, name: str, holders: Sequence[Holder], detail: str = "") -> None:
        self.name = name
        self.holders = list(holders)
        shown = "; ".join(h.describe() for h in self.holders[:8])
        if len(self.holders) > 8:
            shown += f"; and {len(self.holders) - 8} more"
        reason = f"held by {shown}" if self.holders else (detail or "the kernel reports it busy")
        super().__init__(
            f"disk {name} is in use, {reason}; nothing was changed "
            "(stop those processes or have them close their files, then retry)"
        )

    @property
    def pids(self) -> list[int]:
        return sorted({h.pid for h in self.holders})
