"""Errors raised while replaying metadata records into an image."""

from __future__ import annotations

from kraftpy.metadata.errors import InvalidReplicaDirectoriesError, MetadataReplayError

__all__ = ["InvalidReplicaDirectoriesError", "MetadataReplayError", "UnknownMetadataRecordError"]


class UnknownMetadataRecordError(MetadataReplayError):
    """A record type the image does not know, replayed by a strict delta."""
