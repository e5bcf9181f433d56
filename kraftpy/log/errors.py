"""The log stack's errors, the same for partition logs and the metadata log.

None of these is an OSError: an OSError always means the disk failed and goes unchanged to the
owner's failure path (a broker's log dir failure channel, the controller's stop), while these mean
bad input, a bad file, or an offset the log does not hold.
"""

from __future__ import annotations

from pathlib import Path, PosixPath

from protocol.errors import Errors, KafkaError


class FilePath(PosixPath):
    """A path that also equals the same path given as text.

    Brokers keep log dir paths as `str`, the metadata log as `Path`; an error names its file for
    both, and each compares it with what it holds.
    """

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            return str(self) == other
        return super().__eq__(other)

    def __hash__(self) -> int:
        return super().__hash__()


class LogError(Exception):
    """A log cannot do what was asked: bad offsets, a bad file, a closed or read-only log."""


class CorruptLogError(LogError):
    """Bytes on disk that are not a valid part of the log, anywhere but a torn tail.

    Names the file and the byte position in it, so a person can look (`kraftpy metadata dump`).
    Opening the log stops there: nothing is skipped silently.
    """

    def __init__(self, path: Path | str, position: int, reason: str) -> None:
        self.path = FilePath(path)
        self.position = position
        self.reason = reason
        super().__init__(f"{path}: corrupt at file position {position}: {reason}")


class OffsetOutOfRangeError(KafkaError, LogError):
    """An offset outside [log start offset, log end offset]: OFFSET_OUT_OF_RANGE for a client."""

    def __init__(
        self,
        offset: int,
        log_start_offset: int,
        log_end_offset: int,
        where: str | Path,
        message: str | None = None,
    ) -> None:
        self.offset = offset
        self.log_start_offset = log_start_offset
        self.log_end_offset = log_end_offset
        super().__init__(
            Errors.OFFSET_OUT_OF_RANGE,
            message
            or f"offset {offset} is outside the log [{log_start_offset}, {log_end_offset}] of {where}",
        )


class CorruptCheckpointError(LogError, ValueError):
    """A checkpoint or metadata file beside the segments that cannot be parsed (not a disk error)."""

    def __init__(self, path: str | Path, reason: str) -> None:
        self.path = FilePath(path)
        super().__init__(f"{path}: {reason}")
