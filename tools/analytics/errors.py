"""Errors the analysis reports to its user: one clear sentence each, never a stack trace."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


class AnalysisError(Exception):
    """The analysis cannot run or cannot finish: bad input, an unreadable log, a failed Spark job."""


class LogDirError(AnalysisError):
    """The directory given is not a readable metadata log."""


@dataclass(frozen=True, slots=True)
class CorruptSpot:
    """One unreadable batch: where it is, why, and how many bytes a --skip-corrupt run left out."""

    file: str
    position: int
    reason: str
    skipped_bytes: int
    base_offset: int | None = None

    def describe(self) -> str:
        at = f"{self.file} at byte {self.position}"
        if self.base_offset is not None:
            at += f" (batch base offset {self.base_offset})"
        return f"corrupt record batch in {at}: {self.reason}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class CorruptBatchesError(AnalysisError):
    """The analysis found corrupt batches (each a CorruptSpot) and was not asked to skip them.

    Not the log stack's kraftpy.log.CorruptLogError: that stops a log from opening at the first bad
    batch, while an analysis reads on and reports every one it found.
    """

    def __init__(self, spots: list[CorruptSpot]) -> None:
        self.spots = spots
        first = spots[0].describe()
        more = f" (and {len(spots) - 1} more)" if len(spots) > 1 else ""
        super().__init__(f"{first}{more}; rerun with --skip-corrupt to count and skip corrupt batches")
