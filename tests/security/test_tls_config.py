"""The TLS and connection keys of the server config, and the SSLContexts kraftpy.security.tls builds
from them: Kafka's names and defaults, per-listener overrides, and a ConfigError naming the key and the
file (never a traceback) for every file that cannot be used."""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from pathlib import Path

import pytest

from kraftpy.config import ConfigError, KafkaConfig
from kraftpy.security import tls
from kraftpy.security.listeners import connection_quotas, rpc_listener
from tools.cluster.certs import CaFiles, KeyPair, create_ca, issue, node_cert

BASE = {"log.dirs": "/tmp/kraftpy-unused"}


def config(props: Mapping[str, str], source: str = "server.properties") -> KafkaConfig:
    return KafkaConfig.from_properties({**BASE, **props}, source)


def config_error(props: Mapping[str, str]) -> str:
    with pytest.raises(ConfigError) as e:
        config(props)
    assert e.value.__cause__ is None and (e.value.__context__ is None or e.value.__suppress_context__)
    return str(e.value)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> tuple[CaFiles, KeyPair]:
    d = tmp_path_factory.mktemp("pki")
    ca = create_ca(d / "ca")
    return ca, node_cert(ca, 1, d / "node-1")


def ssl_props(pair: KeyPair, **more: str) -> dict[str, str]:
    return {
        "listeners": "CONTROLLER://127.0.0.1:9093",
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "CONTROLLER:SSL",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(pair.keystore),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(pair.truststore),
        **{k.replace("_", "."): v for k, v in more.items()},
    }


# -- keys and defaults -----------------------------------------------------------------------------


def test_kafka_names_and_defaults() -> None:
    cfg = config({})
    expected = {
        "ssl.keystore.type": "JKS",
        "ssl.keystore.location": None,
        "ssl.key.password": None,
        "ssl.truststore.type": "JKS",
        "ssl.truststore.location": None,
        "ssl.client.auth": "none",
        "ssl.endpoint.identification.algorithm": "https",
        "ssl.enabled.protocols": ["TLSv1.2", "TLSv1.3"],
        "ssl.principal.mapping.rules": "DEFAULT",
        "security.inter.broker.protocol": "PLAINTEXT",
        "super.users": None,
        "allow.everyone.if.no.acl.found": False,
        "kraftpy.node.principal.template": "",
        "max.connections": 2**31 - 1,
        "max.connections.per.ip": 2**31 - 1,
        "max.connections.per.ip.overrides": "",
        "connections.max.idle.ms": 600000,
        "sasl.enabled.mechanisms": ["GSSAPI"],
        "sasl.mechanism.controller.protocol": "GSSAPI",
        "sasl.mechanism.inter.broker.protocol": "GSSAPI",
    }
    assert {k: cfg.get(k) for k in expected} == expected


def test_values_parse_as_kafka_reads_them() -> None:
    cfg = config(
        {
            "ssl.client.auth": " Required ",
            "allow.everyone.if.no.acl.found": "TRUE",
            "super.users": "User:admin;User:CN=node-1,O=kraftpy",
            "sasl.enabled.mechanisms": "SCRAM-SHA-256, PLAIN",
            "max.connections.per.ip.overrides": "127.0.0.1:5, localhost:0",
        }
    )
    assert cfg.ssl_client_auth == "required"
    assert cfg.allow_everyone_if_no_acl_found is True
    assert cfg.super_users == "User:admin;User:CN=node-1,O=kraftpy"
    assert cfg.sasl_enabled_mechanisms == ["SCRAM-SHA-256", "PLAIN"]
    quotas = connection_quotas(cfg)
    assert quotas.per_ip_overrides == {"127.0.0.1": 5, "localhost": 0}


@pytest.mark.parametrize(
    ("props", "names"),
    [
        ({"ssl.client.auth": "sometimes"}, "ssl.client.auth"),
        ({"max.connections": "-1"}, "max.connections"),
        ({"max.connections.per.ip.overrides": "127.0.0.1"}, "max.connections.per.ip.overrides"),
        ({"security.inter.broker.protocol": "TLS"}, "security.inter.broker.protocol"),
        ({"ssl.enabled.protocols": "TLSv1.1"}, "ssl.enabled.protocols"),
        ({"allow.everyone.if.no.acl.found": "yes"}, "allow.everyone.if.no.acl.found"),
    ],
)
def test_bad_values_name_their_key(props: dict[str, str], names: str) -> None:
    message = config_error(props)
    assert names in message and message.startswith("server.properties: ")


