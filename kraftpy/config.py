"""Kafka-style server config: a .properties file with Kafka's property names and defaults.

Each known key is one field of `KafkaConfig`, named in snake_case, with the Kafka name as its alias:

    log_dir_failure_timeout_ms: Long = Field(30000, alias="log.dir.failure.timeout.ms", ge=1)

Adding a key is adding one such line (types below parse the way Kafka's ConfigDef does). Values
are read with `cfg.log_dir_failure_timeout_ms` or `cfg.get("log.dir.failure.timeout.ms")`.
A bad value raises ConfigError naming the key and the file; an unknown key is logged as a warning
and kept in `cfg.originals`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import structlog
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PrivateAttr, ValidationError

from kraftpy.properties import PropertiesError, load_properties
from protocol.transport.connection_quotas import parse_overrides

log = structlog.get_logger("kraftpy.config")


class ConfigError(ValueError):
    """A config that cannot be used; the message names the file and key."""


# ---- value types parsed as Kafka's ConfigDef parses them ---------------------------------------------


def _strip(v: Any) -> Any:
    return v.strip() if isinstance(v, str) else v


def _parse_bool(v: Any) -> Any:
    if isinstance(v, str):
        s = v.strip().lower()
        if s in ("true", "false"):
            return s == "true"
        raise ValueError("Expected value to be either true or false")
    return v


def _parse_list(v: Any) -> Any:
    if isinstance(v, str):
        s = v.strip()
        return [] if not s else [item.strip() for item in s.split(",")]
    return v


def _parse_int(v: Any) -> Any:
    if isinstance(v, str):
        try:
            return int(v.strip())
        except ValueError:
            raise ValueError("Not a number") from None
    return v


Int = Annotated[int, BeforeValidator(_parse_int), Field(ge=-(2**31), le=2**31 - 1)]
Long = Annotated[int, BeforeValidator(_parse_int), Field(ge=-(2**63), le=2**63 - 1)]
Bool = Annotated[bool, BeforeValidator(_parse_bool)]
Str = Annotated[str, BeforeValidator(_strip)]
CsvList = Annotated[list[str], BeforeValidator(_parse_list)]
Role = Literal["broker", "controller"]


def _parse_client_auth(v: Any) -> Any:
    # Kafka's SslClientAuth.forConfig reads the value case-insensitively.
    return v.strip().lower() if isinstance(v, str) else v


ClientAuth = Annotated[Literal["none", "requested", "required"], BeforeValidator(_parse_client_auth)]


@dataclass(frozen=True)
class ListenerSpec:
    """A listener as configured: `NAME://host:port`. An empty host means every interface.

    Not kraftpy.metadata.Endpoint: a registration's endpoint also carries its security protocol."""

    name: str
    host: str
    port: int

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.name}://{host}:{self.port}"

    @property
    def url(self) -> str:
        """Base URL of this endpoint's HTTP transport (loopback when bound to every interface)."""
        host = self.host or "127.0.0.1"
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{self.port}"


@dataclass(frozen=True)
class QuorumVoter:
    """One `id@host:port` entry of controller.quorum.voters."""

    id: int
    host: str
    port: int

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"


def _host_port(text: str, what: str) -> tuple[str, int]:
    host, sep, port_s = text.rpartition(":")
    if not sep:
        raise ValueError(f"{what} '{text}' has no port")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        port = int(port_s)
    except ValueError:
        raise ValueError(f"{what} '{text}' has a bad port '{port_s}'") from None
    if not 0 <= port <= 65535:
        raise ValueError(f"{what} '{text}' has a port out of range")
    return host, port


def parse_listeners(value: str | None) -> list[ListenerSpec]:
    """Parse `NAME://host:port,...` (Kafka's listener syntax); names must be unique."""
    out: list[ListenerSpec] = []
    for item in _parse_list(value or ""):
        name, sep, rest = item.partition("://")
        if not sep or not name:
            raise ValueError(f"listener '{item}' is not of the form NAME://host:port")
        host, port = _host_port(rest, "listener")
        name = name.upper()
        if any(e.name == name for e in out):
            raise ValueError(f"listener name {name} is given twice")
        out.append(ListenerSpec(name, host, port))
    return out


