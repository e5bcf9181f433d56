"""The replica manager's and fetchers' settings, read typed from the broker's config once."""

from __future__ import annotations

from dataclasses import dataclass

from kraftpy.config import KafkaConfig


@dataclass(frozen=True, slots=True)
class ReplicaSettings:
    replica_lag_time_max_ms: int
    min_insync_replicas: int
    fetch_wait_max_ms: int
    fetch_max_bytes: int
    leader_tail_max_bytes: int
    fetch_backoff_ms: int
    hw_checkpoint_interval_ms: int
    request_timeout_ms: int

    @classmethod
    def from_config(cls, cfg: KafkaConfig) -> ReplicaSettings:
        return cls(
            replica_lag_time_max_ms=int(cfg.replica_lag_time_max_ms),
            min_insync_replicas=int(cfg.min_insync_replicas),
            fetch_wait_max_ms=int(cfg.replica_fetch_wait_max_ms),
            fetch_max_bytes=int(cfg.replica_fetch_max_bytes),
            leader_tail_max_bytes=int(cfg.kraftpy_leader_tail_max_bytes),
            fetch_backoff_ms=int(cfg.replica_fetch_backoff_ms),
            hw_checkpoint_interval_ms=int(cfg.replica_high_watermark_checkpoint_interval_ms),
            request_timeout_ms=int(cfg.replica_socket_timeout_ms),
        )
