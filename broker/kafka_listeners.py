"""A broker's Kafka-protocol listeners as its config makes them: the security protocol each maps to
in listener.security.protocol.map, its TLS context and principal mapping (kraftpy.security.tls), the
SCRAM mechanisms it authenticates with (sasl.enabled.mechanisms) against the credentials in the
metadata image, and the connection bounds (connections.max.idle.ms) it keeps. Each setting may be
given for one listener as `listener.name.<listener>.<key>`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from aiohttp import web

from kraftpy.config import TLS_PROTOCOLS, ConfigError, KafkaConfig, ListenerSpec
from kraftpy.image import MetadataImage
from kraftpy.security.acl import ScramMechanism
from kraftpy.security.tls import principal_builder, server_context
from protocol.transport.connection_quotas import ConnectionQuotas
from protocol.transport.kafka_server import KafkaListener, ssl_principal
from protocol.transport.sasl import ScramLookup


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


def kafka_listener(
    cfg: KafkaConfig,
    spec: ListenerSpec,
    app: web.Application,
    apis: Sequence[str],
    image: Callable[[], MetadataImage | None],
    quotas: ConnectionQuotas | None,
) -> KafkaListener:
    """The listener `spec` serving `apis` of `app`; ConfigError naming the listener when its settings
    cannot be served (a keystore that does not load, a SASL mechanism other than SCRAM)."""
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
        raise ConfigError(f"{cfg.source}: {e} (set {key}, e.g. SCRAM-SHA-512)") from None
