"""Errors raised while replaying metadata records into an image."""

from __future__ import annotations


class MetadataReplayError(Exception):
    """A record that cannot be applied to the current image (unknown topic, stale broker epoch...).

    Replay is the only way state changes, so such a record means the log and the image disagree:
    the controller treats it as fatal, the tools report it with the record's offset.
    """

    def __init__(self, message: str, offset: int | None = None) -> None:
        super().__init__(message if offset is None else f"{message} (record at offset {offset})")
        self.offset = offset


class InvalidReplicaDirectoriesError(MetadataReplayError):
    """Kafka's InvalidReplicaDirectoriesException: a Directories list not aligned with Replicas."""


class UnknownMetadataRecordError(MetadataReplayError):
    """A record type the image does not know, replayed by a strict delta."""
