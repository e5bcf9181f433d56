"""The znodes of a ZooKeeper-mode Kafka cluster, byte for byte as Kafka 3.9 writes them (ZkData.scala).

Kafka builds each JSON object as a Scala or Java map and hands it to a plain Jackson ObjectMapper,
so the key order on disk is that map's iteration order, not the order the source lists the keys in:

- immutable Scala maps of up to four entries keep insertion order; bigger ones iterate in the order
  of their hash trie (partition state, `/migration`);
- `mutable.Map` (broker registration, topic assignment and its per-partition maps, `/feature`)
  iterates by hash bucket;
- a topic config is a `java.util.Properties`, i.e. a ConcurrentHashMap.

The small emulations below reproduce those orders for Scala 2.13, the Scala of Kafka's default build
(`kafka_2.13-3.9.x`). That matters beyond looks: tools and tests diff znodes as text, and a topic
with 50 partitions really is written `{"44":..,"45":..,...}`.

Numbers are JSON numbers except where Kafka writes strings (`timestamp`, `/cluster/id`'s version, a
producer id block's bounds). Strings are escaped as Jackson escapes them.

Decoding is strict and fails in one way only: `ZnodeDecodeError`, for bytes that are not UTF-8 JSON,
a missing or mistyped field, a value out of its Java type's range, or an unknown version. Callers
log it and skip the znode, so a hand-edited or foreign znode can never crash a controller.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from protocol.uuid import InvalidUuidError, Uuid

# ---- paths -------------------------------------------------------------------------------------

CONSUMERS: Final = "/consumers"
CLUSTER: Final = "/cluster"
CLUSTER_ID: Final = "/cluster/id"
CONTROLLER: Final = "/controller"
CONTROLLER_EPOCH: Final = "/controller_epoch"
BROKERS: Final = "/brokers"
BROKER_IDS: Final = "/brokers/ids"
TOPICS: Final = "/brokers/topics"
SEQID: Final = "/brokers/seqid"
ADMIN: Final = "/admin"
DELETE_TOPICS: Final = "/admin/delete_topics"
CONFIG: Final = "/config"
CONFIG_CHANGES: Final = "/config/changes"
CONFIG_CHANGE_PREFIX: Final = "config_change_"
LOG_DIR_EVENT_NOTIFICATION: Final = "/log_dir_event_notification"
LOG_DIR_EVENT_PREFIX: Final = "log_dir_event_"
ISR_CHANGE_NOTIFICATION: Final = "/isr_change_notification"
LATEST_PRODUCER_ID_BLOCK: Final = "/latest_producer_id_block"
MIGRATION: Final = "/migration"
FEATURE: Final = "/feature"

CONFIG_TYPE_TOPIC: Final = "topics"
CONFIG_TYPE_CLIENT: Final = "clients"
CONFIG_TYPE_USER: Final = "users"
CONFIG_TYPE_BROKER: Final = "brokers"
CONFIG_TYPE_IP: Final = "ips"
CONFIG_TYPES: Final[tuple[str, ...]] = (
    CONFIG_TYPE_TOPIC,
    CONFIG_TYPE_CLIENT,
    CONFIG_TYPE_USER,
    CONFIG_TYPE_BROKER,
    CONFIG_TYPE_IP,
)
"""Kafka's ConfigType.ALL, in its order: the entity types that have a `/config/<type>` znode."""

PERSISTENT_PATHS: Final[tuple[str, ...]] = (
    CONSUMERS,
    BROKER_IDS,
    TOPICS,
    CONFIG_CHANGES,
    DELETE_TOPICS,
    SEQID,
    ISR_CHANGE_NOTIFICATION,
    LATEST_PRODUCER_ID_BLOCK,
    LOG_DIR_EVENT_NOTIFICATION,
    *(f"{CONFIG}/{t}" for t in CONFIG_TYPES),
)
"""Kafka's ZkData.PersistentZkPaths, in its order: what every broker makes sure exists at startup
(each with empty data), so later writers never race to create parents."""


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


def config_entity_type_path(entity_type: str) -> str:
    return f"{CONFIG}/{entity_type}"


def config_entity_path(entity_type: str, entity_name: str) -> str:
    return f"{CONFIG}/{entity_type}/{entity_name}"


