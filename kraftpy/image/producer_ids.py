"""The next producer id block to hand out (Kafka's ProducerIdsImage)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar


@dataclass(frozen=True)
class ProducerIdsImage:
    next_producer_id: int = -1

    EMPTY: ClassVar[ProducerIdsImage]

    def is_empty(self) -> bool:
        return self.next_producer_id == -1


ProducerIdsImage.EMPTY = ProducerIdsImage()


class ProducerIdsDelta:
    def __init__(self, image: ProducerIdsImage) -> None:
        self.image = image
        self.next_producer_id = image.next_producer_id

    def replay_producer_ids(self, rec: Any) -> None:
        self.next_producer_id = rec.NextProducerId

    def apply(self) -> ProducerIdsImage:
        return ProducerIdsImage(self.next_producer_id)
