"""Opening a log's segments after a restart or a crash (Kafka's LogLoader), for both kinds of log.

Which files are segments, which indexes lost their segment, which segments are checked batch by
batch, where a torn tail may be: decided here once, for partition logs and the metadata log alike.
What each log learns from the batches (producer state, leader epochs) comes in through callbacks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from kraftpy.log.errors import CorruptLogError
from kraftpy.log.segment import (
    INDEX_SUFFIX,
    TIME_INDEX_SUFFIX,
    BatchObserver,
    LogSegment,
    TornTail,
    parse_segment_file_name,
)
from protocol.record_batch import BatchHeader


def segment_files(names: Iterable[str]) -> tuple[list[int], list[str]]:
    """The base offsets of the segments among `names`, sorted, and the index files whose segment is
    gone (left by a crash while deleting; one would be taken for the index of a new segment there)."""
    bases: list[int] = []
    indexes: list[tuple[int, str]] = []
    for name in names:
        base = parse_segment_file_name(name)
        if base is not None:
            bases.append(base)
            continue
        for suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX):
            index_base = parse_segment_file_name(name, suffix)
            if index_base is not None:
                indexes.append((index_base, name))
    have = set(bases)
    return sorted(bases), [name for base, name in indexes if base not in have]


def load_segments(
    directory: Path,
    bases: list[int],
    *,
    recovery_point: int | None,
    on_batch: BatchObserver,
    on_segment: Callable[[int], None] | None = None,
    contiguous: bool = False,
    read_only: bool = False,
    now_ms: int,
    index_interval_bytes: int,
    max_index_entries: int,
) -> tuple[list[LogSegment], TornTail | None]:
    """Open the segments at `bases` (sorted) and check them; returns them and the torn tail cut.

    Segments holding offsets at or above `recovery_point` are checked batch by batch, CRC included,
    the others by headers only; None checks every batch. Only the last segment may end in a torn
    tail; any other damage raises CorruptLogError. `contiguous` also refuses gaps between offsets
    (a Raft log has none). `on_segment(base)` is called before a segment's batches are shown to
    `on_batch`. On any error every segment opened is closed again.
    """
    segments: list[LogSegment] = []
    torn: TornTail | None = None
    expected = 0
    current: LogSegment | None = None

    def check(position: int, h: BatchHeader) -> None:
        nonlocal expected
        if h.base_offset != expected:
            assert current is not None
            raise CorruptLogError(
                current.path, position, f"batch starts at offset {h.base_offset}, expected {expected}"
            )
        expected = h.next_offset
        on_batch(position, h)

    try:
        for i, base in enumerate(bases):
            current = LogSegment.open_existing(
                directory,
                base,
                now_ms=now_ms,
                read_only=read_only,
                index_interval_bytes=index_interval_bytes,
                max_index_entries=max_index_entries,
            )
            segments.append(current)
            if i > 0:
                end = segments[i - 1].next_offset
                if base < end or (contiguous and base != end):
                    raise CorruptLogError(
                        current.path, 0, f"segment starts at offset {base} but the one before ends at {end}"
                    )
            is_last = i == len(bases) - 1
            recover = recovery_point is None or is_last or bases[i + 1] > recovery_point
            if on_segment is not None:
                on_segment(base)
            expected = base
            torn = current.load(recover=recover, is_last=is_last, on_batch=check if contiguous else on_batch)
            if is_last:
                continue
            if current.dirty and recovery_point is not None and not read_only:
                # Rebuilt indexes below the recovery point are trusted at the next open: they go to
                # disk before anything is appended.
                current.on_become_inactive()
            else:
                current.close_index_handles()
    except BaseException:
        for seg in segments:
            try:
                seg.close()
            except OSError:
                pass
        raise
    return segments, torn
