"""The metadata image at the high watermark, for snapshots (Kafka's controller-side MetadataLoader).

The core holds speculative state (records replayed before they are durable); a snapshot must hold
only committed records, so committed appends are collected here and folded into a MetadataImage
when one is needed. Folding is lazy: the common path (heartbeats, NoOps) only appends to a list.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kraftpy.image import MetadataDelta, MetadataImage


@dataclass(frozen=True)
class _Committed:
    base_offset: int
    epoch: int
    timestamp_ms: int
    records: Sequence[Any]


class CommittedImage:
    def __init__(self, delta: MetadataDelta, end_offset: int) -> None:
        """`delta`: every committed record below `end_offset` already replayed into it."""
        self._delta = delta
        self._image = delta.apply()
        self._delta = delta.next_delta(self._image)
        self._pending: list[_Committed] = []
        self.end_offset = end_offset

    def add(self, base_offset: int, records: Sequence[Any], epoch: int, timestamp_ms: int) -> None:
        """Records now durable, in offset order, starting at the current end."""
        if base_offset < self.end_offset:
            raise ValueError(f"BUG: committed records at {base_offset} below the image end {self.end_offset}")
        self._pending.append(_Committed(base_offset, epoch, timestamp_ms, records))
        self.end_offset = base_offset + len(records)

    def skip_to(self, end_offset: int) -> None:
        """A control batch (LeaderChange) was committed: offsets move on with no record to fold."""
        self.end_offset = max(self.end_offset, end_offset)

    def image(self) -> MetadataImage:
        """The image of everything committed so far (a transaction still open is left out)."""
        if self._pending:
            delta = self._delta
            for c in self._pending:
                offset = c.base_offset
                for record in c.records:
                    delta.replay(record, offset, epoch=c.epoch, timestamp_ms=c.timestamp_ms)
                    offset += 1
            self._pending = []
            self._image = delta.apply()
            self._delta = delta.next_delta(self._image)
        return self._image

    @property
    def in_transaction(self) -> bool:
        self.image()
        return self._delta.in_transaction
