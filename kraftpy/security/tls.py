"""TLS for the HTTP RPC listeners: `ssl.SSLContext`s built from a KafkaConfig's ssl.* keys.

A server context holds the node's key and certificate chain (ssl.keystore.location, a PEM file) and,
when ssl.client.auth asks for client certificates, the CAs it trusts them from
(ssl.truststore.location). A client context trusts the same CAs, presents the same key and chain
(mutual TLS between nodes) and, with ssl.endpoint.identification.algorithm=https, checks that the
server's certificate names the host or IP it dialled. Only TLS 1.2 and 1.3 are offered.

Every file problem (missing, unreadable, not PEM, encrypted without ssl.key.password, key and
certificate that do not belong together) is a ConfigError naming the key and the file, found when
the context is built: at startup.
"""

from __future__ import annotations

import datetime
import os
import ssl
from collections.abc import Callable, Mapping
from typing import Any

import structlog
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import dsa, ec, ed448, ed25519, rsa

from kraftpy.config import TLS_PROTOCOLS, ConfigError, KafkaConfig
from kraftpy.security.principal import ANONYMOUS
from kraftpy.security.principal_mapping import SslPrincipalMapper, peer_principal

log = structlog.get_logger("kraftpy.security.tls")

PrincipalOf = Callable[[Mapping[str, Any] | None], str]
"""Maps a peer certificate as `SSLSocket.getpeercert()` gives it (None: no certificate) to a
principal (`User:...`)."""

_TLS_VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}

_VERIFY_MODE = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}


# ---- contexts ------------------------------------------------------------------------------------------


def server_context(cfg: KafkaConfig, listener_name: str | None = None) -> ssl.SSLContext:
    """The context a TLS listener serves with: `listener_name`'s own ssl.* settings when given."""
    own = cfg.listener_config(listener_name) if listener_name else cfg
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _set_versions(ctx, own)
    if not own.ssl_keystore_location:
        raise ConfigError(
            _where(cfg, "ssl.keystore.location is not set: a TLS listener needs a key and certificate")
        )
    _load_keystore(ctx, cfg, own)
    client_auth = _client_auth(cfg, own, listener_name)
    ctx.verify_mode = _VERIFY_MODE[client_auth]
    if client_auth != "none":
        _load_truststore(ctx, cfg, own, ssl.Purpose.CLIENT_AUTH)
    return ctx


def _client_auth(cfg: KafkaConfig, own: KafkaConfig, listener_name: str | None) -> str:
    """ssl.client.auth for this listener. On SASL_SSL (KIP-684) only the listener's own
    `listener.name.<l>.ssl.client.auth` counts: clients there prove who they are with SASL, and a
    broker-wide `required` meant for SSL listeners must not ask them for a certificate too."""
    if listener_name and cfg.security_protocol_name(listener_name, strict=False) == "SASL_SSL":
        prefix = f"listener.name.{listener_name.lower()}.ssl.client.auth"
        return own.ssl_client_auth if prefix in cfg.originals else "none"
    return own.ssl_client_auth


def client_context(cfg: KafkaConfig, listener_name: str | None = None) -> ssl.SSLContext:
    """The context a node dials a TLS listener with: the CAs it trusts, its own certificate when it
    has a keystore (for listeners with ssl.client.auth), and the hostname check of
    ssl.endpoint.identification.algorithm."""
    own = cfg.listener_config(listener_name) if listener_name else cfg
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    _set_versions(ctx, own)
    algorithm = own.ssl_endpoint_identification_algorithm.strip().lower()
    if algorithm not in ("https", ""):
        raise ConfigError(
            _where(
                cfg,
                f"ssl.endpoint.identification.algorithm={own.ssl_endpoint_identification_algorithm} is not "
                "supported (https, or empty for no hostname check)",
            )
        )
    ctx.check_hostname = algorithm == "https"
    ctx.verify_mode = ssl.CERT_REQUIRED
    _load_truststore(ctx, cfg, own, ssl.Purpose.SERVER_AUTH)
    if own.ssl_keystore_location:
        _load_keystore(ctx, cfg, own)
    return ctx


