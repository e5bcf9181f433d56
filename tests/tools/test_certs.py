"""tools.cluster.certs: a CA and node/client certificates as PEM files, owner-only and written atomically."""

from __future__ import annotations

import ipaddress
import os
import ssl
import stat
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from tools.cluster import certs


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_every_file_is_owner_only_and_no_temporary_file_is_left(tmp_path: Path) -> None:
    # A permissive umask: the modes must not rest on the caller's.
    old = os.umask(0o002)
    try:
        ca = certs.create_ca(tmp_path / "ca")
        pair = certs.node_cert(ca, 1, tmp_path / "node-1")
        client = certs.client_cert(ca, "admin", tmp_path / "clients")
    finally:
        os.umask(old)
    for d in (tmp_path / "ca", tmp_path / "node-1", tmp_path / "clients"):
        assert mode(d) == 0o700
        assert sorted(p.name for p in d.iterdir() if p.name.startswith(".")) == []
    for f in (ca.cert, ca.key, pair.keystore, pair.cert, client.keystore, client.cert):
        assert mode(f) == 0o600, f
    assert pair.truststore == ca.cert == client.truststore
    assert sorted(p.name for p in (tmp_path / "node-1").iterdir()) == ["node-1.keystore.pem", "node-1.pem"]


def test_an_existing_dir_is_made_owner_only(tmp_path: Path) -> None:
    d = tmp_path / "open"
    d.mkdir(mode=0o755)
    certs.create_ca(d)
    assert mode(d) == 0o700


def test_node_certificate_names_and_uses(tmp_path: Path) -> None:
    ca = certs.create_ca(tmp_path / "ca")
    pair = certs.node_cert(ca, 3, tmp_path / "n3", hosts=["broker-3.example", "10.0.0.3", "localhost"])
    cert = x509.load_pem_x509_certificate(pair.cert.read_bytes())
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "node-3"
    assert cert.subject.rfc4514_string() == "CN=node-3,O=kraftpy"
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["localhost", "broker-3.example"]
    assert san.get_values_for_type(x509.IPAddress) == [
        ipaddress.ip_address("127.0.0.1"),
        ipaddress.ip_address("10.0.0.3"),
    ]
    usages = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert set(usages) == {ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH}
    assert not cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    # Signed by the CA.
    ca_cert = x509.load_pem_x509_certificate(ca.cert.read_bytes())
    assert cert.issuer == ca_cert.subject
    public = ca_cert.public_key()
    assert isinstance(public, ec.EllipticCurvePublicKey)
    public.verify(cert.signature, cert.tbs_certificate_bytes, ec.ECDSA(cert.signature_hash_algorithm))  # type: ignore[arg-type]
    assert cert.not_valid_after_utc <= ca_cert.not_valid_after_utc


def test_client_certificate_is_for_clients_only(tmp_path: Path) -> None:
    ca = certs.create_ca(tmp_path / "ca")
    cert = x509.load_pem_x509_certificate(certs.client_cert(ca, "alice", tmp_path).cert.read_bytes())
    assert cert.subject.rfc4514_string() == "CN=alice,O=kraftpy"
    assert list(cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value) == [
        ExtendedKeyUsageOID.CLIENT_AUTH
    ]
    with pytest.raises(x509.ExtensionNotFound):
        cert.extensions.get_extension_for_class(x509.SubjectAlternativeName)


def test_keystore_is_a_pkcs8_key_then_the_chain_and_loads_into_python_ssl(tmp_path: Path) -> None:
    ca = certs.create_ca(tmp_path / "ca")
    pair = certs.node_cert(ca, 1, tmp_path / "n1")
    text = pair.keystore.read_text()
    assert text.startswith("-----BEGIN PRIVATE KEY-----")
    assert text.index("-----END PRIVATE KEY-----") < text.index("-----BEGIN CERTIFICATE-----")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(pair.keystore)
    ctx.load_verify_locations(cafile=pair.truststore)
    locked = certs.issue(ca, "locked", ["127.0.0.1"], tmp_path / "locked", key_password="pw")
    assert locked.keystore.read_text().startswith("-----BEGIN ENCRYPTED PRIVATE KEY-----")
    ctx.load_cert_chain(locked.keystore, password="pw")


def test_issuing_again_replaces_the_files(tmp_path: Path) -> None:
    ca = certs.create_ca(tmp_path / "ca")
    first = certs.node_cert(ca, 1, tmp_path / "n1")
    before = first.keystore.read_bytes()
    again = certs.node_cert(ca, 1, tmp_path / "n1")
    assert again == first and again.keystore.read_bytes() != before
    assert mode(again.keystore) == 0o600


def test_load_ca_finds_what_create_ca_wrote(tmp_path: Path) -> None:
    made = certs.create_ca(tmp_path / "ca")
    assert certs.load_ca(tmp_path / "ca") == made
    with pytest.raises(FileNotFoundError, match="create the CA first"):
        certs.load_ca(tmp_path / "elsewhere")


def test_subject_alt_names_tell_addresses_from_names() -> None:
    names = certs.subject_alt_names(["::1", "[fe80::1]", "host.local", "192.168.0.1"])
    assert names == [
        x509.IPAddress(ipaddress.ip_address("::1")),
        x509.IPAddress(ipaddress.ip_address("fe80::1")),
        x509.DNSName("host.local"),
        x509.IPAddress(ipaddress.ip_address("192.168.0.1")),
    ]


def test_a_failed_write_leaves_the_old_file_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "secret.pem"
    certs.write_private(target, b"old")

    def broken_replace(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(certs.os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        certs.write_private(target, b"new")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["secret.pem"]
