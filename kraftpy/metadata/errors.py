"""Errors raised while replaying metadata records."""

from __future__ import annotations


class MetadataReplayError(Exception):
    """A record that cannot be applied to the current state (unknown topic, stale broker epoch...).

    Replay is the only way state changes, so such a record means the log and the state disagree:
    the controller treats it as fatal, the tools report it with the record's offset.
    """

    def __init__(self, message: str, offset: int | None = None) -> None:
        super().__init__(message if offset is None else f"{message} (record at offset {offset})")
        self.offset = offset


class InvalidReplicaDirectoriesError(MetadataReplayError, ValueError):
    """Kafka's InvalidReplicaDirectoriesException: a Directories list not aligned with Replicas.

    Also a ValueError: the controller reports every record it cannot replay as one.
    """
