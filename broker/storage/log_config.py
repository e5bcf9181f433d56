"""Settings of one partition log, with Kafka's broker names (`log.*`) and topic names as overrides."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

# topic config name -> (attribute, broker config name)
_TOPIC_KEYS = {
    "segment.bytes": ("segment_bytes", "log.segment.bytes"),
    "segment.ms": ("segment_ms", "log.roll.ms"),
    "retention.ms": ("retention_ms", "log.retention.ms"),
    "retention.bytes": ("retention_bytes", "log.retention.bytes"),
    "index.interval.bytes": ("index_interval_bytes", "log.index.interval.bytes"),
    "segment.index.bytes": ("segment_index_bytes", "log.index.size.max.bytes"),
    "max.message.bytes": ("max_message_bytes", "message.max.bytes"),
}


@dataclass(frozen=True, slots=True)
class LogConfig:
    segment_bytes: int = 1024 * 1024 * 1024
    segment_ms: int = 7 * 24 * 3600 * 1000
    retention_ms: int = 7 * 24 * 3600 * 1000  # < 0: keep forever
    retention_bytes: int = -1  # < 0: no size limit
    index_interval_bytes: int = 4096
    segment_index_bytes: int = 10 * 1024 * 1024
    max_message_bytes: int = 1048588
    producer_id_expiration_ms: int = 86_400_000

    def __post_init__(self) -> None:
        if self.segment_bytes < 14:
            raise ValueError(f"segment.bytes {self.segment_bytes} is below the minimum 14")
        if self.segment_ms < 1:
            raise ValueError(f"segment.ms {self.segment_ms} must be at least 1")
        if self.index_interval_bytes < 0:
            raise ValueError(f"index.interval.bytes {self.index_interval_bytes} must not be negative")
        if self.segment_index_bytes < 8:
            raise ValueError(f"segment.index.bytes {self.segment_index_bytes} must hold at least one entry")

    @classmethod
    def from_kafka_config(cls, cfg: Any, topic_configs: Mapping[str, str] | None = None) -> LogConfig:
        """Broker defaults from a kraftpy.config.KafkaConfig, then a topic's own configs on top."""
        base: dict[str, int] = {}
        for attr, name in (
            ("segment_bytes", "log_segment_bytes"),
            ("segment_ms", "effective_log_roll_ms"),
            ("retention_ms", "effective_log_retention_ms"),
            ("retention_bytes", "log_retention_bytes"),
        ):
            value = getattr(cfg, name, None)
            if value is not None:
                base[attr] = int(value)
        return replace(cls(**base), **_topic_overrides(topic_configs or {}))

    @classmethod
    def from_configs(cls, configs: Mapping[str, str | int]) -> LogConfig:
        """From Kafka names: broker names (`log.segment.bytes`) first, topic names (`segment.bytes`) over them."""
        known = {f.name for f in fields(cls)}
        values: dict[str, int] = {}
        for attr, broker_name in _TOPIC_KEYS.values():
            if broker_name in configs:
                values[attr] = _int(configs, broker_name)
        if "producer.id.expiration.ms" in configs:
            values["producer_id_expiration_ms"] = _int(configs, "producer.id.expiration.ms")
        values.update(_topic_overrides(configs))
        assert set(values) <= known
        return cls(**values)


def _topic_overrides(configs: Mapping[str, str | int]) -> dict[str, int]:
    return {attr: _int(configs, key) for key, (attr, _) in _TOPIC_KEYS.items() if key in configs}


def _int(configs: Mapping[str, str | int], key: str) -> int:
    try:
        return int(configs[key])
    except ValueError:
        raise ValueError(f"{key}={configs[key]!r} is not a number") from None
