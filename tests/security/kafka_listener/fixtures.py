"""Certificates and a librdkafka metadata call for the listener security tests."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

# ---- certificates -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Certs:
    ca: Path
    server: Path
    """Key and chain in one PEM, as ssl.keystore.location holds them."""
    client_cert: Path
    client_key: Path


def subject(cn: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "kraftpy"),
            x509.NameAttribute(NameOID.COMMON_NAME, cn),
        ]
    )


def issue_cert(
    subject: x509.Name,
    key: ec.EllipticCurvePrivateKey,
    issuer: x509.Name,
    signer: ec.EllipticCurvePrivateKey,
    ca: bool,
) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if not ca:
        builder = builder.add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
    return builder.sign(signer, hashes.SHA256())


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    d = tmp_path_factory.mktemp("certs")
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kraftpy test CA")])
    ca = issue_cert(ca_name, ca_key, ca_name, ca_key, ca=True)
    (d / "ca.pem").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    server_key = ec.generate_private_key(ec.SECP256R1())
    server = issue_cert(subject("broker"), server_key, ca_name, ca_key, ca=False)
    (d / "server.pem").write_bytes(_pem_key(server_key) + server.public_bytes(serialization.Encoding.PEM))
    client_key = ec.generate_private_key(ec.SECP256R1())
    client = issue_cert(subject("client"), client_key, ca_name, ca_key, ca=False)
    (d / "client.pem").write_bytes(client.public_bytes(serialization.Encoding.PEM))
    (d / "client.key").write_bytes(_pem_key(client_key))
    return Certs(d / "ca.pem", d / "server.pem", d / "client.pem", d / "client.key")


def server_context(certs: Certs, client_auth: ssl.VerifyMode = ssl.CERT_NONE) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(certs.server)
    ctx.verify_mode = client_auth
    if client_auth != ssl.CERT_NONE:
        ctx.load_verify_locations(certs.ca)
    return ctx


# ---- librdkafka ---------------------------------------------------------------------------------


def librdkafka_metadata(conf: dict[str, Any], timeout: float) -> tuple[list[str] | None, list[Any]]:
    """Topic names as librdkafka's metadata call lists them (None when it failed), and the errors
    its error callback reported."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    errors: list[Any] = []
    admin = AdminClient({**conf, "error_cb": errors.append, "reconnect.backoff.ms": 500})
    try:
        return sorted(admin.list_topics(timeout=timeout).topics), errors
    except KafkaException as e:
        errors.append(e.args[0])
        admin.poll(1)  # error callbacks are served by poll
        return None, errors
