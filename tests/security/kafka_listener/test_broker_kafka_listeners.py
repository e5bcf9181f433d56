"""A broker's Kafka listeners built from its config (broker.kafka_listeners): the security protocol
from listener.security.protocol.map, TLS from ssl.*, SCRAM from sasl.enabled.mechanisms against the
credentials of the metadata image, per-listener overrides, and librdkafka authenticating through it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest

from broker.kafka_listeners import image_scram_lookup, kafka_listener
from kraftpy.config import ConfigError, KafkaConfig
from kraftpy.image import MetadataImage
from kraftpy.image.opaque import RecordStoreImage
from kraftpy.security.acl import ScramMechanism
from kraftpy.security.scram import credential_record, new_credential
from protocol.rpc.metadata import MetadataRequest, MetadataResponse
from protocol.transport import create_app
from protocol.transport.connection_quotas import ConnectionQuotas
from protocol.transport.context import current_request
from protocol.transport.kafka_server import KafkaListener
from tests.security.kafka_listener.fixtures import Certs, librdkafka_metadata
from tests.security.kafka_listener.fixtures import certs as certs  # the fixture, by its name


def config(certs: Certs, **extra: str) -> KafkaConfig:
    props = {
        "process.roles": "broker",
        "node.id": "1",
        "listeners": "RPC://127.0.0.1:0,CLIENT://127.0.0.1:0,SECURE://127.0.0.1:0",
        "listener.security.protocol.map": "RPC:PLAINTEXT,CLIENT:SASL_SSL,SECURE:SSL,CONTROLLER:PLAINTEXT",
        "controller.listener.names": "CONTROLLER",
        "controller.quorum.voters": "9@127.0.0.1:9093",
        "log.dirs": "/tmp/unused",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(certs.server),
        "sasl.enabled.mechanisms": "SCRAM-SHA-512,SCRAM-SHA-256",
        **extra,
    }
    return KafkaConfig.from_properties(props)


def image_with(*users: tuple[str, ScramMechanism, str]) -> MetadataImage:
    records: dict[Any, Any] = {}
    for name, mechanism, password in users:
        rec = credential_record(name, mechanism, new_credential(mechanism, password))
        records[(rec.Name, rec.Mechanism)] = rec
    return MetadataImage(scram=RecordStoreImage(MappingProxyType(records)))


class Broker:
    """The part of a broker these listeners need: an app with Metadata, and the image."""

    def __init__(self) -> None:
        self.image: MetadataImage | None = None
        self.principals: list[str] = []
        self.port = 0

        async def metadata(req: MetadataRequest, version: int) -> MetadataResponse:
            self.principals.append(current_request().principal)
            return MetadataResponse(
                Brokers=[MetadataResponse.MetadataResponseBroker(NodeId=1, Host="127.0.0.1", Port=self.port)],
                ClusterId="c",
                ControllerId=1,
            )

        self.app = create_app({"Metadata": metadata})


@pytest.fixture
async def listeners() -> AsyncIterator[list[KafkaListener]]:
    out: list[KafkaListener] = []
    yield out
    for listener in out:
        await listener.stop()


async def serve(cfg: KafkaConfig, name: str, broker: Broker, listeners: list[KafkaListener]) -> KafkaListener:
    spec = next(s for s in cfg.kafka_listeners if s.name == name)
    listener = kafka_listener(cfg, spec, broker.app, ("Metadata",), lambda: broker.image, ConnectionQuotas())
    listeners.append(listener)
    broker.port = await listener.start("127.0.0.1", 0)
    return listener


def sasl_ssl(broker: Broker, certs: Certs, mechanism: str, user: str, password: str) -> dict[str, Any]:
    """librdkafka's settings to log in to `broker` with SASL_SSL."""
    return {
        "bootstrap.servers": f"127.0.0.1:{broker.port}",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": mechanism,
        "sasl.username": user,
        "sasl.password": password,
        "ssl.ca.location": str(certs.ca),
    }


def test_the_image_lookup_finds_a_user_by_mechanism() -> None:
    image = image_with(("alice", ScramMechanism.SCRAM_SHA_256, "pw"))
    lookup = image_scram_lookup(lambda: image)
    found = lookup("SCRAM-SHA-256", "alice")
    assert found is not None and found[3] == 4096 and len(found[1]) == 32
    assert lookup("SCRAM-SHA-512", "alice") is None
    assert lookup("SCRAM-SHA-256", "bob") is None
    assert lookup("PLAIN", "alice") is None
    assert image_scram_lookup(lambda: None)("SCRAM-SHA-256", "alice") is None


