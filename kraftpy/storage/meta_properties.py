"""meta.properties: the identity file at the root of every log dir and the metadata dir.

v0 (ZooKeeper mode): `version` may be absent (= 0), optional broker.id, cluster.id, directory.id.
v1 (KRaft): version=1, cluster.id and node.id required, directory.id optional when parsing but
always written by format and at startup. Messages follow Kafka's MetaProperties.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import IntEnum
from pathlib import Path

from kraftpy.properties import PropertiesError, format_properties, parse_properties, read_text
from kraftpy.storage.atomic import atomic_write
from protocol.uuid import InvalidUuidError, Uuid

META_PROPERTIES = "meta.properties"

VERSION_KEY = "version"
CLUSTER_ID_KEY = "cluster.id"
NODE_ID_KEY = "node.id"
BROKER_ID_KEY = "broker.id"
DIRECTORY_ID_KEY = "directory.id"


class MetaPropertiesVersion(IntEnum):
    V0 = 0
    V1 = 1

    @property
    def node_id_key(self) -> str:
        return BROKER_ID_KEY if self is MetaPropertiesVersion.V0 else NODE_ID_KEY


class MetaPropertiesError(ValueError):
    """A meta.properties file that exists but cannot be used."""


@dataclass(frozen=True)
class MetaProperties:
    """Parsed meta.properties. `node_id` is node.id in v1 and broker.id in v0 (None if absent)."""

    version: MetaPropertiesVersion = MetaPropertiesVersion.V1
    cluster_id: str | None = None
    node_id: int | None = None
    directory_id: Uuid | None = None

    def __post_init__(self) -> None:
        if self.version is MetaPropertiesVersion.V1:
            if self.cluster_id is None:
                raise MetaPropertiesError("cluster.id was not found.")
            if self.node_id is None:
                raise MetaPropertiesError("node.id was not found.")

    @classmethod
    def from_properties(cls, props: dict[str, str]) -> MetaProperties:
        raw_version = props.get(VERSION_KEY, "0").strip()
        try:
            number = int(raw_version)
        except ValueError:
            raise MetaPropertiesError(f"Invalid meta.properties version string '{raw_version}'") from None
        try:
            version = MetaPropertiesVersion(number)
        except ValueError:
            raise MetaPropertiesError(f"Unknown meta.properties version number {number}") from None
        node_key = version.node_id_key
        node_id: int | None = None
        if node_key in props:
            try:
                node_id = int(props[node_key].strip())
            except ValueError:
                raise MetaPropertiesError(
                    f"Failed to parse {node_key} property as an int: '{props[node_key]}'"
                ) from None
        directory_id: Uuid | None = None
        if DIRECTORY_ID_KEY in props:
            try:
                directory_id = Uuid.from_string(props[DIRECTORY_ID_KEY].strip())
            except InvalidUuidError as e:
                raise MetaPropertiesError(f"Unable to read directory.id as a Uuid: {e}") from None
        cluster_id = props.get(CLUSTER_ID_KEY)
        return cls(version=version, cluster_id=cluster_id, node_id=node_id, directory_id=directory_id)

    def to_properties(self) -> dict[str, str]:
        """Keys in the order shipped Kafka happens to write them; `version` is always written."""
        out: dict[str, str] = {}
        if self.node_id is not None:
            out[self.version.node_id_key] = str(self.node_id)
        if self.directory_id is not None:
            out[DIRECTORY_ID_KEY] = str(self.directory_id)
        out[VERSION_KEY] = str(int(self.version))
        if self.cluster_id is not None:
            out[CLUSTER_ID_KEY] = self.cluster_id
        return out

    def with_directory_id(self, directory_id: Uuid) -> MetaProperties:
        return replace(self, directory_id=directory_id)

    def __str__(self) -> str:
        return "{" + ", ".join(f"{k}={v}" for k, v in sorted(self.to_properties().items())) + "}"


def parse_meta_properties(text: str) -> MetaProperties:
    try:
        return MetaProperties.from_properties(parse_properties(text))
    except PropertiesError as e:
        raise MetaPropertiesError(str(e)) from None


def meta_properties_path(log_dir: str | Path) -> Path:
    return Path(log_dir) / META_PROPERTIES


def read_meta_properties(log_dir: str | Path) -> MetaProperties:
    """Read `<log_dir>/meta.properties`. FileNotFoundError if absent, MetaPropertiesError if invalid, OSError."""
    return parse_meta_properties(read_text(meta_properties_path(log_dir)))


def write_meta_properties(log_dir: str | Path, meta: MetaProperties) -> None:
    """Atomically replace `<log_dir>/meta.properties` (temp file, fsync, rename, fsync of the dir)."""
    text = format_properties(meta.to_properties(), comments="")
    atomic_write(meta_properties_path(log_dir), text.encode("utf-8"))
