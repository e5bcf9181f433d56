"""Crash-safe file replacement: write `<name>.tmp`, fsync it, rename over `<name>`, fsync the directory."""

from __future__ import annotations

import os
from pathlib import Path


def fsync_dir(path: str | Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: str | Path, data: bytes) -> None:
    """Replace `path` with `data` so a crash leaves either the old or the new content, never a mix.

    Like Kafka's meta.properties writer the temporary file is `<name>.tmp` next to the target; a stale
    one from an earlier crash is simply overwritten. Raises OSError; on failure the temp file is removed.
    """
    # str paths throughout: a broker placing 100,000 new replicas writes a partition.metadata for
    # each, and pathlib's objects would cost more than the syscalls.
    target = os.fspath(path)
    tmp = target + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    fsync_dir(os.path.dirname(target) or ".")