def test_listeners_take_their_protocol_and_settings_from_the_config(certs: Certs) -> None:
    cfg = config(
        certs, **{"listener.name.client.connections.max.idle.ms": "-1", "connections.max.idle.ms": "5000"}
    )
    by_name = {s.name: s for s in cfg.kafka_listeners}
    app = create_app({})
    client = kafka_listener(cfg, by_name["CLIENT"], app, (), lambda: None, None)
    secure = kafka_listener(cfg, by_name["SECURE"], app, (), lambda: None, None)
    assert (client.security_protocol, client.sasl_mechanisms) == (
        "SASL_SSL",
        ("SCRAM-SHA-512", "SCRAM-SHA-256"),
    )
    assert client.ssl_context is not None and client.idle_timeout_s is None
    assert (secure.security_protocol, secure.sasl_mechanisms, secure.idle_timeout_s) == ("SSL", (), 5.0)


def test_a_sasl_listener_without_scram_enabled_does_not_start(certs: Certs) -> None:
    cfg = config(certs, **{"sasl.enabled.mechanisms": "GSSAPI"})
    spec = next(s for s in cfg.kafka_listeners if s.name == "CLIENT")
    with pytest.raises(ConfigError, match="GSSAPI"):
        kafka_listener(cfg, spec, create_app({}), (), lambda: None, None)
    cfg = config(
        certs,
        **{
            "sasl.enabled.mechanisms": "GSSAPI",
            "listener.name.client.sasl.enabled.mechanisms": "SCRAM-SHA-256",
        },
    )
    assert kafka_listener(cfg, spec, create_app({}), (), lambda: None, None).sasl_mechanisms == (
        "SCRAM-SHA-256",
    )


async def test_librdkafka_authenticates_against_the_images_credentials(
    certs: Certs, listeners: list[KafkaListener]
) -> None:
    pytest.importorskip("confluent_kafka")
    cfg = config(certs)
    broker = Broker()
    await serve(cfg, "CLIENT", broker, listeners)
    conf = sasl_ssl(broker, certs, "SCRAM-SHA-512", "alice", "alice-secret")
    # no credential yet: refused
    topics, _ = await asyncio.to_thread(librdkafka_metadata, conf, 3)
    assert topics is None
    broker.image = image_with(("alice", ScramMechanism.SCRAM_SHA_512, "alice-secret"))
    topics, errors = await asyncio.to_thread(librdkafka_metadata, conf, 15)
    assert topics == [], errors
    assert set(broker.principals) == {"User:alice"}
    # the credential changed in the image: the old password no longer works
    broker.image = image_with(("alice", ScramMechanism.SCRAM_SHA_512, "rotated"))
    topics, _ = await asyncio.to_thread(librdkafka_metadata, conf, 3)
    assert topics is None


PLAIN_JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="admin-secret" user_alice="alice-secret" user_bob="bob;secret";'
)


def test_a_plain_listener_needs_its_users_in_its_jaas_config(certs: Certs) -> None:
    plain = {"listener.name.client.sasl.enabled.mechanisms": "PLAIN"}
    cfg = config(certs, **plain)
    spec = next(s for s in cfg.kafka_listeners if s.name == "CLIENT")
    with pytest.raises(ConfigError, match=r"listener\.name\.client\.plain\.sasl\.jaas\.config is not set"):
        kafka_listener(cfg, spec, create_app({}), (), lambda: None, None)
    bad = config(
        certs, **plain, **{"listener.name.client.plain.sasl.jaas.config": "PlainLoginModule required"}
    )
    with pytest.raises(ConfigError, match=r"plain\.sasl\.jaas\.config: JAAS config must end with ';'"):
        kafka_listener(bad, spec, create_app({}), (), lambda: None, None)
    nobody = config(
        certs,
        **plain,
        **{
            "listener.name.client.plain.sasl.jaas.config": (
                'org.apache.kafka.common.security.plain.PlainLoginModule required username="a" password="b";'
            )
        },
    )
    with pytest.raises(ConfigError, match="names no user"):
        kafka_listener(nobody, spec, create_app({}), (), lambda: None, None)
    good = config(certs, **plain, **{"listener.name.client.plain.sasl.jaas.config": PLAIN_JAAS})
    listener = kafka_listener(good, spec, create_app({}), (), lambda: None, None)
    assert listener.sasl_mechanisms == ("PLAIN",) and listener.plain_check is not None
    assert listener.plain_check("bob", "bob;secret") and not listener.plain_check("alice", "bob;secret")


