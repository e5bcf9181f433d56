"""Errors raised by partition logs and log dirs.

None of these is an OSError: an OSError always means the disk failed and goes to the log dir's
failure channel unchanged, while these mean bad input, a bad file, or a dir already offline.
"""

from __future__ import annotations

from pathlib import Path

from protocol.errors import Errors, KafkaError


class LogDirOfflineError(KafkaError):
    """The log dir has failed; callers answer KAFKA_STORAGE_ERROR for every partition in it."""

    def __init__(self, path: str | Path, reason: str | None = None) -> None:
        self.path = str(path)
        super().__init__(
            Errors.KAFKA_STORAGE_ERROR, f"log dir {path} is offline" + (f": {reason}" if reason else "")
        )


class OffsetOutOfRangeError(KafkaError):
    """A read outside [log start offset, log end offset]."""

    def __init__(self, offset: int, log_start_offset: int, log_end_offset: int, where: str) -> None:
        self.offset = offset
        self.log_start_offset = log_start_offset
        self.log_end_offset = log_end_offset
        super().__init__(
            Errors.OFFSET_OUT_OF_RANGE,
            f"offset {offset} is outside [{log_start_offset}, {log_end_offset}] of {where}",
        )


class InconsistentTopicIdError(KafkaError):
    """partition.metadata names another topic id than the one the partition was opened for."""

    def __init__(self, path: str | Path, on_disk: object, expected: object) -> None:
        super().__init__(
            Errors.INCONSISTENT_TOPIC_ID,
            f"{path} holds topic id {on_disk}, expected {expected}",
        )


class CorruptLogError(Exception):
    """A segment holds a bad batch somewhere other than at its torn tail; opening the log stops here.

    Names the file and the byte position so an operator can look at it.
    """

    def __init__(self, path: str | Path, position: int, reason: str) -> None:
        self.path = str(path)
        self.position = position
        self.reason = reason
        super().__init__(f"{path}: bad record batch at file position {position}: {reason}")


class CorruptCheckpointError(ValueError):
    """A checkpoint or metadata file that cannot be parsed (not a disk error)."""

    def __init__(self, path: str | Path, reason: str) -> None:
        self.path = str(path)
        super().__init__(f"{path}: {reason}")


class UnexpectedAppendOffsetError(Exception):
    """A follower append whose first offset is below the log end offset, or whose offsets go backwards.

    The replica fetcher answers it by truncating; it never reaches a client.
    """

    def __init__(self, first_offset: int, log_end_offset: int, reason: str) -> None:
        self.first_offset = first_offset
        self.log_end_offset = log_end_offset
        super().__init__(reason)


class LogClosedError(RuntimeError):
    """A call on a partition log after close() or delete()."""
