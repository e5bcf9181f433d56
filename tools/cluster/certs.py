"""A private CA and the certificates a TLS cluster runs with, as PEM files Kafka's PEM keystores take.

`create_ca(dir)` makes the CA; `issue(ca, name, sans, dir)` a key and certificate signed by it, for
a node (`node_cert`: CN=node-<id>, SANs 127.0.0.1, localhost and the hosts given) or a client
(`client_cert`). Each holder gets three files:

    <name>.keystore.pem    private key (PKCS#8) then certificate chain: ssl.keystore.location
    <name>.pem             the certificate chain alone
    ca.pem                 (in the CA's dir) the CA certificate: ssl.truststore.location

Private keys are secrets: every file is written owner-only (0600) in an owner-only dir (0700), through
a temporary file renamed into place, so a reader never sees half a key and a crash leaves the old one.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

ORGANIZATION = "kraftpy"
CA_DAYS = 3650
CERT_DAYS = 825
"""The longest leaf lifetime common TLS clients accept."""

_BACKDATE = datetime.timedelta(minutes=5)
"""Certificates start a little in the past, so a peer whose clock is slightly behind accepts them."""


@dataclass(frozen=True)
class CaFiles:
    cert: Path
    """ca.pem: what every node trusts (ssl.truststore.location)."""
    key: Path
    """ca.key.pem: signs certificates; stays with the operator."""


@dataclass(frozen=True)
class KeyPair:
    keystore: Path
    """Private key and certificate chain in one file (ssl.keystore.location, ssl.keystore.type=PEM)."""
    cert: Path
    """The certificate chain alone."""
    truststore: Path
    """The issuing CA's certificate (ssl.truststore.location)."""


def create_ca(dir: Path | str, common_name: str = "kraftpy CA", *, days: int = CA_DAYS) -> CaFiles:
    """A new self-signed CA in `dir` (created owner-only); replaces one that is there."""
    out = _private_dir(dir)
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, ORGANIZATION),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _BACKDATE)
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    files = CaFiles(cert=out / "ca.pem", key=out / "ca.key.pem")
    # The key first: a CA certificate without its key could not issue anything.
    write_private(files.key, _key_pem(key, None))
    write_private(files.cert, cert.public_bytes(serialization.Encoding.PEM))
    return files


def load_ca(dir: Path | str) -> CaFiles:
    """The CA create_ca left in `dir`; FileNotFoundError naming the missing file."""
    files = CaFiles(cert=Path(dir) / "ca.pem", key=Path(dir) / "ca.key.pem")
    for path in (files.cert, files.key):
        if not path.is_file():
            raise FileNotFoundError(f"no CA file {path}: create the CA first")
    return files


def issue(
    ca: CaFiles,
    name: str,
    sans: Sequence[str],
    dir: Path | str,
    *,
    days: int = CERT_DAYS,
    server: bool = True,
    client: bool = True,
    key_password: str | None = None,
) -> KeyPair:
    """A key and a certificate for CN=`name`, signed by `ca`, written to `dir` as `<name>.keystore.pem`
    and `<name>.pem`. `sans`: host names and IP addresses the certificate is valid for (what a client
    checks with ssl.endpoint.identification.algorithm=https). `server`/`client`: the extended key
    usages (a node is both: it serves and dials its peers). `key_password` encrypts the private key
    (then give it as ssl.key.password)."""
    out = _private_dir(dir)
    ca_key = serialization.load_pem_private_key(ca.key.read_bytes(), password=None)
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey):
        raise ValueError(f"{ca.key} is not a CA key create_ca wrote")
    ca_cert = x509.load_pem_x509_certificate(ca.cert.read_bytes())
    key = ec.generate_private_key(ec.SECP256R1())
    usages = [ExtendedKeyUsageOID.SERVER_AUTH] * server + [ExtendedKeyUsageOID.CLIENT_AUTH] * client
    if not usages:
        raise ValueError("a certificate must be for a server, a client or both")
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(
            x509.Name(
                [
                    x509.NameAttribute(NameOID.ORGANIZATION_NAME, ORGANIZATION),
                    x509.NameAttribute(NameOID.COMMON_NAME, name),
                ]
            )
        )
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _BACKDATE)
        .not_valid_after(min(now + datetime.timedelta(days=days), ca_cert.not_valid_after_utc))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
    )
    names = subject_alt_names(sans)
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    cert = builder.sign(ca_key, hashes.SHA256())
    cert_pem = cert.public_bytes(serialization.Encoding.PEM)
    pair = KeyPair(keystore=out / f"{name}.keystore.pem", cert=out / f"{name}.pem", truststore=ca.cert)
    write_private(pair.keystore, _key_pem(key, key_password) + cert_pem)
    write_private(pair.cert, cert_pem)
    return pair


def node_cert(ca: CaFiles, node_id: int, dir: Path | str, hosts: Sequence[str] = ()) -> KeyPair:
    """A node's certificate: CN=node-<id>, valid for 127.0.0.1, localhost and `hosts`."""
    sans = list(dict.fromkeys(["127.0.0.1", "localhost", *hosts]))
    return issue(ca, f"node-{node_id}", sans, dir)


def client_cert(ca: CaFiles, name: str, dir: Path | str) -> KeyPair:
    """A client's certificate (an operator's tool, a test): CN=`name`, client authentication only."""
    return issue(ca, name, [], dir, server=False)


def subject_alt_names(sans: Sequence[str]) -> list[x509.GeneralName]:
    """IP addresses as IP SANs, anything else as DNS names."""
    out: list[x509.GeneralName] = []
    for san in sans:
        try:
            out.append(x509.IPAddress(ipaddress.ip_address(san.strip("[]"))))
        except ValueError:
            out.append(x509.DNSName(san))
    return out


def _key_pem(key: ec.EllipticCurvePrivateKey, password: str | None) -> bytes:
    # PKCS#8: the only private key encoding Kafka's PEM keystore reads.
    encryption: serialization.KeySerializationEncryption = (
        serialization.BestAvailableEncryption(password.encode()) if password else serialization.NoEncryption()
    )
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)


def _private_dir(dir: Path | str) -> Path:
    path = Path(dir)
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    # mkdir leaves an existing dir as it was, and the umask may have widened a new one.
    os.chmod(path, 0o700)
    return path


def write_private(path: Path, data: bytes) -> None:
    """Write `data` to `path` owner-only (0600), atomically: a temporary file in the same dir, synced
    and renamed over `path`."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            # mkstemp creates 0600 already; said again so the mode does not rest on that.
            os.fchmod(f.fileno(), 0o600)
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