def test_security_protocol_of_a_listener() -> None:
    cfg = config(
        {
            "listeners": "SSL://:9093,INTERNAL://:9094,RPC://:9095,CONTROLLER://:9096",
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "INTERNAL:SASL_SSL,PLAINTEXT:PLAINTEXT",
            "listener.name.ssl.ssl.keystore.location": "/unused.pem",
            "listener.name.internal.ssl.keystore.location": "/unused.pem",
            "ssl.keystore.type": "PEM",
        }
    )
    # A listener named after a protocol is that protocol; controller and RPC listeners default to PLAINTEXT.
    assert cfg.security_protocol_name("SSL") == "SSL" and cfg.security_protocol("SSL") == 1
    assert cfg.security_protocol_name("internal") == "SASL_SSL" and cfg.is_tls("INTERNAL")
    assert cfg.security_protocol_name("RPC") == "PLAINTEXT"
    assert cfg.security_protocol_name("CONTROLLER") == "PLAINTEXT" and not cfg.is_tls("CONTROLLER")
    with pytest.raises(ConfigError, match="listener OTHER has no security protocol mapping"):
        cfg.security_protocol_name("OTHER")


def test_a_tls_listener_needs_a_pem_keystore() -> None:
    listeners = {"listeners": "CONTROLLER://:9093", "listener.security.protocol.map": "CONTROLLER:SSL"}
    assert "listener CONTROLLER is SSL but ssl.keystore.location is not set" in config_error(listeners)
    message = config_error({**listeners, "ssl.keystore.location": "/k.pem"})
    assert "ssl.keystore.type=JKS is not supported for listener CONTROLLER: set it to PEM" in message
    message = config_error(
        {
            **listeners,
            "ssl.keystore.location": "/k.pem",
            "ssl.keystore.type": "PEM",
            "ssl.truststore.location": "/t",
        }
    )
    assert "ssl.truststore.type=JKS" in message
    # SASL_SSL needs one too; PLAINTEXT and SASL_PLAINTEXT do not.
    assert "is SASL_SSL but" in config_error(
        {"listeners": "A://:1", "listener.security.protocol.map": "A:SASL_SSL"}
    )
    config({"listeners": "A://:1", "listener.security.protocol.map": "A:SASL_PLAINTEXT"})


def test_per_listener_settings_override_the_defaults() -> None:
    cfg = config(
        {
            "listeners": "CONTROLLER://:9093,OTHER://:9094",
            "listener.security.protocol.map": "CONTROLLER:SSL,OTHER:PLAINTEXT",
            "ssl.keystore.type": "PEM",
            "listener.name.controller.ssl.keystore.location": "/controller.pem",
            "listener.name.CONTROLLER.ssl.client.auth": "requested",
            "listener.name.controller.max.connections": "7",
            "ssl.client.auth": "required",
        }
    )
    own = cfg.listener_config("controller")
    assert own.ssl_keystore_location == "/controller.pem"
    assert own.ssl_client_auth == "requested" and own.max_connections == 7
    assert cfg.ssl_keystore_location is None and cfg.ssl_client_auth == "required"
    assert cfg.listener_config("OTHER") is cfg
    assert connection_quotas(cfg, "CONTROLLER").max_connections == 7
    # The keystore given only per listener counts, and the message names the key as it was given.
    message = config_error(
        {
            "listeners": "CONTROLLER://:9093",
            "listener.security.protocol.map": "CONTROLLER:SSL",
            "listener.name.controller.ssl.keystore.location": "/k.pem",
            "listener.name.controller.ssl.keystore.type": "JKS",
        }
    )
    assert "listener.name.controller.ssl.keystore.type=JKS is not supported" in message
    assert "listener.name.controller.ssl.client.auth" in config_error(
        {"listener.name.controller.ssl.client.auth": "maybe", "listeners": "CONTROLLER://:1"}
    )


# -- contexts --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("client_auth", "mode"),
    [("none", ssl.CERT_NONE), ("requested", ssl.CERT_OPTIONAL), ("required", ssl.CERT_REQUIRED)],
)
def test_server_context_follows_ssl_client_auth(
    pki: tuple[CaFiles, KeyPair], client_auth: str, mode: ssl.VerifyMode
) -> None:
    _, pair = pki
    cfg = config(ssl_props(pair, ssl_client_auth=client_auth))
    ctx = tls.listener_server_context(cfg, "CONTROLLER")
    assert ctx is not None
    assert ctx.verify_mode == mode
    assert ctx.minimum_version == ssl.TLSVersion.TLSv1_2
    assert ctx.maximum_version == ssl.TLSVersion.TLSv1_3
    if mode != ssl.CERT_NONE:
        assert [c["subject"] for c in ctx.get_ca_certs()] == [
            ((("organizationName", "kraftpy"),), (("commonName", "kraftpy CA"),))
        ]


