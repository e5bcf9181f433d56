"""The metadata image at the high watermark, for snapshots (Kafka's controller-side MetadataLoader).

The core holds speculative state (records replayed before they are durable); a snapshot must hold
only committed records, so committed appends are collected here and folded into a MetadataImage
when one is needed. Folding is lazy: the common path (heartbeats, NoOps) only appends to a queue.

A snapshot folds on its own thread (`fold`): 100,000 pending records (a broker's cold start reports
every replica's dir) took 0.3-1.4 s to fold, a stall every broker's heartbeat waited behind when it
ran on the loop. The loop only appends; the fold drains the queue from the front under a lock, so a
commit arriving meanwhile is either folded now, in order, or left for the next fold.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from kraftpy.image import MetadataDelta, MetadataImage


@dataclass(frozen=True)
class _Committed:
    base_offset: int
    end_offset: int
    epoch: int
    timestamp_ms: int
    records: Sequence[Any]


class Folded(NamedTuple):
    """The image of every committed record below `end_offset`."""

    image: MetadataImage
    end_offset: int
    in_transaction: bool
    """A metadata transaction is open at `end_offset` (its records are left out of the image)."""


class CommittedImage:
    def __init__(self, delta: MetadataDelta, end_offset: int) -> None:
        """`delta`: every committed record below `end_offset` already replayed into it."""
        self._delta = delta
        self._image = delta.apply()
        self._delta = delta.next_delta(self._image)
        self._pending: deque[_Committed] = deque()
        self._folded_end = end_offset
        self._fold_lock = threading.Lock()
        self.end_offset = end_offset

    def add(self, base_offset: int, records: Sequence[Any], epoch: int, timestamp_ms: int) -> None:
        """Records now durable, in offset order, starting at the current end."""
        if base_offset < self.end_offset:
            raise ValueError(f"BUG: committed records at {base_offset} below the image end {self.end_offset}")
        self.end_offset = base_offset + len(records)
        self._pending.append(_Committed(base_offset, self.end_offset, epoch, timestamp_ms, records))

    def skip_to(self, end_offset: int) -> None:
        """A control batch (LeaderChange) was committed: offsets move on with no record to fold."""
        if end_offset > self.end_offset:
            self._pending.append(_Committed(self.end_offset, end_offset, -1, -1, ()))
            self.end_offset = end_offset

    def fold(self) -> Folded:
        """Fold what is pending into the image; safe on a thread while the loop adds."""
        with self._fold_lock:
            pending = self._pending
            if pending:
                delta = self._delta
                while pending:
                    c = pending.popleft()
                    offset = c.base_offset
                    for record in c.records:
                        delta.replay(record, offset, epoch=c.epoch, timestamp_ms=c.timestamp_ms)
                        offset += 1
                    self._folded_end = c.end_offset
                self._image = delta.apply()
                self._delta = delta.next_delta(self._image)
            return Folded(self._image, self._folded_end, self._delta.in_transaction)

    def image(self) -> MetadataImage:
        """The image of everything committed so far (a transaction still open is left out)."""
        return self.fold().image

    @property
    def in_transaction(self) -> bool:
        return self.fold().in_transaction