def topic_config_path(topic: str) -> str:
    return config_entity_path(CONFIG_TYPE_TOPIC, topic)


def delete_topic_path(topic: str) -> str:
    return f"{DELETE_TOPICS}/{topic}"


def _sequential(parent: str, prefix: str, sequence: int) -> str:
    # ZooKeeper appends a sequence number of ten digits to a sequential node's name.
    return f"{parent}/{prefix}{sequence:010d}"


def log_dir_event_path(sequence: int) -> str:
    return _sequential(LOG_DIR_EVENT_NOTIFICATION, LOG_DIR_EVENT_PREFIX, sequence)


def config_change_path(sequence: int) -> str:
    return _sequential(CONFIG_CHANGES, CONFIG_CHANGE_PREFIX, sequence)


def sequence_number(name: str, prefix: str) -> int | None:
    """The sequence number in a sequential child's name (`log_dir_event_0000000012` -> 12), or None
    for a name that is not `prefix` plus digits (a stray child someone else created)."""
    m = re.fullmatch(re.escape(prefix) + r"([0-9]+)", name.rsplit("/", 1)[-1])
    return int(m.group(1)) if m else None


# ---- Kafka's map iteration orders ---------------------------------------------------------------

_U32: Final = 0xFFFFFFFF


def _java_string_hash(s: str) -> int:
    """String.hashCode (over UTF-16 code units), as an unsigned 32-bit value."""
    units = s.encode("utf-16-le", "surrogatepass")
    h = 0
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] | units[i + 1] << 8)) & _U32
    return h


def _signed32(v: int) -> int:
    return v - (1 << 32) if v & 0x80000000 else v


def _scala_mutable_order(keys: Sequence[str], known_size: int) -> list[str]:
    """Iteration order of a Scala 2.13 `mutable.HashMap` created by `mutable.Map(<known_size pairs>)`
    and then given the rest of `keys` one by one (all distinct).

    Buckets are `improved hash & (length - 1)`; a bucket keeps its nodes sorted by the signed
    improved hash, and growing splits buckets stably, so only the final table length matters."""
    cap = int((known_size + 1) / 0.75) if known_size > 0 else 16
    length = max(4, cap - 1).bit_length()  # tableSizeFor: highestOneBit(max(cap - 1, 4)) * 2
    length = 1 << length
    threshold = int(length * 0.75)
    for size in range(len(keys)):
        if size + 1 >= threshold:
            length *= 2
            threshold = int(length * 0.75)
    improved = {k: (h ^ (h >> 16)) for k in keys for h in (_java_string_hash(k),)}
    order = {k: i for i, k in enumerate(keys)}
    return sorted(keys, key=lambda k: (improved[k] & (length - 1), _signed32(improved[k]), order[k]))


def _scala_improve(h: int) -> int:
    """scala.collection.Hashing.improve, on unsigned 32-bit values."""
    h = (h + (~(h << 9) & _U32)) & _U32
    h ^= h >> 14
    h = (h + (h << 4)) & _U32
    return h ^ (h >> 10)


def _scala_immutable_order(keys: Sequence[str]) -> list[str]:
    """Iteration order of a Scala 2.13 immutable Map built from `keys` (all distinct) in order: Map1
    to Map4 keep insertion order; a HashMap (CHAMP trie) yields each node's own entries in 5-bit
    hash-chunk order, then descends into its sub-nodes in the same order."""
    if len(keys) <= 4:
        return list(keys)
    hashed = [(k, _scala_improve(_java_string_hash(k))) for k in keys]
    return _champ_order(hashed, 0)


def _champ_order(entries: list[tuple[str, int]], shift: int) -> list[str]:
    if shift >= 32:  # full hash collision: a collision node keeps insertion order
        return [k for k, _ in entries]
    chunks: dict[int, list[tuple[str, int]]] = {}
    for k, h in entries:
        chunks.setdefault((h >> shift) & 31, []).append((k, h))
    ordered = sorted(chunks.items())
    out = [group[0][0] for _, group in ordered if len(group) == 1]
    for _, group in ordered:
        if len(group) > 1:
            out.extend(_champ_order(group, shift + 5))
    return out


def _java_spread(h: int) -> int:
    return (h ^ (h >> 16)) & 0x7FFFFFFF