def test_client_context_checks_the_host_unless_told_not_to(pki: tuple[CaFiles, KeyPair]) -> None:
    _, pair = pki
    ctx = tls.client_context(config(ssl_props(pair)))
    assert ctx.check_hostname and ctx.verify_mode == ssl.CERT_REQUIRED
    ctx = tls.client_context(config(ssl_props(pair, **{"ssl.endpoint.identification.algorithm": ""})))
    assert not ctx.check_hostname and ctx.verify_mode == ssl.CERT_REQUIRED
    with pytest.raises(ConfigError, match=r"ssl\.endpoint\.identification\.algorithm=ldap is not supported"):
        tls.client_context(config(ssl_props(pair, **{"ssl.endpoint.identification.algorithm": "ldap"})))
    only13 = tls.client_context(config(ssl_props(pair, **{"ssl.enabled.protocols": "TLSv1.3"})))
    assert only13.minimum_version == ssl.TLSVersion.TLSv1_3


def test_plaintext_listeners_have_no_context(pki: tuple[CaFiles, KeyPair]) -> None:
    cfg = config({"listeners": "CONTROLLER://:9093", "controller.listener.names": "CONTROLLER"})
    assert tls.listener_server_context(cfg, "CONTROLLER") is None
    assert tls.controller_peer_context(cfg) is None
    assert tls.peer_context(cfg, None) is None
    # A listener the map does not name (another cluster's, during a migration) is dialled plain.
    assert tls.peer_context(cfg, "ZK_BROKERS") is None
    listener = rpc_listener(cfg, "CONTROLLER")
    assert listener.ssl_context is None and listener.security_protocol == "PLAINTEXT"
    assert listener.principal_of({"subject": ((("commonName", "x"),),)}) == "User:ANONYMOUS"
    assert listener.idle_timeout_s == 600.0


def test_peer_contexts_are_shared_until_a_file_changes(pki: tuple[CaFiles, KeyPair], tmp_path: Path) -> None:
    ca, _ = pki
    pair = node_cert(ca, 2, tmp_path)
    cfg = config(ssl_props(pair))
    first = tls.controller_peer_context(cfg)
    assert first is not None and tls.controller_peer_context(cfg) is first
    node_cert(ca, 2, tmp_path)  # a new key and certificate in the same file
    assert tls.controller_peer_context(cfg) is not first


def test_rpc_listener_serves_ssl_and_refuses_sasl(pki: tuple[CaFiles, KeyPair]) -> None:
    _, pair = pki
    listener = rpc_listener(config(ssl_props(pair, ssl_client_auth="required")), "controller")
    assert listener.name == "CONTROLLER" and listener.security_protocol == "SSL"
    assert listener.ssl_context is not None and listener.ssl_context.verify_mode == ssl.CERT_REQUIRED
    subject = ((("organizationName", "kraftpy"),), (("commonName", "node-1"),))
    assert listener.principal_of({"subject": subject}) == "User:CN=node-1,O=kraftpy"
    assert listener.principal_of(None) == "User:ANONYMOUS"
    sasl = config({**ssl_props(pair), "listener.security.protocol.map": "CONTROLLER:SASL_SSL"})
    with pytest.raises(ConfigError, match="SASL is not served on the HTTP RPC listeners"):
        rpc_listener(sasl, "CONTROLLER")


def test_principal_mapping_rules_apply_and_a_bad_rule_is_a_config_error(pki: tuple[CaFiles, KeyPair]) -> None:
    _, pair = pki
    rules = "RULE:^CN=([^,]+),O=kraftpy$/$1/U"
    principal_of = tls.principal_builder(config(ssl_props(pair, **{"ssl.principal.mapping.rules": rules})))
    assert principal_of({"subject": ((("organizationName", "kraftpy"),), (("commonName", "node-1"),))}) == (
        "User:NODE-1"
    )
    with pytest.raises(ValueError):  # no rule maps it: the connection is refused
        principal_of({"subject": ((("commonName", "stranger"),),)})
    with pytest.raises(ConfigError, match=r"ssl\.principal\.mapping\.rules"):
        tls.principal_builder(config(ssl_props(pair, **{"ssl.principal.mapping.rules": "RULE:(/x/"})))


# -- files that cannot be used ---------------------------------------------------------------------


def _context_error(props: Mapping[str, str], client: bool = False) -> str:
    cfg = config(props)
    with pytest.raises(ConfigError) as e:
        tls.client_context(cfg) if client else tls.server_context(cfg, "CONTROLLER")
    assert e.value.__cause__ is None and (e.value.__context__ is None or e.value.__suppress_context__)
    message = str(e.value)
    assert message.startswith("server.properties: ") and "Traceback" not in message
    return message


