"""Errors of the broker's log dirs and partition logs that the metadata log does not share.

The log stack's own (CorruptLogError, OffsetOutOfRangeError, CorruptCheckpointError) are in
kraftpy.log.errors. None of these is an OSError: an OSError always means the disk failed and goes
to the log dir's failure channel unchanged.
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


class LogDirResourceError(KafkaError):
    """The process ran out of file descriptors (EMFILE, ENFILE) while working in a dir. The disk is
    fine, so the dir stays online: the request fails with a retriable KAFKA_STORAGE_ERROR, and the
    operator is told to raise the open-file limit."""

    def __init__(self, path: str | Path, exc: OSError) -> None:
        self.path = str(path)
        super().__init__(
            Errors.KAFKA_STORAGE_ERROR,
            f"out of file descriptors working in log dir {path} ({exc.strerror or exc}); the dir stays "
            "online: raise the open-file limit (ulimit -n, LimitNOFILE)",
        )


class InconsistentTopicIdError(KafkaError):
    """partition.metadata names another topic id than the one the partition was opened for."""

    def __init__(self, path: str | Path, on_disk: object, expected: object) -> None:
        super().__init__(
            Errors.INCONSISTENT_TOPIC_ID,
            f"{path} holds topic id {on_disk}, expected {expected}",
        )


class UnexpectedAppendOffsetError(Exception):
    """A follower append whose first offset is below the log end offset, or whose offsets go backwards.

    The replica fetcher answers it by truncating; it never reaches a client.
    """

    def __init__(self, first_offset: int, log_end_offset: int, reason: str) -> None:
        self.first_offset = first_offset
        self.log_end_offset = log_end_offset
        super().__init__(reason)


class LogClosedError(KafkaError):
    """A call on a partition log after close() or delete(): the broker stopped serving the
    partition here (it is shutting down, or the replica moved or was deleted), so a client hears
    the retriable NOT_LEADER_OR_FOLLOWER and asks elsewhere."""

    def __init__(self, message: str) -> None:
        super().__init__(Errors.NOT_LEADER_OR_FOLLOWER, message)
