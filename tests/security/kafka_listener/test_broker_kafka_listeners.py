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
    conf = {
        "bootstrap.servers": f"127.0.0.1:{broker.port}",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "alice",
        "sasl.password": "alice-secret",
        "ssl.ca.location": str(certs.ca),
    }
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