def parse_quorum_voters(value: list[str]) -> list[QuorumVoter]:
    """Parse controller.quorum.voters entries `id@host:port`."""
    out: list[QuorumVoter] = []
    for item in value:
        id_s, sep, rest = item.partition("@")
        if not sep:
            raise ValueError(f"voter '{item}' is not of the form id@host:port")
        try:
            vid = int(id_s)
        except ValueError:
            raise ValueError(f"voter '{item}' has a non-numeric id") from None
        host, port = _host_port(rest, "voter")
        out.append(QuorumVoter(vid, host, port))
    return out


AUTHORIZER_CLASSES = (
    "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    # what a ZooKeeper-era config names; in KRaft Kafka it must become StandardAuthorizer, here both mean it
    "kafka.security.authorizer.AclAuthorizer",
)

SECURITY_PROTOCOLS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}
"""Kafka's SecurityProtocol ids, as BrokerRegistration's Listener.SecurityProtocol carries them."""

TLS_PROTOCOLS = frozenset({"SSL", "SASL_SSL"})
"""The security protocols whose connections are TLS."""

LISTENER_PREFIX = "listener.name."
JAAS_CONFIG_SUFFIX = ".sasl.jaas.config"
"""`listener.name.<listener>.<mechanism>` + this: a broker's JAAS login for one SASL mechanism."""
# Keys a `listener.name.<listener>.` prefix may override for one listener (Kafka allows these
# families per listener; kraftpy reads the overrides through `listener_config`).
_PER_LISTENER_FAMILIES = ("ssl.", "sasl.", "max.connections", "connections.max.")