def listener_server_context(cfg: KafkaConfig, listener_name: str) -> ssl.SSLContext | None:
    """The server context of `listener_name` when its security protocol is TLS, else None."""
    if cfg.security_protocol_name(listener_name) not in TLS_PROTOCOLS:
        return None
    return server_context(cfg, listener_name)


_clients: dict[tuple[Any, ...], ssl.SSLContext] = {}


def peer_context(cfg: KafkaConfig, listener_name: str | None) -> ssl.SSLContext | None:
    """The client context for reaching a peer's `listener_name` when that listener is TLS, else None.

    Every node of a cluster maps its listeners alike, so this node's map says what the peer serves.
    One context serves every client of the process (a context is safe to share, and building one
    reads files): it is built again only when a setting or a file's modification time changed."""
    # A listener this node's map does not name (a migration's ZooKeeper brokers') is dialled plain.
    if not listener_name or cfg.security_protocol_name(listener_name, strict=False) not in TLS_PROTOCOLS:
        return None
    own = cfg.listener_config(listener_name)
    key = (
        own.ssl_keystore_location,
        _mtime(own.ssl_keystore_location),
        own.ssl_key_password,
        own.ssl_truststore_location,
        _mtime(own.ssl_truststore_location),
        own.ssl_endpoint_identification_algorithm,
        tuple(own.ssl_enabled_protocols),
        own.ssl_keystore_type,
        own.ssl_truststore_type,
    )
    ctx = _clients.get(key)
    if ctx is None:
        ctx = _clients[key] = client_context(cfg, listener_name)
    return ctx


def controller_peer_context(cfg: KafkaConfig) -> ssl.SSLContext | None:
    """The client context for the controllers' listener (controller.listener.names' first), or None."""
    names = cfg.controller_listener_names or []
    return peer_context(cfg, names[0]) if names else None


def _mtime(path: str | None) -> int | None:
    if not path:
        return None
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None


def _where(cfg: KafkaConfig, message: str) -> str:
    return f"{cfg.source}: {message}" if cfg.source else message


def _set_versions(ctx: ssl.SSLContext, own: KafkaConfig) -> None:
    versions = sorted(_TLS_VERSIONS[v] for v in own.ssl_enabled_protocols if v in _TLS_VERSIONS)
    if not versions:
        versions = [ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3]
    ctx.minimum_version, ctx.maximum_version = versions[0], versions[-1]