def test_a_jaas_config_key_is_not_an_unknown_key(certs: Certs) -> None:
    from structlog.testing import capture_logs

    with capture_logs() as logs:
        cfg = config(certs, **{"listener.name.client.plain.sasl.jaas.config": PLAIN_JAAS})
    assert not [e for e in logs if e["event"] == "unknown config key ignored"]
    assert cfg.sasl_jaas_config("client", "plain") == (
        "listener.name.client.plain.sasl.jaas.config",
        PLAIN_JAAS,
    )
    assert cfg.sasl_jaas_config("CLIENT", "SCRAM-SHA-256") is None


async def test_librdkafka_and_kafka_python_log_in_with_plain(
    certs: Certs, listeners: list[KafkaListener]
) -> None:
    pytest.importorskip("confluent_kafka")
    kafka = pytest.importorskip("kafka")
    cfg = config(
        certs,
        **{
            "listener.name.client.sasl.enabled.mechanisms": "SCRAM-SHA-512,PLAIN",
            "listener.name.client.plain.sasl.jaas.config": PLAIN_JAAS,
        },
    )
    broker = Broker()
    await serve(cfg, "CLIENT", broker, listeners)
    conf = sasl_ssl(broker, certs, "PLAIN", "bob", "bob;secret")
    topics, errors = await asyncio.to_thread(librdkafka_metadata, conf, 15)
    assert topics == [], errors
    assert set(broker.principals) == {"User:bob"}
    topics, _ = await asyncio.to_thread(librdkafka_metadata, {**conf, "sasl.password": "wrong"}, 3)
    assert topics is None

    def kafka_python_topics(password: str, bootstrap_ms: int) -> set[str] | str:
        try:
            admin = kafka.KafkaAdminClient(
                bootstrap_servers=f"127.0.0.1:{broker.port}",
                security_protocol="SASL_SSL",
                ssl_cafile=str(certs.ca),
                ssl_check_hostname=False,
                sasl_mechanism="PLAIN",
                sasl_plain_username="alice",
                sasl_plain_password=password,
                request_timeout_ms=10000,
                bootstrap_timeout_ms=bootstrap_ms,  # a refused login is retried until this is up
            )
        except Exception as e:  # kafka-python raises at connect when the login is refused
            return type(e).__name__
        try:
            return set(admin.list_topics())
        finally:
            admin.close()

    assert await asyncio.to_thread(kafka_python_topics, "alice-secret", 30000) == set()
    assert "User:alice" in broker.principals
    refused = await asyncio.to_thread(kafka_python_topics, "nope", 5000)
    assert isinstance(refused, str), refused


async def test_an_ssl_listener_names_clients_by_their_certificate(
    certs: Certs, listeners: list[KafkaListener], tmp_path: Path
) -> None:
    pytest.importorskip("confluent_kafka")
    cfg = config(
        certs,
        **{
            "listener.name.secure.ssl.client.auth": "required",
            "listener.name.secure.ssl.truststore.type": "PEM",
            "listener.name.secure.ssl.truststore.location": str(certs.ca),
        },
    )
    broker = Broker()
    await serve(cfg, "SECURE", broker, listeners)
    conf = {
        "bootstrap.servers": f"127.0.0.1:{broker.port}",
        "security.protocol": "SSL",
        "ssl.ca.location": str(certs.ca),
        "ssl.certificate.location": str(certs.client_cert),
        "ssl.key.location": str(certs.client_key),
    }
    topics, errors = await asyncio.to_thread(librdkafka_metadata, conf, 15)
    assert topics == [], errors
    assert set(broker.principals) == {"User:CN=client,O=kraftpy"}
    # without a certificate the handshake fails (ssl.client.auth=required)
    no_cert = {k: v for k, v in conf.items() if not k.startswith(("ssl.certificate", "ssl.key"))}
    topics, _ = await asyncio.to_thread(librdkafka_metadata, no_cert, 3)
    assert topics is None
