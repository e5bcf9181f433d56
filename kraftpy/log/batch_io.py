"""Walking record batches stored in a segment file, with protocol.record_batch doing all parsing.

A segment is read in chunks with pread: a scan of headers only skips the bodies of large batches
without reading them; a full scan (recovery) reads each whole batch so its CRC can be checked.
Errors are protocol.record_batch's CorruptBatchError / TruncatedBatchError, with positions in the file.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from crc32c import crc32c

from protocol import record_batch
from protocol.record_batch import (
    BATCH_OVERHEAD,
    CRC_START,
    BatchHeader,
    Buffer,
    CorruptBatchError,
    TruncatedBatchError,
    read_batch_header,
)

CHUNK_BYTES = 1024 * 1024


def read_header(buf: Buffer, pos: int = 0) -> BatchHeader:
    """The header at `pos` when at least the 61 header bytes are in `buf`, even if the body is not."""
    try:
        return read_batch_header(buf, pos)
    except TruncatedBatchError:
        if len(buf) - pos < BATCH_OVERHEAD:
            raise
        # read_batch_header has checked magic and length before finding the body cut short; the
        # fixed header is all a scan needs. Its layout stays defined in one place.
        return BatchHeader._make(record_batch._HEADER.unpack_from(buf, pos))


def crc_matches(batch: Buffer, header: BatchHeader) -> bool:
    """Whether the stored CRC-32C covers `batch` (the whole batch, starting at its first byte)."""
    return crc32c(memoryview(batch)[CRC_START : header.size]) == header.crc


def pread_exact(fd: int, size: int, position: int) -> bytes:
    """Up to `size` bytes at `position`; fewer only at the end of the file."""
    data = os.pread(fd, size, position)
    if len(data) == size or not data:
        return data
    parts = [data]
    got = len(data)
    while got < size:
        more = os.pread(fd, size - got, position + got)
        if not more:
            break
        parts.append(more)
        got += len(more)
    return b"".join(parts)


def _at(e: CorruptBatchError, position: int) -> CorruptBatchError:
    return type(e)(position, e.reason)


def iter_file_batches(
    fd: int, start: int, end: int, *, whole: bool, chunk_bytes: int = CHUNK_BYTES
) -> Iterator[tuple[int, BatchHeader, memoryview | None]]:
    """(position, header, bytes of the whole batch or None) for each batch in [start, end) of a file.

    With `whole=False` only headers are read. A batch running past `end` raises TruncatedBatchError,
    an impossible header CorruptBatchError, both naming the batch's file position.
    """
    pos = start
    buf = b""
    buf_start = start
    while pos < end:
        off = pos - buf_start
        if len(buf) - off < BATCH_OVERHEAD:
            buf = pread_exact(fd, min(max(chunk_bytes, BATCH_OVERHEAD), end - pos), pos)
            buf_start, off = pos, 0
        try:
            h = read_header(buf, off)
        except CorruptBatchError as e:
            raise _at(e, pos) from None
        size = h.size
        if pos + size > end:
            raise TruncatedBatchError(
                pos, f"batch of {size} bytes but only {end - pos} bytes left in the file"
            )
        view = None
        if whole:
            if len(buf) - off < size:
                buf = pread_exact(fd, min(max(chunk_bytes, size), end - pos), pos)
                buf_start, off = pos, 0
                if len(buf) < size:
                    raise TruncatedBatchError(pos, f"batch of {size} bytes but the file ends first")
            view = memoryview(buf)[off : off + size]
        yield pos, h, view
        pos += size


def iter_buffer_batches(buf: Buffer) -> tuple[list[tuple[int, BatchHeader]], int]:
    """Whole batches at the start of `buf` and how many bytes they take; a partial batch at the end is
    left out (as Kafka's MemoryRecords does); an impossible header raises CorruptBatchError."""
    out: list[tuple[int, BatchHeader]] = []
    pos = 0
    end = len(buf)
    while pos < end:
        try:
            h = read_batch_header(buf, pos)
        except TruncatedBatchError:
            break
        out.append((pos, h))
        pos += h.size
    return out, pos