def _read(cfg: KafkaConfig, key: str, path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise ConfigError(_where(cfg, f"cannot read {key}={path}: {e.strerror or e}")) from None


def _load_keystore(ctx: ssl.SSLContext, cfg: KafkaConfig, own: KafkaConfig) -> None:
    """Check the keystore with `cryptography` first, for messages that name the problem (OpenSSL's
    say "PEM lib"), then load it."""
    path = own.ssl_keystore_location
    assert path is not None
    key_name = "ssl.keystore.location"
    if own.ssl_keystore_type.upper() != "PEM":
        raise ConfigError(
            _where(cfg, f"ssl.keystore.type={own.ssl_keystore_type} is not supported: set it to PEM")
        )
    data = _read(cfg, key_name, path)
    password = own.ssl_key_password.encode() if own.ssl_key_password else None
    key = _private_key(cfg, path, data, password)
    try:
        chain = x509.load_pem_x509_certificates(data)
    except ValueError:
        raise ConfigError(_where(cfg, f"{key_name}={path} holds no PEM certificate")) from None
    if chain[0].public_key() != key.public_key():
        raise ConfigError(
            _where(cfg, f"{key_name}={path}: the private key does not belong to the first certificate")
        )
    _warn_if_outside_validity(path, chain[0])
    try:
        # A callable, so that OpenSSL never prompts on the terminal for an encrypted key.
        ctx.load_cert_chain(path, password=lambda: password or b"")
    except (OSError, ssl.SSLError) as e:
        raise ConfigError(_where(cfg, f"cannot load {key_name}={path}: {e}")) from None


_KeyTypes = (
    rsa.RSAPrivateKey,
    ec.EllipticCurvePrivateKey,
    ed25519.Ed25519PrivateKey,
    ed448.Ed448PrivateKey,
    dsa.DSAPrivateKey,
)


def _private_key(cfg: KafkaConfig, path: str, data: bytes, password: bytes | None) -> Any:
    begin = data.find(b"-----BEGIN ")
    key_at = -1
    while begin >= 0:
        line_end = data.find(b"-----", begin + 11)
        if b"PRIVATE KEY" in data[begin:line_end]:
            key_at = begin
            break
        begin = data.find(b"-----BEGIN ", begin + 11)
    if key_at < 0:
        raise ConfigError(_where(cfg, f"ssl.keystore.location={path} holds no PEM private key"))
    try:
        key = serialization.load_pem_private_key(data[key_at:], password=password)
    except TypeError as e:
        # cryptography says which way round: encrypted without a password, or a password for a plain key.
        if password is None:
            raise ConfigError(
                _where(
                    cfg, f"the private key in ssl.keystore.location={path} is encrypted: set ssl.key.password"
                )
            ) from None
        raise ConfigError(_where(cfg, f"ssl.keystore.location={path}: {e}")) from None
    except ValueError:
        what = "ssl.key.password does not decrypt it" if password else "it does not parse"
        raise ConfigError(
            _where(cfg, f"cannot read the private key in ssl.keystore.location={path}: {what}")
        ) from None
    if not isinstance(key, _KeyTypes):
        raise ConfigError(_where(cfg, f"ssl.keystore.location={path}: unsupported key type"))
    return key


def _load_truststore(ctx: ssl.SSLContext, cfg: KafkaConfig, own: KafkaConfig, purpose: ssl.Purpose) -> None:
    path = own.ssl_truststore_location
    if not path:
        # Kafka's default truststore is the JVM's; ours is the system's.
        ctx.load_default_certs(purpose)
        return
    if own.ssl_truststore_type.upper() != "PEM":
        raise ConfigError(
            _where(cfg, f"ssl.truststore.type={own.ssl_truststore_type} is not supported: set it to PEM")
        )
    data = _read(cfg, "ssl.truststore.location", path)
    try:
        x509.load_pem_x509_certificates(data)
    except ValueError:
        raise ConfigError(_where(cfg, f"ssl.truststore.location={path} holds no PEM certificate")) from None
    try:
        ctx.load_verify_locations(cadata=data.decode("ascii", "replace"))
    except (OSError, ssl.SSLError) as e:
        raise ConfigError(_where(cfg, f"cannot load ssl.truststore.location={path}: {e}")) from None


def _warn_if_outside_validity(path: str, cert: x509.Certificate) -> None:
    # Peers refuse such a certificate; saying so here saves hunting through their handshake errors.
    now = datetime.datetime.now(datetime.UTC)
    if now > cert.not_valid_after_utc:
        log.warning("certificate has expired", file=path, not_after=cert.not_valid_after_utc.isoformat())
    elif now < cert.not_valid_before_utc:
        log.warning(
            "certificate is not valid yet", file=path, not_before=cert.not_valid_before_utc.isoformat()
        )


# ---- principals ----------------------------------------------------------------------------------------


def anonymous(_peercert: Mapping[str, Any] | None) -> str:
    """The principal of every connection to a listener that is not TLS."""
    return str(ANONYMOUS)


def principal_builder(cfg: KafkaConfig, listener_name: str | None = None) -> PrincipalOf:
    """How a TLS listener names its peer (Kafka's DefaultKafkaPrincipalBuilder): `User:` and the
    certificate's RFC 2253 DN mapped by ssl.principal.mapping.rules (DEFAULT keeps the DN whole),
    User:ANONYMOUS without a certificate. The rules are parsed here, so a bad one is a ConfigError at
    startup; a DN no rule maps raises NoMatchingRule, which refuses that connection."""
    own = cfg.listener_config(listener_name) if listener_name else cfg
    try:
        mapper = SslPrincipalMapper(own.ssl_principal_mapping_rules)
    except ValueError as e:
        raise ConfigError(
            _where(cfg, f"invalid value for configuration ssl.principal.mapping.rules: {e}")
        ) from None

    def principal_of(peercert: Mapping[str, Any] | None) -> str:
        return str(peer_principal(peercert, mapper))

    return principal_of
