"""The znodes of a ZooKeeper-mode Kafka cluster, byte for byte as Kafka writes them (ZkData.scala).

Kafka builds each JSON object from a Scala map and writes it with Jackson, so key order is the map's:
insertion order for maps of up to four entries, hash order for bigger ones. The orders below are
those real Kafka 3.x clusters show (`/brokers/ids/<id>`, partition state and topic znodes are bigger
maps). Numbers are JSON numbers except where Kafka writes strings (`timestamp`, the cluster id's
`version`, a producer id block's bounds).

Decoding is strict and has one failure: `ZnodeDecodeError`, for bytes that are not UTF-8 JSON, a
missing or mistyped field, or an unknown version. Callers log it and skip the znode.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from protocol.uuid import InvalidUuidError, Uuid

# ---- paths -------------------------------------------------------------------------------------

CLUSTER_ID = "/cluster/id"
CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
BROKERS = "/brokers"
BROKER_IDS = "/brokers/ids"
TOPICS = "/brokers/topics"
SEQID = "/brokers/seqid"
ADMIN = "/admin"
DELETE_TOPICS = "/admin/delete_topics"
CONFIG = "/config"
CONFIG_CHANGES = "/config/changes"
CONFIG_CHANGE_PREFIX = "config_change_"
LOG_DIR_EVENT_NOTIFICATION = "/log_dir_event_notification"
LOG_DIR_EVENT_PREFIX = "log_dir_event_"
ISR_CHANGE_NOTIFICATION = "/isr_change_notification"
LATEST_PRODUCER_ID_BLOCK = "/latest_producer_id_block"
MIGRATION = "/migration"
FEATURE = "/feature"

PERSISTENT_PATHS: tuple[str, ...] = (
    "/consumers",
    BROKER_IDS,
    TOPICS,
    CONFIG_CHANGES,
    "/config/topics",
    "/config/clients",
    "/config/users",
    "/config/brokers",
    "/config/ips",
    DELETE_TOPICS,
    "/brokers/seqid",
    ISR_CHANGE_NOTIFICATION,
    LATEST_PRODUCER_ID_BLOCK,
    LOG_DIR_EVENT_NOTIFICATION,
)
"""What every broker ensures at startup (Kafka's ZkData.PersistentZkPaths, less the paths of removed
features)."""


def broker_path(broker_id: int) -> str:
    return f"{BROKER_IDS}/{broker_id}"


def topic_path(topic: str) -> str:
    return f"{TOPICS}/{topic}"


def partitions_path(topic: str) -> str:
    return f"{TOPICS}/{topic}/partitions"


def partition_path(topic: str, partition: int) -> str:
    return f"{TOPICS}/{topic}/partitions/{partition}"


def partition_state_path(topic: str, partition: int) -> str:
    return f"{TOPICS}/{topic}/partitions/{partition}/state"


def topic_config_path(topic: str) -> str:
    return f"/config/topics/{topic}"


def delete_topic_path(topic: str) -> str:
    return f"{DELETE_TOPICS}/{topic}"


def log_dir_event_path(sequence: int) -> str:
    return f"{LOG_DIR_EVENT_NOTIFICATION}/{LOG_DIR_EVENT_PREFIX}{sequence:010d}"


# ---- decoding ----------------------------------------------------------------------------------


class ZnodeDecodeError(ValueError):
    """A znode's data is not what Kafka writes there."""


