"""What the quorum tests compare between voters: the bytes of their committed log."""

from __future__ import annotations

from pathlib import Path

from protocol.record_batch import read_batch_header


def committed_prefix(log_dir: Path, high_watermark: int) -> bytes:
    """The bytes of every batch below `high_watermark` in a `__cluster_metadata-0` dir, segments in
    offset order: byte-identical on every voter that holds them."""
    out = []
    for segment in sorted(log_dir.glob("*.log")):
        data = segment.read_bytes()
        pos = 0
        while pos < len(data):
            h = read_batch_header(data, pos)
            if h.next_offset > high_watermark:
                return b"".join(out) + data[:pos]
            pos += h.size
        out.append(data)
    return b"".join(out)
