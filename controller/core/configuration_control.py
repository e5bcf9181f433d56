"""Dynamic configs from ConfigRecords: per topic, per broker and cluster-wide defaults."""

from __future__ import annotations

from typing import Any

from kraftpy.metadata import ConfigResourceType
from protocol.errors import Errors, KafkaError

UNCLEAN_LEADER_ELECTION_ENABLE = "unclean.leader.election.enable"

# Topic-level configs accepted at CreateTopics (LogConfig's names); values are checked for the
# ones the controller itself reads.
TOPIC_CONFIG_NAMES = frozenset(
    {
        "cleanup.policy",
        "compression.type",
        "delete.retention.ms",
        "file.delete.delay.ms",
        "flush.messages",
        "flush.ms",
        "index.interval.bytes",
        "local.retention.bytes",
        "local.retention.ms",
        "max.compaction.lag.ms",
        "max.message.bytes",
        "message.timestamp.after.max.ms",
        "message.timestamp.before.max.ms",
        "message.timestamp.type",
        "min.cleanable.dirty.ratio",
        "min.compaction.lag.ms",
        "min.insync.replicas",
        "preallocate",
        "remote.storage.enable",
        "retention.bytes",
        "retention.ms",
        "segment.bytes",
        "segment.index.bytes",
        "segment.jitter.ms",
        "segment.ms",
        UNCLEAN_LEADER_ELECTION_ENABLE,
    }
)

_BOOLEAN_CONFIGS = frozenset({UNCLEAN_LEADER_ELECTION_ENABLE, "preallocate", "remote.storage.enable"})


def validate_topic_config(name: str, value: str | None) -> None:
    if name not in TOPIC_CONFIG_NAMES:
        raise KafkaError(Errors.INVALID_CONFIG, f"Unknown topic config name: {name}")
    if value is None:
        raise KafkaError(Errors.INVALID_CONFIG, f"Null value not supported for topic config: {name}")
    if name in _BOOLEAN_CONFIGS and value.strip().lower() not in ("true", "false"):
        raise KafkaError(
            Errors.INVALID_CONFIG,
            f"Invalid value {value} for configuration {name}: Expected value to be either true or false",
        )
    if name == "min.insync.replicas":
        try:
            ok = int(value) >= 1
        except ValueError:
            ok = False
        if not ok:
            raise KafkaError(
                Errors.INVALID_CONFIG,
                f"Invalid value {value} for configuration {name}: Value must be at least 1",
            )


class ConfigurationControlManager:
    def __init__(self, static_defaults: dict[str, str] | None = None) -> None:
        self._static = dict(static_defaults or {})
        self.configs: dict[tuple[int, str], dict[str, str]] = {}

    def replay_config(self, record: Any) -> None:
        key = (record.ResourceType, record.ResourceName)
        if record.Value is None:
            entries = self.configs.get(key)
            if entries is not None:
                entries.pop(record.Name, None)
                if not entries:
                    del self.configs[key]
        else:
            self.configs.setdefault(key, {})[record.Name] = record.Value

    def delete_topic_configs(self, topic_name: str) -> None:
        self.configs.pop((ConfigResourceType.TOPIC, topic_name), None)

    def topic_config(self, topic_name: str) -> dict[str, str]:
        return dict(self.configs.get((ConfigResourceType.TOPIC, topic_name), {}))

    def effective_topic_value(self, topic_name: str, name: str) -> str | None:
        """The topic's own value, else the cluster-wide broker default, else the static config."""
        for key in ((ConfigResourceType.TOPIC, topic_name), (ConfigResourceType.BROKER, "")):
            entries = self.configs.get(key)
            if entries and name in entries:
                return entries[name]
        return self._static.get(name)

    def unclean_leader_election_enabled(self, topic_name: str) -> bool:
        value = self.effective_topic_value(topic_name, UNCLEAN_LEADER_ELECTION_ENABLE)
        return value is not None and value.strip().lower() == "true"

    def state(self) -> dict[tuple[int, str], dict[str, str]]:
        return self.snapshot()

    def snapshot(self) -> dict[tuple[int, str], dict[str, str]]:
        # One level deeper than the dict: replay changes each resource's entries in place.
        return {k: dict(v) for k, v in self.configs.items()}

    def restore(self, snapshot: dict[tuple[int, str], dict[str, str]]) -> None:
        self.configs = snapshot
