"""Errors of the metadata log: the log stack's own (kraftpy.log.errors)."""

from __future__ import annotations

from kraftpy.log.errors import CorruptLogError, LogError, OffsetOutOfRangeError

# One hierarchy for every log, under the name the metadata log's callers catch: a MetadataLogError
# handler also sees the corruption and offset errors raised by the shared segments and checkpoints.
MetadataLogError = LogError

__all__ = ["CorruptLogError", "MetadataLogError", "OffsetOutOfRangeError"]
