"""The `controller.quorum.*` settings the core reads, with Kafka's defaults (QuorumConfig.java)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class QuorumConfig:
    cluster_id: str
    voters: frozenset[int]
    election_timeout_ms: int = 1000  # controller.quorum.election.timeout.ms
    fetch_timeout_ms: int = 2000  # controller.quorum.fetch.timeout.ms
    election_backoff_max_ms: int = 1000  # controller.quorum.election.backoff.max.ms
    request_timeout_ms: int = 2000  # controller.quorum.request.timeout.ms
    retry_backoff_ms: int = 20  # controller.quorum.retry.backoff.ms
    # Kafka's leader parks an empty Fetch for up to MAX_FETCH_WAIT_MS (500); this core answers at once,
    # so a follower that got nothing waits this long before asking again.
    fetch_idle_ms: int = 500
    # The election backoff is this many ms times random[0, 2^retries) (KafkaRaftClient's 100 ms step).
    election_backoff_step_ms: int = 100
    max_fetch_records: int = 64

    @property
    def majority(self) -> int:
        return len(self.voters) // 2 + 1