def test_missing_and_unreadable_files(pki: tuple[CaFiles, KeyPair], tmp_path: Path) -> None:
    _, pair = pki
    missing = tmp_path / "nope.pem"
    message = _context_error({**ssl_props(pair), "ssl.keystore.location": str(missing)})
    assert f"cannot read ssl.keystore.location={missing}: No such file or directory" in message
    message = _context_error(
        {**ssl_props(pair, ssl_client_auth="required"), "ssl.truststore.location": str(missing)}
    )
    assert f"cannot read ssl.truststore.location={missing}" in message
    message = _context_error({**ssl_props(pair), "ssl.keystore.location": str(tmp_path)})
    assert "cannot read ssl.keystore.location" in message


def test_files_that_do_not_parse(pki: tuple[CaFiles, KeyPair], tmp_path: Path) -> None:
    ca, pair = pki
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a pem file\n")
    assert "holds no PEM private key" in _context_error(
        {**ssl_props(pair), "ssl.keystore.location": str(garbage)}
    )
    assert "ssl.truststore.location" in _context_error(
        {**ssl_props(pair), "ssl.truststore.location": str(garbage)}, client=True
    )
    cert_only = tmp_path / "cert-only.pem"
    cert_only.write_bytes(pair.cert.read_bytes())
    assert "holds no PEM private key" in _context_error(
        {**ssl_props(pair), "ssl.keystore.location": str(cert_only)}
    )
    text = pair.keystore.read_text()
    key_only = tmp_path / "key-only.pem"
    key_only.write_text(text[: text.index("-----BEGIN CERTIFICATE")])
    assert "holds no PEM certificate" in _context_error(
        {**ssl_props(pair), "ssl.keystore.location": str(key_only)}
    )
    broken = tmp_path / "broken-key.pem"
    broken.write_text(text.replace(text.splitlines()[1], "A" * 64, 1))
    assert "it does not parse" in _context_error({**ssl_props(pair), "ssl.keystore.location": str(broken)})
    # Another pair's key in front of this certificate.
    other = node_cert(ca, 9, tmp_path / "other")
    other_text = other.keystore.read_text()
    mixed = tmp_path / "mixed.pem"
    mixed.write_text(other_text[: other_text.index("-----BEGIN CERTIFICATE")] + pair.cert.read_text())
    assert "the private key does not belong to the first certificate" in _context_error(
        {**ssl_props(pair), "ssl.keystore.location": str(mixed)}
    )


def test_an_encrypted_key_needs_its_password(pki: tuple[CaFiles, KeyPair], tmp_path: Path) -> None:
    ca, _ = pki
    locked = issue(ca, "locked", ["127.0.0.1"], tmp_path, key_password="s3cret")
    assert "ENCRYPTED PRIVATE KEY" in locked.keystore.read_text()
    props = ssl_props(locked)
    assert "is encrypted: set ssl.key.password" in _context_error(props)
    assert "ssl.key.password does not decrypt it" in _context_error({**props, "ssl.key.password": "wrong"})
    ctx = tls.server_context(config({**props, "ssl.key.password": "s3cret"}), "CONTROLLER")
    assert ctx.verify_mode == ssl.CERT_NONE


def test_a_non_pem_store_type_is_refused_when_a_context_is_built(pki: tuple[CaFiles, KeyPair]) -> None:
    _, pair = pki
    # Client side: no listener of this node is TLS, so the config check let it through.
    cfg = config(
        {"ssl.keystore.location": str(pair.keystore), "ssl.truststore.location": str(pair.truststore)}
    )
    with pytest.raises(ConfigError, match=r"ssl\.truststore\.type=JKS is not supported: set it to PEM"):
        tls.client_context(cfg)
    cfg = config({"ssl.keystore.location": str(pair.keystore)})
    with pytest.raises(ConfigError, match=r"ssl\.keystore\.type=JKS is not supported: set it to PEM"):
        tls.server_context(cfg)


@pytest.mark.parametrize(
    ("own", "mode"),
    [(None, ssl.CERT_NONE), ("required", ssl.CERT_REQUIRED), ("requested", ssl.CERT_OPTIONAL)],
)
def test_sasl_ssl_asks_for_a_certificate_only_when_its_own_setting_says_so(
    pki: tuple[CaFiles, KeyPair], own: str | None, mode: ssl.VerifyMode
) -> None:
    # KIP-684: the broker-wide ssl.client.auth=required is for SSL listeners
    _, pair = pki
    props = ssl_props(pair, ssl_client_auth="required")
    props["listeners"] += ",SASL_SSL://127.0.0.1:9094"
    props["listener.security.protocol.map"] += ",SASL_SSL:SASL_SSL"
    if own is not None:
        props["listener.name.sasl_ssl.ssl.client.auth"] = own
    cfg = config(props)
    assert tls.server_context(cfg, "SASL_SSL").verify_mode == mode
    assert tls.server_context(cfg, "CONTROLLER").verify_mode == ssl.CERT_REQUIRED
