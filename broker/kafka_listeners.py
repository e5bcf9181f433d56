"""A broker's Kafka-protocol listeners as its config makes them: the security protocol each maps to
in listener.security.protocol.map, its TLS context and principal mapping (kraftpy.security.tls), the
SASL mechanisms it authenticates with (sasl.enabled.mechanisms: SCRAM against the credentials in the
metadata image, PLAIN against the users of `listener.name.<listener>.plain.sasl.jaas.config`), and
the connection bounds (connections.max.idle.ms) it keeps. Each setting may be given for one listener
as `listener.name.<listener>.<key>`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from aiohttp import web

from kraftpy.config import TLS_PROTOCOLS, ConfigError, KafkaConfig, ListenerSpec
from kraftpy.image import MetadataImage
from kraftpy.security.acl import ScramMechanism
from kraftpy.security.jaas import PLAIN_LOGIN_MODULE, PlainUsers, parse_jaas_config
from kraftpy.security.tls import principal_builder, server_context
from protocol.transport.connection_quotas import ConnectionQuotas
from protocol.transport.kafka_server import KafkaListener, ssl_principal
from protocol.transport.sasl import PLAIN, PlainCheck, ScramLookup


def image_scram_lookup(image: Callable[[], MetadataImage | None]) -> ScramLookup:
    """Credentials as the latest image holds them (UserScramCredentialRecord), so a credential
    altered or deleted through the controller counts from the next authentication on."""

    def lookup(mechanism_name: str, username: str) -> tuple[bytes, bytes, bytes, int] | None:
        current = image()
        if current is None:
            return None
        try:
            mechanism = ScramMechanism.from_mechanism_name(mechanism_name)
        except ValueError:
            return None
        rec = current.scram.records.get((username, int(mechanism)))
        if rec is None:
            return None
        return bytes(rec.Salt), bytes(rec.StoredKey), bytes(rec.ServerKey), int(rec.Iterations)

    return lookup


def plain_users(cfg: KafkaConfig, listener_name: str) -> PlainCheck:
    """The SASL/PLAIN password check of a listener, from its JAAS config; ConfigError naming the key
    when it is missing or cannot be read (Kafka too refuses to start a PLAIN listener without one)."""
    key = f"listener.name.{listener_name.lower()}.plain.sasl.jaas.config"
    found = cfg.sasl_jaas_config(listener_name, PLAIN)
    if found is None:
        raise ConfigError(
            f"{cfg.source}: listener {listener_name} enables SASL/PLAIN but {key} is not set "
            f'(e.g. {PLAIN_LOGIN_MODULE} required user_alice="alice-secret";)'
        )
    key, text = found
    try:
        users = PlainUsers.from_jaas(parse_jaas_config(text))
    except ValueError as e:
        raise ConfigError(f"{cfg.source}: {key}: {e}") from None
    if not users.passwords:
        raise ConfigError(f'{cfg.source}: {key} names no user (user_<name>="<password>")')
    return users.check


def kafka_listener(
    cfg: KafkaConfig,
    spec: ListenerSpec,
    app: web.Application,
    apis: Sequence[str],
    image: Callable[[], MetadataImage | None],
    quotas: ConnectionQuotas | None,
) -> KafkaListener:
    """The listener `spec` serving `apis` of `app`; ConfigError naming the listener when its settings
    cannot be served (a keystore that does not load, a SASL mechanism other than SCRAM and PLAIN,
    PLAIN without its users)."""
    protocol = cfg.security_protocol_name(spec.name)
    own = cfg.listener_config(spec.name)
    tls = protocol in TLS_PROTOCOLS
    sasl = protocol.startswith("SASL_")
    # a SASL_SSL connection is named by its SASL exchange, not by its certificate
    principal_of = principal_builder(cfg, spec.name) if protocol == "SSL" else ssl_principal
    try:
        return KafkaListener(
            app,
            spec.name,
            tuple(apis),
            max_request_bytes=cfg.socket_request_max_bytes,
            security_protocol=protocol,
            ssl_context=server_context(cfg, spec.name) if tls else None,
            sasl_mechanisms=tuple(own.sasl_enabled_mechanisms) if sasl else (),
            scram_lookup=image_scram_lookup(image) if sasl else None,
            plain_check=plain_users(cfg, spec.name)
            if sasl and PLAIN in own.sasl_enabled_mechanisms
            else None,
            principal_of=principal_of,
            connection_quotas=quotas,
            # Kafka: a negative connections.max.idle.ms never closes an idle connection
            idle_timeout_s=own.connections_max_idle_ms / 1000 if own.connections_max_idle_ms >= 0 else None,
        )
    except ValueError as e:
        key = (
            f"listener.name.{spec.name.lower()}.sasl.enabled.mechanisms"
            if own is not cfg and own.sasl_enabled_mechanisms != cfg.sasl_enabled_mechanisms
            else "sasl.enabled.mechanisms"
        )
        raise ConfigError(f"{cfg.source}: {e} (set {key}, e.g. SCRAM-SHA-512 or PLAIN)") from None