def _java_properties_order(keys: Iterable[str]) -> list[str]:
    """Iteration order of a `java.util.Properties` filled with `keys` in order (a ConcurrentHashMap of
    16 bins, doubling when full to three quarters). Bins append; a resize keeps each bin's tail run
    and puts the nodes before it in front, reversed, as ConcurrentHashMap.transfer does. Bins of
    nine or more keys, which turn into trees, are not modelled: no real config gets near that."""
    n = 16
    bins: list[list[tuple[int, str]]] = [[] for _ in range(n)]
    count = 0
    seen: set[str] = set()
    for k in keys:
        if k in seen:
            continue
        seen.add(k)
        h = _java_spread(_java_string_hash(k))
        bins[h & (n - 1)].append((h, k))
        count += 1
        if count >= n - (n >> 2):
            bins = _chm_transfer(bins, n)
            n *= 2
    return [k for b in bins for _, k in b]


def _chm_transfer(bins: list[list[tuple[int, str]]], n: int) -> list[list[tuple[int, str]]]:
    out: list[list[tuple[int, str]]] = [[] for _ in range(2 * n)]
    for i, nodes in enumerate(bins):
        if not nodes:
            continue
        last_run = len(nodes) - 1
        while last_run > 0 and (nodes[last_run - 1][0] & n) == (nodes[-1][0] & n):
            last_run -= 1
        tail = nodes[last_run:]
        low: list[tuple[int, str]] = tail if (tail[0][0] & n) == 0 else []
        high: list[tuple[int, str]] = tail if (tail[0][0] & n) != 0 else []
        for node in nodes[:last_run]:
            if node[0] & n:
                high = [node, *high]
            else:
                low = [node, *low]
        out[i], out[i + n] = low, high
    return out


def _java_hash_map_order(keys: Sequence[str]) -> list[str]:
    """Iteration order of a `java.util.HashMap` filled with `keys` (distinct) in order: by bin of the
    final table (16, doubling past three quarters full), insertion order within a bin."""
    n = 16
    while len(keys) > n * 3 // 4:
        n *= 2
    order = {k: i for i, k in enumerate(keys)}
    return sorted(keys, key=lambda k: (_java_spread(_java_string_hash(k)) & (n - 1), order[k]))


def _ordered(values: Mapping[str, Any], keys: Iterable[str]) -> dict[str, Any]:
    return {k: values[k] for k in keys}


# ---- JSON as Jackson writes and reads it --------------------------------------------------------

_JACKSON_SHORT_ESCAPES: Final = {"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}
_NEEDS_ESCAPE: Final = re.compile(r'["\\\x00-\x1f\U00010000-\U0010FFFF]')


def _escape(m: re.Match[str]) -> str:
    c = m.group()
    if c in ('"', "\\"):
        return "\\" + c
    code = ord(c)
    if code > 0xFFFF:
        # Jackson (before 2.18's opt-in COMBINE_UNICODE_SURROGATES_IN_UTF8) escapes a character
        # outside the BMP as its UTF-16 surrogate pair instead of writing its four UTF-8 bytes.
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04X}\\u{0xDC00 + (code & 0x3FF):04X}"
    return _JACKSON_SHORT_ESCAPES.get(c) or f"\\u{code:04X}"  # Jackson's hex digits are upper case