def _dumps(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def _loads(data: bytes) -> dict[str, Any]:
    try:
        obj = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise ZnodeDecodeError(f"not JSON: {e}") from None
    if not isinstance(obj, dict):
        raise ZnodeDecodeError("not a JSON object")
    return obj


def _int(obj: dict[str, Any], key: str) -> int:
    v = obj.get(key)
    if isinstance(v, bool) or not isinstance(v, int):
        raise ZnodeDecodeError(f"{key} is not an integer: {v!r}")
    return v


def _str(obj: dict[str, Any], key: str) -> str:
    v = obj.get(key)
    if not isinstance(v, str):
        raise ZnodeDecodeError(f"{key} is not a string: {v!r}")
    return v


def _int_list(obj: dict[str, Any], key: str) -> list[int]:
    v = obj.get(key)
    if not isinstance(v, list) or any(isinstance(x, bool) or not isinstance(x, int) for x in v):
        raise ZnodeDecodeError(f"{key} is not a list of integers: {v!r}")
    return list(v)


def _version(obj: dict[str, Any], *known: int) -> int:
    v = _int(obj, "version")
    if v not in known:
        raise ZnodeDecodeError(f"unknown version {v}")
    return v


def _replica_map(obj: dict[str, Any], key: str) -> dict[int, list[int]]:
    v = obj.get(key, {})
    if not isinstance(v, dict):
        raise ZnodeDecodeError(f"{key} is not an object")
    out = {}
    for p, replicas in v.items():
        try:
            index = int(p)
        except ValueError:
            raise ZnodeDecodeError(f"{key} has a partition that is not a number: {p!r}") from None
        out[index] = _int_list({"r": replicas}, "r")
    return out


# ---- znodes ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClusterIdZnode:
    """`/cluster/id`: `{"version":"1","id":"..."}` (the version is a string here)."""

    id: str

    def to_bytes(self) -> bytes:
        return _dumps({"version": "1", "id": self.id})

    @classmethod
    def from_bytes(cls, data: bytes) -> ClusterIdZnode:
        obj = _loads(data)
        if obj.get("version") != "1":
            raise ZnodeDecodeError(f"unknown version {obj.get('version')!r}")
        return cls(_str(obj, "id"))


@dataclass(frozen=True)
class ControllerZnode:
    """`/controller` (ephemeral for a ZooKeeper-mode controller), version 2; v1 has no kraftControllerEpoch."""

    brokerid: int
    timestamp: str
    kraftControllerEpoch: int = -1

    def to_bytes(self) -> bytes:
        return _dumps(
            {
                "version": 2,
                "brokerid": self.brokerid,
                "timestamp": self.timestamp,
                "kraftControllerEpoch": self.kraftControllerEpoch,
            }
        )

    @classmethod
    def from_bytes(cls, data: bytes) -> ControllerZnode:
        obj = _loads(data)
        version = _version(obj, 1, 2)
        epoch = _int(obj, "kraftControllerEpoch") if version >= 2 else -1
        ts = obj.get("timestamp", "")
        return cls(_int(obj, "brokerid"), str(ts), epoch)


def encode_controller_epoch(epoch: int) -> bytes:
    """`/controller_epoch`: the epoch as a decimal string."""
    return str(epoch).encode()


def decode_controller_epoch(data: bytes) -> int:
    try:
        return int(data.decode("ascii").strip())
    except (UnicodeDecodeError, ValueError):
        raise ZnodeDecodeError(f"not an epoch: {data[:40]!r}") from None


@dataclass(frozen=True)
class BrokerIdZnode:
    """`/brokers/ids/<id>` version 5 (ephemeral, written by the broker)."""

    host: str
    port: int
    endpoints: list[str]
    listener_security_protocol_map: dict[str, str]
    timestamp: str
    jmx_port: int = -1
    rack: str | None = None
    features: dict[str, Any] = field(default_factory=dict)

    def to_bytes(self) -> bytes:
        obj: dict[str, Any] = {
            "features": self.features,
            "listener_security_protocol_map": self.listener_security_protocol_map,
            "endpoints": self.endpoints,
        }
        if self.rack is not None:
            obj["rack"] = self.rack
        obj.update({"jmx_port": self.jmx_port, "port": self.port, "host": self.host, "version": 5})
        obj["timestamp"] = self.timestamp
        return _dumps(obj)

    @classmethod
    def from_bytes(cls, data: bytes) -> BrokerIdZnode:
        obj = _loads(data)
        version = _version(obj, 1, 2, 3, 4, 5)
        endpoints = obj.get("endpoints", [])
        if not isinstance(endpoints, list) or not all(isinstance(e, str) for e in endpoints):
            raise ZnodeDecodeError("endpoints is not a list of strings")
        protocols = obj.get("listener_security_protocol_map") or {}
        if not isinstance(protocols, dict) or not all(isinstance(v, str) for v in protocols.values()):
            raise ZnodeDecodeError("listener_security_protocol_map is not an object of strings")
        rack = obj.get("rack")
        if rack is not None and not isinstance(rack, str):
            raise ZnodeDecodeError("rack is not a string")
        features = obj.get("features", {}) if version >= 5 else {}
        if not isinstance(features, dict):
            raise ZnodeDecodeError("features is not an object")
        host = obj.get("host")
        return cls(
            host=host if isinstance(host, str) else "",
            port=_int(obj, "port") if "port" in obj else -1,
            endpoints=list(endpoints),
            listener_security_protocol_map=dict(protocols),
            timestamp=str(obj.get("timestamp", "")),
            jmx_port=_int(obj, "jmx_port") if "jmx_port" in obj else -1,
            rack=rack,
            features=dict(features),
        )


@dataclass(frozen=True)
class TopicZnode:
    """`/brokers/topics/<t>` version 3: each partition's replicas, reassignment state, the topic id."""

    partitions: dict[int, list[int]]
    topic_id: Uuid | None = None
    adding_replicas: dict[int, list[int]] = field(default_factory=dict)
    removing_replicas: dict[int, list[int]] = field(default_factory=dict)

    def to_bytes(self) -> bytes:
        def keyed(m: dict[int, list[int]]) -> dict[str, list[int]]:
            return {str(p): list(r) for p, r in sorted(m.items())}

        obj: dict[str, Any] = {"partitions": keyed(self.partitions)}
        if self.topic_id is not None:
            obj["topic_id"] = str(self.topic_id)
        obj.update(
            {
                "adding_replicas": keyed(self.adding_replicas),
                "removing_replicas": keyed(self.removing_replicas),
            }
        )
        obj["version"] = 3
        return _dumps(obj)

    @classmethod
    def from_bytes(cls, data: bytes) -> TopicZnode:
        obj = _loads(data)
        _version(obj, 1, 2, 3)
        topic_id = None
        if "topic_id" in obj:
            try:
                topic_id = Uuid.from_string(_str(obj, "topic_id"))
            except InvalidUuidError as e:
                raise ZnodeDecodeError(f"topic_id: {e}") from None
        return cls(
            _replica_map(obj, "partitions"),
            topic_id,
            _replica_map(obj, "adding_replicas"),
            _replica_map(obj, "removing_replicas"),
        )


@dataclass(frozen=True)
class PartitionStateZnode:
    """`/brokers/topics/<t>/partitions/<p>/state` version 1; `leader_recovery_state` is written only
    while RECOVERING (1)."""

    leader: int
    leader_epoch: int
    controller_epoch: int
    isr: list[int]
    leader_recovery_state: int = 0

    def to_bytes(self) -> bytes:
        obj: dict[str, Any] = {
            "controller_epoch": self.controller_epoch,
            "leader": self.leader,
            "version": 1,
            "leader_epoch": self.leader_epoch,
            "isr": list(self.isr),
        }
        if self.leader_recovery_state == 1:
            obj["leader_recovery_state"] = 1
        return _dumps(obj)

    @classmethod
    def from_bytes(cls, data: bytes) -> PartitionStateZnode:
        obj = _loads(data)
        _version(obj, 1)
        recovery = _int(obj, "leader_recovery_state") if "leader_recovery_state" in obj else 0
        return cls(
            _int(obj, "leader"),
            _int(obj, "leader_epoch"),
            _int(obj, "controller_epoch"),
            _int_list(obj, "isr"),
            recovery,
        )


@dataclass(frozen=True)
class LogDirEventZnode:
    """`/log_dir_event_notification/log_dir_event_<seq>` (KIP-112): event 1 is LogDirFailure."""

    broker: int
    event: int = 1

    def to_bytes(self) -> bytes:
        return _dumps({"version": 1, "broker": self.broker, "event": self.event})

    @classmethod
    def from_bytes(cls, data: bytes) -> LogDirEventZnode:
        obj = _loads(data)
        _version(obj, 1)
        event = _int(obj, "event")
        if event != 1:
            raise ZnodeDecodeError(f"unknown log dir event {event}")
        return cls(_int(obj, "broker"), event)


@dataclass(frozen=True)
class TopicConfigZnode:
    """`/config/topics/<t>` (and the other entity types): `{"version":1,"config":{...}}`."""

    config: dict[str, str] = field(default_factory=dict)

    def to_bytes(self) -> bytes:
        return _dumps({"version": 1, "config": dict(self.config)})

    @classmethod
    def from_bytes(cls, data: bytes) -> TopicConfigZnode:
        obj = _loads(data)
        _version(obj, 1)
        config = obj.get("config", {})
        if not isinstance(config, dict) or not all(isinstance(v, str) for v in config.values()):
            raise ZnodeDecodeError("config is not an object of strings")
        return cls(dict(config))


@dataclass(frozen=True)
class ConfigChangeZnode:
    """`/config/changes/config_change_<seq>` version 2."""

    entity_path: str

    def to_bytes(self) -> bytes:
        return _dumps({"version": 2, "entity_path": self.entity_path})

    @classmethod
    def from_bytes(cls, data: bytes) -> ConfigChangeZnode:
        obj = _loads(data)
        _version(obj, 2)
        return cls(_str(obj, "entity_path"))


@dataclass(frozen=True)
class ProducerIdBlockZnode:
    """`/latest_producer_id_block` version 1: the last block handed out (bounds as strings)."""

    broker: int
    block_start: int
    block_end: int

    def to_bytes(self) -> bytes:
        return _dumps(
            {
                "version": 1,
                "broker": self.broker,
                "block_start": str(self.block_start),
                "block_end": str(self.block_end),
            }
        )

    @classmethod
    def from_bytes(cls, data: bytes) -> ProducerIdBlockZnode:
        obj = _loads(data)
        _version(obj, 1)
        try:
            return cls(_int(obj, "broker"), int(_str(obj, "block_start")), int(_str(obj, "block_end")))
        except ValueError as e:
            raise ZnodeDecodeError(f"block bounds: {e}") from None