class KafkaConfig(BaseModel):
    """Known Kafka server configs, with Kafka's defaults. Construct with `load_config` or `from_properties`."""

    model_config = ConfigDict(populate_by_name=True, frozen=True, extra="ignore")

    # -- KRaft identity and quorum (KRaftConfigs, QuorumConfig)
    process_roles: CsvList = Field([], alias="process.roles")
    node_id: Int = Field(-1, alias="node.id")
    broker_id: Int = Field(-1, alias="broker.id")
    controller_listener_names: CsvList | None = Field(None, alias="controller.listener.names")
    controller_quorum_voters: CsvList = Field([], alias="controller.quorum.voters")
    controller_quorum_bootstrap_servers: CsvList = Field([], alias="controller.quorum.bootstrap.servers")
    controller_quorum_election_timeout_ms: Int = Field(1000, alias="controller.quorum.election.timeout.ms")
    controller_quorum_fetch_timeout_ms: Int = Field(2000, alias="controller.quorum.fetch.timeout.ms")
    controller_quorum_election_backoff_max_ms: Int = Field(
        1000, alias="controller.quorum.election.backoff.max.ms"
    )
    controller_quorum_append_linger_ms: Int = Field(25, alias="controller.quorum.append.linger.ms")
    controller_quorum_request_timeout_ms: Int = Field(2000, alias="controller.quorum.request.timeout.ms")
    controller_quorum_retry_backoff_ms: Int = Field(20, alias="controller.quorum.retry.backoff.ms")

    # -- listeners
    listeners: Str = Field("PLAINTEXT://:9092", alias="listeners")
    advertised_listeners: Str | None = Field(None, alias="advertised.listeners")
    listener_security_protocol_map: CsvList = Field(
        ["SASL_SSL:SASL_SSL", "PLAINTEXT:PLAINTEXT", "SSL:SSL", "SASL_PLAINTEXT:SASL_PLAINTEXT"],
        alias="listener.security.protocol.map",
    )
    inter_broker_listener_name: Str | None = Field(None, alias="inter.broker.listener.name")
    rpc_listener_name: Str = Field("RPC", alias="rpc.listener.name")
    """kraftpy's own: the listener that serves the HTTP RPC (controller<->broker, broker<->broker,
    /metrics, /healthz); every other broker listener speaks Kafka's protocol to clients."""
    broker_rack: Str | None = Field(None, alias="broker.rack")
    security_inter_broker_protocol: Str = Field("PLAINTEXT", alias="security.inter.broker.protocol")

    # -- TLS (SslConfigs): PEM files only; each may be given per listener as listener.name.<l>.ssl.*
    ssl_keystore_type: Str = Field("JKS", alias="ssl.keystore.type")
    ssl_keystore_location: Str | None = Field(None, alias="ssl.keystore.location")
    """A PEM file holding the private key and the certificate chain (leaf first)."""
    ssl_key_password: Str | None = Field(None, alias="ssl.key.password")
    """Decrypts the keystore's private key when it is encrypted."""
    ssl_truststore_type: Str = Field("JKS", alias="ssl.truststore.type")
    ssl_truststore_location: Str | None = Field(None, alias="ssl.truststore.location")
    """A PEM bundle of the CAs whose certificates this node trusts (the system's CAs when unset)."""
    ssl_client_auth: ClientAuth = Field("none", alias="ssl.client.auth")
    ssl_endpoint_identification_algorithm: Str = Field("https", alias="ssl.endpoint.identification.algorithm")
    """`https`: a client checks the server's certificate names the host it dialled; empty: no check."""
    ssl_enabled_protocols: CsvList = Field(["TLSv1.2", "TLSv1.3"], alias="ssl.enabled.protocols")
    ssl_principal_mapping_rules: Str = Field("DEFAULT", alias="ssl.principal.mapping.rules")

    # -- SASL (BrokerSecurityConfigs)
    sasl_enabled_mechanisms: CsvList = Field(["GSSAPI"], alias="sasl.enabled.mechanisms")
    sasl_mechanism_controller_protocol: Str = Field("GSSAPI", alias="sasl.mechanism.controller.protocol")
    sasl_mechanism_inter_broker_protocol: Str = Field("GSSAPI", alias="sasl.mechanism.inter.broker.protocol")

    # -- authorization (StandardAuthorizer)
    authorizer_class_name: Str = Field("", alias="authorizer.class.name")
    """Empty: no ACL checks (Kafka's default); StandardAuthorizer's class name turns them on."""
    super_users: Str | None = Field(None, alias="super.users")
    """`User:a;User:b`: principals every ACL check allows."""
    allow_everyone_if_no_acl_found: Bool = Field(False, alias="allow.everyone.if.no.acl.found")
    kraftpy_node_principal_template: Str = Field("", alias="kraftpy.node.principal.template")
    """kraftpy's own: how a node's principal is spelled (empty: as its certificate maps it)."""

    # -- connections (SocketServerConfigs): the bounds of each listener
    max_connections: Int = Field(2**31 - 1, alias="max.connections", ge=0)
    max_connections_per_ip: Int = Field(2**31 - 1, alias="max.connections.per.ip", ge=0)
    max_connections_per_ip_overrides: Str = Field("", alias="max.connections.per.ip.overrides")
    connections_max_idle_ms: Long = Field(600000, alias="connections.max.idle.ms")

    # -- the group coordinator (GroupCoordinatorConfig, OffsetConfig)
    offsets_topic_num_partitions: Int = Field(50, alias="offsets.topic.num.partitions", ge=1)
    offsets_topic_replication_factor: Int = Field(3, alias="offsets.topic.replication.factor", ge=1)
    group_min_session_timeout_ms: Int = Field(6000, alias="group.min.session.timeout.ms", ge=0)
    group_max_session_timeout_ms: Int = Field(1800000, alias="group.max.session.timeout.ms", ge=0)
    group_initial_rebalance_delay_ms: Int = Field(3000, alias="group.initial.rebalance.delay.ms", ge=0)
    offset_metadata_max_bytes: Int = Field(4096, alias="offset.metadata.max.bytes", ge=0)

    # -- log directories
    log_dirs: Str | None = Field(None, alias="log.dirs")
    log_dir: Str = Field("/tmp/kafka-logs", alias="log.dir")
    metadata_log_dir: Str | None = Field(None, alias="metadata.log.dir")
    num_replica_alter_log_dirs_threads: Int | None = Field(
        None, alias="num.replica.alter.log.dirs.threads", ge=1
    )
    # Intra-broker moves (AlterReplicaLogDirs): the copy's rate; Long.MAX_VALUE is unthrottled.
    replica_alter_log_dirs_io_max_bytes_per_second: Long = Field(
        9223372036854775807, alias="replica.alter.log.dirs.io.max.bytes.per.second", ge=1
    )

    # -- broker lifecycle
    broker_heartbeat_interval_ms: Int = Field(2000, alias="broker.heartbeat.interval.ms")
    broker_session_timeout_ms: Int = Field(9000, alias="broker.session.timeout.ms")
    initial_broker_registration_timeout_ms: Int = Field(60000, alias="initial.broker.registration.timeout.ms")
    log_dir_failure_timeout_ms: Long = Field(30000, alias="log.dir.failure.timeout.ms", ge=1)
    # kraftpy's own: how often a broker probes each online log dir for a failed disk.
    log_dir_probe_interval_ms: Long = Field(1000, alias="log.dir.probe.interval.ms", ge=1)

    # -- topics and replication
    num_partitions: Int = Field(1, alias="num.partitions", ge=1)
    default_replication_factor: Int = Field(1, alias="default.replication.factor", ge=1)
    # kraftpy's own caps on CreateTopics (docs/kip-deviations.md): per request and for the cluster.
    kraftpy_max_partitions_per_request: Int = Field(100000, alias="kraftpy.max.partitions.per.request", ge=1)
    kraftpy_max_partitions: Int = Field(1000000, alias="kraftpy.max.partitions", ge=1)
    min_insync_replicas: Int = Field(1, alias="min.insync.replicas", ge=1)
    replica_lag_time_max_ms: Long = Field(30000, alias="replica.lag.time.max.ms")
    replica_fetch_wait_max_ms: Int = Field(500, alias="replica.fetch.wait.max.ms", ge=0)
    replica_fetch_max_bytes: Int = Field(1048576, alias="replica.fetch.max.bytes", ge=0)
    replica_fetch_backoff_ms: Int = Field(1000, alias="replica.fetch.backoff.ms", ge=0)
    # kraftpy's own: what leaders keep in memory, over every partition, of the batches they just
    # appended, to answer followers at the log end (Kafka reads them from the page cache).
    kraftpy_leader_tail_max_bytes: Long = Field(33554432, alias="kraftpy.leader.tail.max.bytes", ge=0)
    replica_high_watermark_checkpoint_interval_ms: Long = Field(
        5000, alias="replica.high.watermark.checkpoint.interval.ms", ge=1
    )
    replica_socket_timeout_ms: Int = Field(30000, alias="replica.socket.timeout.ms")
    # The largest RPC body a node reads; larger ones are refused (INVALID_REQUEST, HTTP 413).
    socket_request_max_bytes: Int = Field(104857600, alias="socket.request.max.bytes", ge=1)
    unclean_leader_election_enable: Bool = Field(False, alias="unclean.leader.election.enable")
    auto_leader_rebalance_enable: Bool = Field(True, alias="auto.leader.rebalance.enable")
    leader_imbalance_check_interval_seconds: Long = Field(
        300, alias="leader.imbalance.check.interval.seconds", ge=1
    )
    eligible_leader_replicas_enable: Bool = Field(False, alias="eligible.leader.replicas.enable")

    # -- metadata log
    metadata_log_segment_bytes: Int = Field(1073741824, alias="metadata.log.segment.bytes", ge=12)
    metadata_log_segment_min_bytes: Int = Field(
        8 * 1024 * 1024, alias="metadata.log.segment.min.bytes", ge=12
    )
    metadata_log_segment_ms: Long = Field(604800000, alias="metadata.log.segment.ms", ge=1)
    metadata_max_retention_bytes: Long = Field(104857600, alias="metadata.max.retention.bytes")
    metadata_max_retention_ms: Long = Field(604800000, alias="metadata.max.retention.ms")
    metadata_log_max_record_bytes_between_snapshots: Long = Field(
        20971520, alias="metadata.log.max.record.bytes.between.snapshots", ge=1
    )
    metadata_log_max_snapshot_interval_ms: Long = Field(
        3600000, alias="metadata.log.max.snapshot.interval.ms", ge=0
    )
    metadata_max_idle_interval_ms: Int = Field(500, alias="metadata.max.idle.interval.ms", ge=0)

    # -- partition logs
    log_segment_bytes: Int = Field(1073741824, alias="log.segment.bytes", ge=14)
    log_roll_ms: Long | None = Field(None, alias="log.roll.ms", ge=1)
    log_roll_hours: Int = Field(168, alias="log.roll.hours", ge=1)
    log_retention_ms: Long | None = Field(None, alias="log.retention.ms")
    log_retention_minutes: Int | None = Field(None, alias="log.retention.minutes")
    log_retention_hours: Int = Field(168, alias="log.retention.hours")
    log_retention_bytes: Long = Field(-1, alias="log.retention.bytes")

    # -- ZooKeeper migration (KIP-866)
    zookeeper_metadata_migration_enable: Bool = Field(False, alias="zookeeper.metadata.migration.enable")
    zookeeper_connect: Str | None = Field(None, alias="zookeeper.connect")
    zookeeper_session_timeout_ms: Int = Field(18000, alias="zookeeper.session.timeout.ms", ge=1)
    zookeeper_connection_timeout_ms: Int | None = Field(None, alias="zookeeper.connection.timeout.ms")
    controlled_shutdown_enable: Bool = Field(True, alias="controlled.shutdown.enable")
    controlled_shutdown_max_retries: Int = Field(3, alias="controlled.shutdown.max.retries", ge=0)
    controlled_shutdown_retry_backoff_ms: Long = Field(
        5000, alias="controlled.shutdown.retry.backoff.ms", ge=0
    )

    # Every key from the file as given, known or not (Kafka's "originals").
    _originals: dict[str, str] = PrivateAttr(default_factory=dict)
    _source: str | None = PrivateAttr(default=None)
    _per_listener: dict[str, KafkaConfig] = PrivateAttr(default_factory=dict)

    # ---- construction ----------------------------------------------------------------------------

    @classmethod
    def kafka_names(cls) -> dict[str, str]:
        """Kafka property name -> attribute name."""
        return {f.alias: name for name, f in cls.model_fields.items() if f.alias}

    @classmethod
    def from_properties(cls, props: Mapping[str, str], source: str = "<config>") -> KafkaConfig:
        """Validate properties; ConfigError names `source` and the key. Unknown keys are warned about."""
        known = cls.kafka_names()
        unknown = sorted(
            k
            for k in props
            if k not in known and _listener_override(k, known) is None and _jaas_key(k) is None
        )
        for key in unknown:
            log.warning("unknown config key ignored", key=key, file=source)
        given = {k: v for k, v in props.items() if k in known}
        if "broker.id" in given and "node.id" not in given and not given.get("process.roles"):
            # ZooKeeper mode names a broker by broker.id; the rest of the broker reads node.id.
            given["node.id"] = given["broker.id"]
        try:
            cfg = cls.model_validate(given)
        except ValidationError as e:
            err = e.errors(include_url=False)[0]
            key = str(err["loc"][0]) if err["loc"] else "?"
            value = props.get(key)
            raise ConfigError(
                f"{source}: invalid value {value!r} for configuration {key}: {err['msg']}"
            ) from None
        cfg._originals = dict(props)
        cfg._source = source
        try:
            cfg._check()
        except ValueError as e:
            raise ConfigError(f"{source}: {e}") from None
        return cfg

    def sasl_jaas_config(self, listener_name: str, mechanism: str) -> tuple[str, str] | None:
        """(its key, its value) of `listener.name.<listener>.<mechanism>.sasl.jaas.config`, a broker's
        JAAS login for one SASL mechanism on one listener (Kafka reads no unprefixed form on a
        broker); None when it is not set."""
        want = (listener_name.upper(), mechanism.upper())
        for key, value in self._originals.items():
            if _jaas_key(key) == want:
                return key, value
        return None

    def listener_config(self, listener_name: str) -> KafkaConfig:
        """This config as `listener_name` sees it: its `listener.name.<listener>.*` overrides applied
        (Kafka's per-listener ssl.*, sasl.* and connection settings); `self` when it has none."""
        key = listener_name.upper()
        cached = self._per_listener.get(key)
        if cached is not None:
            return cached
        known = self.kafka_names()
        overrides: dict[str, str] = {}
        for k, v in self._originals.items():
            found = _listener_override(k, known)
            if found is not None and found[0] == key:
                overrides[found[1]] = v
        if not overrides:
            self._per_listener[key] = self
            return self
        try:
            # Only the overridden keys are read again; every other value stays as this config has it.
            partial = type(self).model_validate(overrides)
        except ValidationError as e:
            err = e.errors(include_url=False)[0]
            name = str(err["loc"][0]) if err["loc"] else "?"
            raise ConfigError(
                f"{self._source}: invalid value {overrides.get(name)!r} for configuration "
                f"{LISTENER_PREFIX}{listener_name.lower()}.{name}: {err['msg']}"
            ) from None
        derived = self.model_copy(update={known[k]: getattr(partial, known[k]) for k in overrides})
        derived._per_listener = {}
        self._per_listener[key] = derived
        return derived

    def _check(self) -> None:
        """Checks across keys, and syntax of structured values, so later accessors cannot fail."""
        bad_roles = [r for r in self.process_roles if r not in ("broker", "controller")]
        if bad_roles:
            raise ValueError(f"invalid value for configuration process.roles: unknown role {bad_roles[0]!r}")
        if len(set(self.process_roles)) != len(self.process_roles):
            raise ValueError("invalid value for configuration process.roles: a role is given twice")
        for key, value in (
            ("listeners", self.listeners),
            ("advertised.listeners", self.advertised_listeners),
        ):
            try:
                parse_listeners(value)
            except ValueError as e:
                raise ValueError(f"invalid value for configuration {key}: {e}") from None
        try:
            parse_quorum_voters(self.controller_quorum_voters)
        except ValueError as e:
            raise ValueError(f"invalid value for configuration controller.quorum.voters: {e}") from None
        if (
            self.process_roles
            and self.broker_id != -1
            and self.node_id != -1
            and self.broker_id != self.node_id
        ):
            raise ValueError(
                f"broker.id ({self.broker_id}) must equal node.id ({self.node_id}) in KRaft mode"
            )
        if not self.log_dir_list:
            raise ValueError("no log directory: set log.dirs (or log.dir)")
        self._check_security()

    @property
    def authorizer_enabled(self) -> bool:
        return bool(self.authorizer_class_name)

    def _check_security(self) -> None:
        if self.authorizer_class_name and self.authorizer_class_name not in AUTHORIZER_CLASSES:
            raise ValueError(
                f"invalid value for configuration authorizer.class.name: {self.authorizer_class_name!r} "
                f"(kraftpy implements {AUTHORIZER_CLASSES[0]})"
            )
        if self.kraftpy_node_principal_template:
            from kraftpy.security.authorizer import parse_node_template

            try:
                parse_node_template(self.kraftpy_node_principal_template)
            except ValueError as e:
                raise ValueError(
                    f"invalid value for configuration kraftpy.node.principal.template: {e}"
                ) from None
        if self.security_inter_broker_protocol.upper() not in SECURITY_PROTOCOLS:
            raise ValueError(
                "invalid value for configuration security.inter.broker.protocol: "
                f"{self.security_inter_broker_protocol!r} is not one of {', '.join(SECURITY_PROTOCOLS)}"
            )
        try:
            parse_overrides(self.max_connections_per_ip_overrides)
        except ValueError as e:
            raise ValueError(
                f"invalid value for configuration max.connections.per.ip.overrides: {e}"
            ) from None
        for name in self.ssl_enabled_protocols:
            if name not in ("TLSv1.2", "TLSv1.3"):
                raise ValueError(
                    f"invalid value for configuration ssl.enabled.protocols: {name!r} (TLSv1.2 and TLSv1.3 are supported)"
                )
        known = self.kafka_names()
        overridden = {
            found[0] for k in self._originals if (found := _listener_override(k, known)) is not None
        }
        for name in sorted(overridden):
            try:
                self.listener_config(name)
            except ConfigError as e:
                raise ValueError(str(e).removeprefix(f"{self._source}: ")) from None
        for spec in self.listener_list:
            if self.security_protocol_name(spec.name, strict=False) not in TLS_PROTOCOLS:
                continue
            own = self.listener_config(spec.name)
            prefix = _override_name(self, spec.name, "ssl.keystore.location")
            if not own.ssl_keystore_location:
                raise ValueError(
                    f"listener {spec.name} is {self.security_protocol_name(spec.name)} but {prefix} is not set "
                    "(a PEM file with the private key and certificate chain)"
                )
            if own.ssl_keystore_type.upper() != "PEM":
                raise ValueError(
                    f"{_override_name(self, spec.name, 'ssl.keystore.type')}={own.ssl_keystore_type} is not "
                    f"supported for listener {spec.name}: set it to PEM"
                )
            if own.ssl_truststore_location and own.ssl_truststore_type.upper() != "PEM":
                raise ValueError(
                    f"{_override_name(self, spec.name, 'ssl.truststore.type')}={own.ssl_truststore_type} is not "
                    f"supported for listener {spec.name}: set it to PEM"
                )

    # ---- access ------------------------------------------------------------------------------------

    def get(self, kafka_name: str) -> Any:
        """A value by its Kafka name; KeyError for a name this config does not know."""
        attr = self.kafka_names().get(kafka_name)
        if attr is None:
            raise KeyError(kafka_name)
        return getattr(self, attr)

    @property
    def originals(self) -> dict[str, str]:
        return dict(self._originals)

    @property
    def source(self) -> str | None:
        return self._source

    @property
    def roles(self) -> frozenset[str]:
        return frozenset(self.process_roles)

    @property
    def is_kraft(self) -> bool:
        return bool(self.process_roles)

    @property
    def is_broker(self) -> bool:
        return "broker" in self.process_roles

    @property
    def is_controller(self) -> bool:
        return "controller" in self.process_roles

    @property
    def log_dir_list(self) -> list[str]:
        """log.dirs, or log.dir when log.dirs is unset (KafkaConfig.logDirs)."""
        return _parse_list(self.log_dirs if self.log_dirs is not None else self.log_dir)

    @property
    def metadata_log_dir_path(self) -> str:
        """metadata.log.dir, defaulting to the first log dir."""
        return self.metadata_log_dir or self.log_dir_list[0]

    @property
    def all_dirs(self) -> list[str]:
        """Every dir a node owns: log dirs plus the metadata dir, sorted, without duplicates."""
        return sorted({*self.log_dir_list, self.metadata_log_dir_path})

    @property
    def listener_list(self) -> list[ListenerSpec]:
        return parse_listeners(self.listeners)

    @property
    def advertised_listener_list(self) -> list[ListenerSpec]:
        """advertised.listeners, or listeners when unset; controller listeners are never advertised by brokers."""
        if self.advertised_listeners is not None:
            return parse_listeners(self.advertised_listeners)
        controller = set(self.controller_listener_names or [])
        return [e for e in self.listener_list if e.name not in controller or not self.is_broker]

    def listener(self, name: str) -> ListenerSpec:
        for e in self.listener_list:
            if e.name == name.upper():
                return e
        raise ConfigError(f"{self._source}: no listener named {name} in listeners={self.listeners}")

    @property
    def rpc_listener(self) -> ListenerSpec | None:
        """The broker listener serving the HTTP RPC: the one named rpc.listener.name or, in a config
        that names none so, the first broker listener (configs from before Kafka's protocol was served,
        where that listener is then HTTP only)."""
        controller = set(self.controller_listener_names or [])
        own = [e for e in self.listener_list if e.name not in controller]
        named = [e for e in own if e.name == self.rpc_listener_name.upper()]
        return named[0] if named else (own[0] if own else None)

    @property
    def kafka_listeners(self) -> list[ListenerSpec]:
        """The broker listeners speaking Kafka's binary protocol: all but the controller's and the RPC one.
        None when no listener carries rpc.listener.name's name (see rpc_listener)."""
        controller = set(self.controller_listener_names or [])
        rpc = self.rpc_listener_name.upper()
        own = [e for e in self.listener_list if e.name not in controller]
        if not any(e.name == rpc for e in own):
            return []
        return [e for e in own if e.name != rpc]

    def security_protocol_name(self, listener_name: str, *, strict: bool = True) -> str:
        """Security protocol of a listener, from listener.security.protocol.map: a listener missing from
        it is the protocol of its name (Kafka's `SSL://...`), and controller and RPC listeners missing
        from it are PLAINTEXT. ConfigError for any other listener (`strict=False`: "" instead)."""
        mapping = {
            k.strip().upper(): v.strip().upper()
            for k, _, v in (
                item.partition(":") for item in self.listener_security_protocol_map if ":" in item
            )
        }
        name = listener_name.upper()
        proto = mapping.get(name)
        if proto is None:
            if name in SECURITY_PROTOCOLS:
                proto = name
            elif (
                name in (n.upper() for n in self.controller_listener_names or [])
                or name == self.rpc_listener_name.upper()
            ):
                proto = "PLAINTEXT"
            else:
                proto = name
        if proto not in SECURITY_PROTOCOLS:
            if not strict:
                return ""
            raise ConfigError(f"{self._source}: listener {listener_name} has no security protocol mapping")
        return proto

    def security_protocol(self, listener_name: str) -> int:
        """SecurityProtocol id of a listener (see security_protocol_name)."""
        return SECURITY_PROTOCOLS[self.security_protocol_name(listener_name)]

    def is_tls(self, listener_name: str) -> bool:
        """Whether connections to `listener_name` are TLS (SSL or SASL_SSL)."""
        return self.security_protocol_name(listener_name) in TLS_PROTOCOLS

    @property
    def quorum_voters(self) -> list[QuorumVoter]:
        return parse_quorum_voters(self.controller_quorum_voters)

    def controller_endpoint(self, voter_id: int | None = None) -> QuorumVoter:
        """The voter with `voter_id`, or the first voter (the only one in a single-controller setup)."""
        voters = self.quorum_voters
        if not voters:
            raise ConfigError(f"{self._source}: controller.quorum.voters is empty")
        if voter_id is None:
            return voters[0]
        for v in voters:
            if v.id == voter_id:
                return v
        raise ConfigError(f"{self._source}: no voter with id {voter_id} in controller.quorum.voters")

    @property
    def effective_log_roll_ms(self) -> int:
        return self.log_roll_ms if self.log_roll_ms is not None else self.log_roll_hours * 3600_000

    @property
    def effective_log_retention_ms(self) -> int:
        if self.log_retention_ms is not None:
            return self.log_retention_ms
        if self.log_retention_minutes is not None:
            return self.log_retention_minutes * 60_000
        return self.log_retention_hours * 3600_000

    @property
    def is_zk_mode(self) -> bool:
        """Kafka's rule: zookeeper.connect without process.roles is a ZooKeeper-mode broker."""
        return bool(self.zookeeper_connect) and not self.process_roles

    @property
    def zk_connection_timeout_s(self) -> float:
        ms = self.zookeeper_connection_timeout_ms
        return (self.zookeeper_session_timeout_ms if ms is None else ms) / 1000

    def require_zk(self) -> None:
        """What a ZooKeeper-mode broker needs: a broker id (broker.id, or node.id as its synonym)."""
        src = self._source
        if not self.is_zk_mode:
            raise ConfigError(
                f"{src}: zookeeper.connect is not set, or process.roles is: not a ZooKeeper-mode broker"
            )
        if self.node_id < 0:
            raise ConfigError(f"{src}: broker.id must be set to a value >= 0 in ZooKeeper mode")

    def require_kraft(self) -> None:
        """What every KRaft process and `storage format` needs: roles, a node id and controller listener names."""
        src = self._source
        if not self.process_roles:
            raise ConfigError(
                f"{src}: process.roles is not set; this looks like a ZooKeeper-mode config, and only KRaft mode is supported"
            )
        if self.node_id < 0:
            raise ConfigError(f"{src}: node.id must be set to a value >= 0 in KRaft mode")
        if not self.controller_listener_names:
            raise ConfigError(f"{src}: controller.listener.names must be set in KRaft mode")
        voter_ids = {v.id for v in self.quorum_voters}
        if self.is_controller and voter_ids and self.node_id not in voter_ids:
            raise ConfigError(
                f"{src}: node.id {self.node_id} has the controller role but is not in controller.quorum.voters"
            )
        # Kafka's own check: a broker-only node with a voter's id would fetch the metadata log as that
        # voter, and the leader would count its fetches toward the quorum.
        if self.is_broker and not self.is_controller and self.node_id in voter_ids:
            raise ConfigError(
                f"{src}: node.id {self.node_id} has only the broker role but is in controller.quorum.voters "
                f"({','.join(self.controller_quorum_voters)}); brokers and controllers need distinct ids"
            )