def _json(value: Any) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, str):
        return '"' + _NEEDS_ESCAPE.sub(_escape, value) + '"'
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{_json(str(k))}:{_json(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(_json(v) for v in value) + "]"
    raise TypeError(f"no JSON form for {type(value).__name__}")


def _dumps(obj: Mapping[str, Any]) -> bytes:
    """Compact JSON with `obj`'s key order, as Jackson's writeValueAsBytes gives it."""
    return _json(obj).encode("utf-8")


class ZnodeDecodeError(ValueError):
    """A znode's data is not what Kafka writes there. The message says why, without the path."""


def _reject_constant(name: str) -> Any:
    raise ZnodeDecodeError(f"not JSON: {name} is not a JSON number")


def _check_text(value: Any) -> None:
    # A JSON escape can name a lone surrogate, which no UTF-8 writer (Jackson's included) can write back.
    if isinstance(value, str):
        if not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise ZnodeDecodeError("a string holds a lone surrogate") from None
    elif isinstance(value, dict):
        for k, v in value.items():
            _check_text(k)
            _check_text(v)
    elif isinstance(value, list):
        for v in value:
            _check_text(v)


def _loads(data: bytes) -> dict[str, Any]:
    if not isinstance(data, bytes | bytearray | memoryview):
        raise ZnodeDecodeError(f"znode data must be bytes, not {type(data).__name__}")
    try:
        obj = json.loads(bytes(data).decode("utf-8"), parse_constant=_reject_constant)
    except UnicodeDecodeError as e:
        raise ZnodeDecodeError(f"not UTF-8: {e.reason} at byte {e.start}") from None
    except RecursionError:
        raise ZnodeDecodeError("not JSON: nested too deeply") from None
    except ValueError as e:  # JSONDecodeError, and ints too long to convert
        if isinstance(e, ZnodeDecodeError):
            raise
        raise ZnodeDecodeError(f"not JSON: {e}") from None
    if not isinstance(obj, dict):
        raise ZnodeDecodeError(f"not a JSON object but {type(obj).__name__}")
    _check_text(obj)
    return obj


_INT32: Final = (-(2**31), 2**31 - 1)
_INT64: Final = (-(2**63), 2**63 - 1)
_INT16: Final = (-(2**15), 2**15 - 1)
_MISSING: Final = object()


def _as_int(value: Any, what: str, bounds: tuple[int, int] = _INT32) -> int:
    # bool is an int in Python but never a JSON number.
    if isinstance(value, bool) or not isinstance(value, int):
        raise ZnodeDecodeError(f"{what} is not an integer: {_show(value)}")
    if not bounds[0] <= value <= bounds[1]:
        raise ZnodeDecodeError(f"{what} is out of range: {value}")
    return value


def _show(value: Any) -> str:
    if value is _MISSING:
        return "missing"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _int(obj: Mapping[str, Any], key: str, bounds: tuple[int, int] = _INT32) -> int:
    return _as_int(obj.get(key, _MISSING), key, bounds)


def _str(obj: Mapping[str, Any], key: str) -> str:
    v = obj.get(key, _MISSING)
    if not isinstance(v, str):
        raise ZnodeDecodeError(f"{key} is not a string: {_show(v)}")
    return v


def _int_list(value: Any, what: str) -> list[int]:
    if not isinstance(value, list):
        raise ZnodeDecodeError(f"{what} is not a list of integers: {_show(value)}")
    return [_as_int(x, what) for x in value]


def _object(obj: Mapping[str, Any], key: str) -> dict[str, Any]:
    v = obj.get(key, _MISSING)
    if not isinstance(v, dict):
        raise ZnodeDecodeError(f"{key} is not an object: {_show(v)}")
    return v


def _string_map(obj: Mapping[str, Any], key: str) -> dict[str, str]:
    v = _object(obj, key)
    for name, value in v.items():
        if not isinstance(value, str):
            raise ZnodeDecodeError(f"{key}.{name} is not a string: {_show(value)}")
    return dict(v)


def _version(obj: Mapping[str, Any], *known: int) -> int:
    v = _int(obj, "version")
    if v not in known:
        raise ZnodeDecodeError(f"unknown version {v}")
    return v


_DECIMAL: Final = re.compile(r"-?[0-9]+")


def _decimal(text: str, what: str, bounds: tuple[int, int]) -> int:
    if not text.isascii() or not _DECIMAL.fullmatch(text):
        raise ZnodeDecodeError(f"{what} is not a decimal number: {_show(text)}")
    value = int(text)
    if not bounds[0] <= value <= bounds[1]:
        raise ZnodeDecodeError(f"{what} is out of range: {value}")
    return value


def _partition_map(obj: Mapping[str, Any], key: str) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for p, replicas in _object(obj, key).items():
        # Canonical decimal only: "01" would otherwise name partition 1 a second time.
        if not (p.isascii() and p.isdigit() and str(int(p)) == p and int(p) <= _INT32[1]):
            raise ZnodeDecodeError(f"{key} names a partition that is not a partition number: {_show(p)}")
        out[int(p)] = _int_list(replicas, f"{key}.{p}")
    return out


# ---- znodes ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClusterIdZnode:
    """`/cluster/id`: `{"version":"1","id":"..."}`; the version is a string here, unlike everywhere else."""

    id: str

    def to_bytes(self) -> bytes:
        return _dumps({"version": "1", "id": self.id})

    @classmethod
    def from_bytes(cls, data: bytes) -> ClusterIdZnode:
        obj = _loads(data)
        if obj.get("version") != "1":
            raise ZnodeDecodeError(f"unknown version {_show(obj.get('version', _MISSING))}")
        return cls(_str(obj, "id"))


@dataclass(frozen=True)
class ControllerZnode:
    """`/controller`: who is controller. Version 2 (Kafka 3.4+) adds kraftControllerEpoch, -1 from a
    ZooKeeper-mode controller and the KRaft epoch from a migrating KRaft controller; version 1 reads
    as -1. The timestamp is milliseconds as a string."""

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
        return cls(_int(obj, "brokerid"), _str(obj, "timestamp"), epoch)


@dataclass(frozen=True)
class ControllerEpochZnode:
    """`/controller_epoch`: the epoch as bare decimal text, not JSON."""

    epoch: int

    def to_bytes(self) -> bytes:
        return str(self.epoch).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> ControllerEpochZnode:
        if not isinstance(data, bytes | bytearray | memoryview):
            raise ZnodeDecodeError(f"znode data must be bytes, not {type(data).__name__}")
        raw = bytes(data)
        # Kafka parses it with Integer.parseInt: an optional sign, digits, nothing around them.
        if not re.fullmatch(rb"[+-]?[0-9]+", raw):
            raise ZnodeDecodeError(f"not an epoch: {raw[:40]!r}")
        value = int(raw)
        if not _INT32[0] <= value <= _INT32[1]:
            raise ZnodeDecodeError(f"epoch out of range: {value}")
        return cls(value)


def encode_controller_epoch(epoch: int) -> bytes:
    return ControllerEpochZnode(epoch).to_bytes()


def decode_controller_epoch(data: bytes) -> int:
    return ControllerEpochZnode.from_bytes(data).epoch


SECURITY_PROTOCOL_NAMES: Final[frozenset[str]] = frozenset({"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"})
"""The values `listener_security_protocol_map` may hold (SecurityProtocol.forName refuses others)."""


@dataclass(frozen=True)
class BrokerIdZnode:
    """`/brokers/ids/<id>` (ephemeral, written by the broker itself), version 5 by default.

    `host`/`port` are the first PLAINTEXT endpoint's, for clients older than multiple listeners:
    None and -1 when the broker has none. `rack` is left out of the JSON when None, and
    `features` (name -> (min_version, max_version)) is `{}` for every ZooKeeper-mode broker of 3.x.
    Versions below 5 are written with the fields Kafka wrote at them: rack from 3, the protocol map
    from 4, features from 5."""

    host: str | None
    port: int
    endpoints: list[str]
    listener_security_protocol_map: dict[str, str]
    timestamp: str
    jmx_port: int = -1
    rack: str | None = None
    features: dict[str, tuple[int, int]] = field(default_factory=dict)
    version: int = 5

    def to_bytes(self) -> bytes:
        values: dict[str, Any] = {
            "version": self.version,
            "host": self.host,
            "port": self.port,
            "endpoints": list(self.endpoints),
            "jmx_port": self.jmx_port,
            "timestamp": self.timestamp,
        }
        if self.rack is not None and self.version >= 3:
            values["rack"] = self.rack
        if self.version >= 4:
            protocols = self.listener_security_protocol_map
            values["listener_security_protocol_map"] = _ordered(
                protocols, _scala_immutable_order(list(protocols))
            )
        if self.version >= 5:
            names = _java_hash_map_order(list(self.features))
            values["features"] = {
                n: {"min_version": self.features[n][0], "max_version": self.features[n][1]} for n in names
            }
        return _dumps(_ordered(values, _scala_mutable_order(list(values), known_size=6)))

    @classmethod
    def from_bytes(cls, data: bytes) -> BrokerIdZnode:
        obj = _loads(data)
        version = _version(obj, 1, 2, 3, 4, 5)
        host = obj.get("host", _MISSING)
        if host is not None and not isinstance(host, str):  # null when the broker has no PLAINTEXT listener
            raise ZnodeDecodeError(f"host is not a string: {_show(host)}")
        port = _int(obj, "port")
        if version == 1:
            # Version 1 knew only one PLAINTEXT listener, named by host and port.
            if host is None:
                raise ZnodeDecodeError("host is missing")
            endpoints = [f"PLAINTEXT://{host}:{port}"]
        else:
            raw = obj.get("endpoints", _MISSING)
            if not isinstance(raw, list) or not all(isinstance(e, str) for e in raw):
                raise ZnodeDecodeError(f"endpoints is not a list of strings: {_show(raw)}")
            endpoints = list(raw)
        protocols: dict[str, str] = {}
        if "listener_security_protocol_map" in obj:
            protocols = _string_map(obj, "listener_security_protocol_map")
            unknown = sorted(set(protocols.values()) - SECURITY_PROTOCOL_NAMES)
            if unknown:
                raise ZnodeDecodeError(f"unknown security protocol {unknown[0]!r}")
        rack = obj.get("rack")
        if rack is not None and not isinstance(rack, str):
            raise ZnodeDecodeError(f"rack is not a string: {_show(rack)}")
        return cls(
            host=host,
            port=port,
            endpoints=endpoints,
            listener_security_protocol_map=protocols,
            timestamp=_str(obj, "timestamp"),
            jmx_port=_int(obj, "jmx_port"),
            rack=rack,
            features=_features(obj) if "features" in obj else {},
            version=version,
        )


def _features(obj: Mapping[str, Any]) -> dict[str, tuple[int, int]]:
    out: dict[str, tuple[int, int]] = {}
    for name, levels in _object(obj, "features").items():
        if not isinstance(levels, dict):
            raise ZnodeDecodeError(f"features.{name} is not an object: {_show(levels)}")
        low = _int(levels, "min_version", _INT16)
        high = _int(levels, "max_version", _INT16)
        if low > high:
            raise ZnodeDecodeError(f"features.{name}: min_version {low} is above max_version {high}")
        out[name] = (low, high)
    return out


@dataclass(frozen=True)
class TopicZnode:
    """`/brokers/topics/<t>` version 3: each partition's replicas, the reassignment in progress
    (only partitions with a non-empty list appear) and the topic id (absent on topics created before
    Kafka 2.8, until a controller adds it)."""

    partitions: dict[int, list[int]]
    topic_id: Uuid | None = None
    adding_replicas: dict[int, list[int]] = field(default_factory=dict)
    removing_replicas: dict[int, list[int]] = field(default_factory=dict)

    def to_bytes(self) -> bytes:
        values: dict[str, Any] = {
            "version": 3,
            "partitions": _replica_json(self.partitions, self.partitions),
            "adding_replicas": _replica_json(self.adding_replicas, self.partitions),
            "removing_replicas": _replica_json(self.removing_replicas, self.partitions),
        }
        if self.topic_id is not None:
            values["topic_id"] = str(self.topic_id)
        return _dumps(_ordered(values, _scala_mutable_order(list(values), known_size=4)))

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
        partitions = _partition_map(obj, "partitions")

        def moving(key: str) -> dict[int, list[int]]:
            # Kafka looks these up per partition of the topic; other entries and empty lists mean nothing.
            if key not in obj:
                return {}
            found = _partition_map(obj, key)
            return {p: r for p, r in found.items() if r and p in partitions}

        return cls(partitions, topic_id, moving("adding_replicas"), moving("removing_replicas"))


def _replica_json(
    m: Mapping[int, Sequence[int]], partitions: Mapping[int, Sequence[int]]
) -> dict[str, list[int]]:
    # Kafka fills a fresh mutable.Map per field, one entry per partition of the topic.
    chosen = {str(p): list(m[p]) for p in partitions if p in m and (m is partitions or m[p])}
    return _ordered(chosen, _scala_mutable_order(list(chosen), known_size=0))


LEADER_RECOVERY_RECOVERED: Final = 0
LEADER_RECOVERY_RECOVERING: Final = 1


@dataclass(frozen=True)
class PartitionStateZnode:
    """`/brokers/topics/<t>/partitions/<p>/state` version 1. `leader_recovery_state` is written only
    while RECOVERING (1), after an unclean election, so older brokers read the znode unchanged."""

    leader: int
    leader_epoch: int
    controller_epoch: int
    isr: list[int]
    leader_recovery_state: int = LEADER_RECOVERY_RECOVERED

    def to_bytes(self) -> bytes:
        values: dict[str, Any] = {
            "version": 1,
            "leader": self.leader,
            "leader_epoch": self.leader_epoch,
            "controller_epoch": self.controller_epoch,
            "isr": list(self.isr),
        }
        if self.leader_recovery_state != LEADER_RECOVERY_RECOVERED:
            values["leader_recovery_state"] = int(self.leader_recovery_state)
        return _dumps(_ordered(values, _scala_immutable_order(list(values))))

    @classmethod
    def from_bytes(cls, data: bytes) -> PartitionStateZnode:
        obj = _loads(data)
        _version(obj, 1)
        recovery = LEADER_RECOVERY_RECOVERED
        if "leader_recovery_state" in obj:
            recovery = _int(obj, "leader_recovery_state")
            if recovery not in (LEADER_RECOVERY_RECOVERED, LEADER_RECOVERY_RECOVERING):
                raise ZnodeDecodeError(f"unknown leader_recovery_state {recovery}")
        return cls(
            _int(obj, "leader"),
            _int(obj, "leader_epoch"),
            _int(obj, "controller_epoch"),
            _int_list(obj.get("isr", _MISSING), "isr"),
            recovery,
        )


LOG_DIR_FAILURE_EVENT: Final = 1


@dataclass(frozen=True)
class LogDirEventZnode:
    """`/log_dir_event_notification/log_dir_event_<seq>` (KIP-112): a broker lost a log dir. Event 1
    (LogDirFailure) is the only one Kafka defines."""

    broker: int
    event: int = LOG_DIR_FAILURE_EVENT

    def to_bytes(self) -> bytes:
        return _dumps({"version": 1, "broker": self.broker, "event": self.event})

    @classmethod
    def from_bytes(cls, data: bytes) -> LogDirEventZnode:
        obj = _loads(data)
        _version(obj, 1)
        event = _int(obj, "event")
        if event != LOG_DIR_FAILURE_EVENT:
            raise ZnodeDecodeError(f"unknown log dir event {event}")
        return cls(_int(obj, "broker"), event)


@dataclass(frozen=True)
class DeleteTopicZnode:
    """`/admin/delete_topics/<t>`: the name is the request; Kafka creates it with no data and never
    reads what it holds, so any data is accepted."""

    def to_bytes(self) -> bytes:
        return b""

    @classmethod
    def from_bytes(cls, data: bytes) -> DeleteTopicZnode:
        if not isinstance(data, bytes | bytearray | memoryview):
            raise ZnodeDecodeError(f"znode data must be bytes, not {type(data).__name__}")
        return cls()


@dataclass(frozen=True)
class EntityConfigZnode:
    """`/config/<type>/<name>` (topics, brokers, users, clients, ips): `{"version":1,"config":{...}}`
    with the overrides in a Properties' order."""

    config: dict[str, str] = field(default_factory=dict)

    def to_bytes(self) -> bytes:
        config = _ordered(self.config, _java_properties_order(self.config))
        return _dumps({"version": 1, "config": config})

    @classmethod
    def from_bytes(cls, data: bytes) -> EntityConfigZnode:
        obj = _loads(data)
        _version(obj, 1)
        return cls(_string_map(obj, "config"))


TopicConfigZnode = EntityConfigZnode
"""`/config/topics/<t>`: the same format as every entity's config."""


@dataclass(frozen=True)
class ConfigChangeZnode:
    """`/config/changes/config_change_<seq>` version 2: which entity's config changed, as
    `<type>/<name>` (`topics/foo`, `users/alice/clients/app`). Version 1, from Kafka before 0.10.1,
    reads as `<entity_type>/<entity_name>`."""

    entity_path: str

    def to_bytes(self) -> bytes:
        return _dumps({"version": 2, "entity_path": self.entity_path})

    @classmethod
    def from_bytes(cls, data: bytes) -> ConfigChangeZnode:
        obj = _loads(data)
        if _version(obj, 1, 2) == 1:
            return cls(f"{_str(obj, 'entity_type')}/{_str(obj, 'entity_name')}")
        return cls(_str(obj, "entity_path"))


@dataclass(frozen=True)
class MigrationZnode:
    """`/migration` version 0 (KIP-866): the KRaft controller's claim on a migrating cluster and how
    far its metadata log has reached. The initial values are all -1."""

    kraft_controller_id: int = -1
    kraft_controller_epoch: int = -1
    kraft_metadata_offset: int = -1
    kraft_metadata_epoch: int = -1

    @property
    def initial_migration_done(self) -> bool:
        """Whether ZooKeeper's metadata was copied to KRaft already (Kafka:
        initialZkMigrationComplete, offset above 0)."""
        return self.kraft_metadata_offset > 0

    def to_bytes(self) -> bytes:
        values: dict[str, Any] = {
            "version": 0,
            "kraft_controller_id": self.kraft_controller_id,
            "kraft_controller_epoch": self.kraft_controller_epoch,
            "kraft_metadata_offset": self.kraft_metadata_offset,
            "kraft_metadata_epoch": self.kraft_metadata_epoch,
        }
        return _dumps(_ordered(values, _scala_immutable_order(list(values))))

    @classmethod
    def from_bytes(cls, data: bytes) -> MigrationZnode:
        obj = _loads(data)
        _version(obj, 0)
        return cls(
            _int(obj, "kraft_controller_id"),
            _int(obj, "kraft_controller_epoch"),
            _int(obj, "kraft_metadata_offset", _INT64),
            _int(obj, "kraft_metadata_epoch"),
        )


@dataclass(frozen=True)
class ProducerIdBlockZnode:
    """`/latest_producer_id_block` version 1: the last block of producer ids handed out, with its
    first and last id (inclusive) as decimal strings. A fresh cluster's znode is empty: callers
    check for that before decoding."""

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
        start = _decimal(_str(obj, "block_start"), "block_start", _INT64)
        end = _decimal(_str(obj, "block_end"), "block_end", _INT64)
        # Kafka turns the bounds into a block length with Math.toIntExact.
        if not _INT32[0] <= end - start + 1 <= _INT32[1]:
            raise ZnodeDecodeError(f"block from {start} to {end} is not a block Kafka could hold")
        return cls(_int(obj, "broker"), start, end)


FEATURE_STATUS_DISABLED: Final = 0
FEATURE_STATUS_ENABLED: Final = 1


@dataclass(frozen=True)
class FeatureZnode:
    """`/feature` (KIP-584): the cluster's finalized feature levels, written by a ZooKeeper-mode
    controller. Version 2 (IBP 3.3+) keeps only `max_version_level`; version 1 also wrote a
    `min_version_level` equal to it."""

    status: int = FEATURE_STATUS_ENABLED
    features: dict[str, int] = field(default_factory=dict)
    version: int = 2

    def to_bytes(self) -> bytes:
        names = _scala_immutable_order(list(self.features))
        if self.version == 1:
            levels = {
                n: {"max_version_level": self.features[n], "min_version_level": self.features[n]}
                for n in names
            }
        else:
            levels = {n: {"max_version_level": self.features[n]} for n in names}
        values = {"version": self.version, "status": self.status, "features": levels}
        return _dumps(_ordered(values, _scala_mutable_order(list(values), known_size=3)))

    @classmethod
    def from_bytes(cls, data: bytes) -> FeatureZnode:
        obj = _loads(data)
        version = _version(obj, 1, 2)
        status = _int(obj, "status")
        if status not in (FEATURE_STATUS_DISABLED, FEATURE_STATUS_ENABLED):
            raise ZnodeDecodeError(f"unknown feature status {status}")
        features: dict[str, int] = {}
        for name, levels in _object(obj, "features").items():
            if not isinstance(levels, dict):
                raise ZnodeDecodeError(f"features.{name} is not an object: {_show(levels)}")
            level = _int(levels, "max_version_level", _INT16)
            if level < 1:
                raise ZnodeDecodeError(f"features.{name}: max_version_level {level} is below 1")
            if version == 1 and not 1 <= _int(levels, "min_version_level", _INT16) <= level:
                raise ZnodeDecodeError(f"features.{name}: min_version_level is outside 1..{level}")
            features[name] = level
        return cls(status, features, version)
