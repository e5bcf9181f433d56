"""Dynamic configs by resource (Kafka's ConfigurationsImage / ConfigurationsDelta)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, ClassVar, NamedTuple


class ConfigResource(NamedTuple):
    type: int
    name: str


@dataclass(frozen=True)
class ConfigurationsImage:
    resources: Mapping[ConfigResource, Mapping[str, str]]

    EMPTY: ClassVar[ConfigurationsImage]

    def is_empty(self) -> bool:
        return not self.resources

    def configs(self, resource_type: int, name: str) -> Mapping[str, str]:
        return self.resources.get(ConfigResource(resource_type, name), MappingProxyType({}))


ConfigurationsImage.EMPTY = ConfigurationsImage(MappingProxyType({}))


class ConfigurationsDelta:
    def __init__(self, image: ConfigurationsImage) -> None:
        self.image = image
        # None as a value deletes the key; None as a whole resource drops every key
        self.changes: dict[ConfigResource, dict[str, str | None] | None] = {}

    def replay_config(self, rec: Any) -> None:
        resource = ConfigResource(rec.ResourceType, rec.ResourceName)
        current = self.changes.get(resource)
        if current is None:
            current = {}
            if resource in self.changes:
                # the resource was dropped earlier in this delta: start from nothing
                current = {k: None for k in self.image.configs(*resource)}
            self.changes[resource] = current
        current[rec.Name] = rec.Value

    def delete_resource(self, resource: ConfigResource) -> None:
        self.changes[resource] = None

    def apply(self) -> ConfigurationsImage:
        resources = dict(self.image.resources)
        for resource, change in self.changes.items():
            if change is None:
                resources.pop(resource, None)
                continue
            merged = dict(resources.get(resource, {}))
            for key, value in change.items():
                if value is None:
                    merged.pop(key, None)
                else:
                    merged[key] = value
            if merged:
                resources[resource] = MappingProxyType(dict(sorted(merged.items())))
            else:
                resources.pop(resource, None)
        return ConfigurationsImage(MappingProxyType(dict(sorted(resources.items()))))
