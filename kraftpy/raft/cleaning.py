"""When a node applies metadata retention to its log (`metadata.max.retention.bytes` / `.ms`).

Kafka's KafkaRaftClient runs `maybeClean` from its poll loop once a minute
(RaftMetadataLogCleanerManager), on voters and observers alike, besides after each snapshot written.
Without the timer a snapshot aged past `metadata.max.retention.ms` would stay until the next
snapshot, which a quiet cluster may not write for hours.
"""

from __future__ import annotations

from dataclasses import dataclass

LOG_CLEAN_INTERVAL_MS = 60_000
"""Kafka's fixed interval (not a config)."""


@dataclass(slots=True)
class CleaningTimer:
    next_ms: int
    interval_ms: int = LOG_CLEAN_INTERVAL_MS

    @classmethod
    def starting(cls, now_ms: int, interval_ms: int = LOG_CLEAN_INTERVAL_MS) -> CleaningTimer:
        """The first cleaning one interval from now, as Kafka's timer starts."""
        return cls(now_ms + interval_ms, interval_ms)

    def due(self, now_ms: int) -> bool:
        """True once per interval: the caller cleans now, and the next one is an interval away."""
        if now_ms < self.next_ms:
            return False
        self.next_ms = now_ms + self.interval_ms
        return True