def _listener_override(key: str, known: Mapping[str, str]) -> tuple[str, str] | None:
    """(LISTENER, key) for `listener.name.<listener>.<key>` naming a key that may be set per listener."""
    if not key.startswith(LISTENER_PREFIX):
        return None
    listener, dot, rest = key[len(LISTENER_PREFIX) :].partition(".")
    if not dot or not listener or rest not in known or not rest.startswith(_PER_LISTENER_FAMILIES):
        return None
    return listener.upper(), rest


def _jaas_key(key: str) -> tuple[str, str] | None:
    """(LISTENER, MECHANISM) of a `listener.name.<listener>.<mechanism>.sasl.jaas.config` key."""
    if not key.startswith(LISTENER_PREFIX) or not key.endswith(JAAS_CONFIG_SUFFIX):
        return None
    listener, dot, mechanism = key[len(LISTENER_PREFIX) : -len(JAAS_CONFIG_SUFFIX)].partition(".")
    if not dot or not listener or not mechanism or "." in mechanism:
        return None
    return listener.upper(), mechanism.upper()


def _override_name(cfg: KafkaConfig, listener_name: str, key: str) -> str:
    """The name an operator gave `key` for a listener: its per-listener form when that is set."""
    known = cfg.kafka_names()
    for given in cfg.originals:
        if _listener_override(given, known) == (listener_name.upper(), key):
            return given
    return key


def load_config(path: str | Path, overrides: Mapping[str, str] | None = None) -> KafkaConfig:
    """Read and validate a server .properties file; `overrides` (Kafka names) win over the file."""
    source = str(path)
    try:
        props = load_properties(path)
    except OSError as e:
        raise ConfigError(f"cannot read config file {source}: {e.strerror or e}") from None
    except PropertiesError as e:
        raise ConfigError(f"{source}: {e}") from None
    if overrides:
        props.update(overrides)
    return KafkaConfig.from_properties(props, source)
