"""Errors of the on-disk metadata log."""

from __future__ import annotations

from pathlib import Path


class MetadataLogError(Exception):
    """The metadata log cannot do what was asked (bad offsets, closed log...)."""


class CorruptLogError(MetadataLogError):
    """Bytes on disk that are not a valid part of the log, anywhere but a torn tail.

    Names the file and the byte position in it, so a person can look (`kraftpy metadata dump`).
    """

    def __init__(self, path: Path | str, position: int, reason: str) -> None:
        super().__init__(f"{path}: corrupt at file position {position}: {reason}")
        self.path = Path(path)
        self.position = position
        self.reason = reason


class OffsetOutOfRangeError(MetadataLogError):
    """An offset below the log start or beyond the log end."""
