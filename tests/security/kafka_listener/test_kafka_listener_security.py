"""The Kafka-protocol listener with SSL, SASL_PLAINTEXT and SASL_SSL (SCRAM), driven by real clients:
librdkafka (confluent-kafka) and kcat with the right and a wrong password, and raw sockets for what
clients never do (requests before authentication, trickled frames, idle connections, floods)."""

from __future__ import annotations

import asyncio
import json
import shutil
import ssl
import struct
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import scramp
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from kraftpy.security.acl import ScramMechanism
from kraftpy.security.scram import new_credential
from protocol.errors import Errors
from protocol.rpc import API_SPECS
from protocol.rpc.api_versions import ApiVersionsRequest
from protocol.rpc.metadata import MetadataRequest, MetadataResponse
from protocol.rpc.sasl_authenticate import SaslAuthenticateRequest, SaslAuthenticateResponse
from protocol.rpc.sasl_handshake import SaslHandshakeRequest, SaslHandshakeResponse
from protocol.transport import create_app
from protocol.transport.connection_quotas import ConnectionQuotas
from protocol.transport.context import current_request
from protocol.transport.kafka_server import KafkaListener
from protocol.wire.codec import wire_api
from tests.conftest import require_real
from tests.security.kafka_listener.fixtures import Certs, issue_cert, librdkafka_metadata, server_context
from tests.security.kafka_listener.fixtures import certs as certs  # the fixture, by its name

PASSWORD = "alice-secret"
CREDENTIALS = {
    (m.mechanism_name, "alice"): new_credential(m, PASSWORD)
    for m in (ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512)
}
MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")


def lookup(mechanism: str, user: str) -> tuple[bytes, bytes, bytes, int] | None:
    c = CREDENTIALS.get((mechanism, user))
    return None if c is None else (c.salt, c.stored_key, c.server_key, c.iterations)


# ---- a listener with a Metadata stub ------------------------------------------------------------


@dataclass
class Served:
    listener: KafkaListener
    port: int
    principals: list[str] = field(default_factory=list)
    """The principal of every Metadata request, as handlers see it."""
    protocols: list[str] = field(default_factory=list)


@pytest.fixture
async def listeners() -> AsyncIterator[list[KafkaListener]]:
    out: list[KafkaListener] = []
    yield out
    for listener in out:
        await listener.stop()


async def start(listeners: list[KafkaListener], security_protocol: str, **kwargs: Any) -> Served:
    served: Served | None = None

    async def metadata(req: MetadataRequest, version: int) -> MetadataResponse:
        assert served is not None
        ctx = current_request()
        served.principals.append(ctx.principal)
        served.protocols.append(ctx.security_protocol)
        part = MetadataResponse.MetadataResponsePartition(
            PartitionIndex=0, LeaderId=1, ReplicaNodes=[1], IsrNodes=[1]
        )
        return MetadataResponse(
            Brokers=[MetadataResponse.MetadataResponseBroker(NodeId=1, Host="127.0.0.1", Port=served.port)],
            ClusterId="sec-test",
            ControllerId=1,
            Topics=[MetadataResponse.MetadataResponseTopic(Name="orders", Partitions=[part])],
        )

    app = create_app({"Metadata": metadata})
    listener = KafkaListener(
        app, security_protocol, ("Metadata",), security_protocol=security_protocol, **kwargs
    )
    listeners.append(listener)
    served = Served(listener, await listener.start("127.0.0.1", 0))
    return served


# ---- raw requests -------------------------------------------------------------------------------


def request(name: str, msg: Any, version: int, correlation: int) -> bytes:
    spec = API_SPECS[name]
    api = wire_api(spec, spec.min_version, spec.max_version)
    body = bytearray()
    api.encode_request(msg, version, body)
    header = struct.pack(">hhih", spec.api_key, version, correlation, 1) + b"t"
    if api.flexible(version):
        header += b"\x00"
    return struct.pack(">i", len(header) + len(body)) + header + bytes(body)


async def answer(reader: asyncio.StreamReader, name: str, version: int) -> Any:
    (size,) = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), 5))
    data = await reader.readexactly(size)
    spec = API_SPECS[name]
    api = wire_api(spec, spec.min_version, spec.max_version)
    return api.decode_response(data, 5 if api.response_header_flexible(version) else 4, version)


async def closed(reader: asyncio.StreamReader, within: float = 5) -> bool:
    return await asyncio.wait_for(reader.read(), within) == b""


async def scram_login(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, mechanism: str, password: str
) -> SaslAuthenticateResponse:
    """SaslHandshake v1 and the two SaslAuthenticate v2 rounds; the last answer."""
    writer.write(request("SaslHandshake", SaslHandshakeRequest(Mechanism=mechanism), 1, 1))
    hs = await answer(reader, "SaslHandshake", 1)
    assert isinstance(hs, SaslHandshakeResponse) and hs.ErrorCode == 0
    client = scramp.ScramClient([mechanism], "alice", password)
    writer.write(
        request(
            "SaslAuthenticate", SaslAuthenticateRequest(AuthBytes=client.get_client_first().encode()), 2, 2
        )
    )
    first = await answer(reader, "SaslAuthenticate", 2)
    assert first.ErrorCode == 0
    client.set_server_first(first.AuthBytes.decode())
    writer.write(
        request(
            "SaslAuthenticate", SaslAuthenticateRequest(AuthBytes=client.get_client_final().encode()), 2, 3
        )
    )
    final = await answer(reader, "SaslAuthenticate", 2)
    assert isinstance(final, SaslAuthenticateResponse)
    return final


# ---- real clients -------------------------------------------------------------------------------


def sasl_ssl_conf(port: int, certs: Certs, mechanism: str, password: str) -> dict[str, Any]:
    return {
        "bootstrap.servers": f"127.0.0.1:{port}",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": mechanism,
        "sasl.username": "alice",
        "sasl.password": password,
        "ssl.ca.location": str(certs.ca),
    }


@pytest.mark.parametrize("mechanism", MECHANISMS)
async def test_librdkafka_over_sasl_ssl_with_the_right_password(
    listeners: list[KafkaListener], certs: Certs, mechanism: str
) -> None:
    pytest.importorskip("confluent_kafka")
    served = await start(
        listeners,
        "SASL_SSL",
        ssl_context=server_context(certs),
        sasl_mechanisms=MECHANISMS,
        scram_lookup=lookup,
    )
    topics, errors = await asyncio.to_thread(
        librdkafka_metadata, sasl_ssl_conf(served.port, certs, mechanism, PASSWORD), 15
    )
    assert topics == ["orders"], errors
    assert served.principals and set(served.principals) == {"User:alice"}
    assert set(served.protocols) == {"SASL_SSL"}


async def test_librdkafka_over_sasl_ssl_with_a_wrong_password(
    listeners: list[KafkaListener], certs: Certs
) -> None:
    pytest.importorskip("confluent_kafka")
    from confluent_kafka import KafkaError

    served = await start(
        listeners,
        "SASL_SSL",
        ssl_context=server_context(certs),
        sasl_mechanisms=MECHANISMS,
        scram_lookup=lookup,
    )
    topics, errors = await asyncio.to_thread(
        librdkafka_metadata, sasl_ssl_conf(served.port, certs, "SCRAM-SHA-512", "wrong"), 3
    )
    assert topics is None
    auth = [e for e in errors if e.code() == KafkaError._AUTHENTICATION]
    assert auth, errors
    assert "Authentication failed during authentication due to invalid credentials" in auth[0].str()
    assert served.principals == []


async def test_librdkafka_over_ssl_is_named_by_its_certificate(
    listeners: list[KafkaListener], certs: Certs
) -> None:
    pytest.importorskip("confluent_kafka")
    served = await start(listeners, "SSL", ssl_context=server_context(certs, ssl.CERT_OPTIONAL))
    conf = {
        "bootstrap.servers": f"127.0.0.1:{served.port}",
        "security.protocol": "SSL",
        "ssl.ca.location": str(certs.ca),
    }
    topics, errors = await asyncio.to_thread(librdkafka_metadata, conf, 15)
    assert topics == ["orders"], errors
    with_cert = {
        **conf,
        "ssl.certificate.location": str(certs.client_cert),
        "ssl.key.location": str(certs.client_key),
    }
    topics, errors = await asyncio.to_thread(librdkafka_metadata, with_cert, 15)
    assert topics == ["orders"], errors
    assert served.principals[0] == "User:ANONYMOUS"
    assert served.principals[-1] == "User:CN=client,O=kraftpy"
    assert set(served.protocols) == {"SSL"}


async def test_librdkafka_refuses_a_server_it_does_not_trust(
    listeners: list[KafkaListener], certs: Certs, tmp_path: Path
) -> None:
    pytest.importorskip("confluent_kafka")
    served = await start(listeners, "SSL", ssl_context=server_context(certs))
    other = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "another CA")])
    (tmp_path / "other.pem").write_bytes(
        issue_cert(name, other, name, other, ca=True).public_bytes(serialization.Encoding.PEM)
    )
    conf = {
        "bootstrap.servers": f"127.0.0.1:{served.port}",
        "security.protocol": "SSL",
        "ssl.ca.location": str(tmp_path / "other.pem"),
    }
    topics, _ = await asyncio.to_thread(librdkafka_metadata, conf, 3)
    assert topics is None
    assert served.principals == []


async def kcat(*args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        "kcat", *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), 30)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


@pytest.mark.parametrize("mechanism", MECHANISMS)
async def test_kcat_over_sasl_ssl(listeners: list[KafkaListener], certs: Certs, mechanism: str) -> None:
    require_real("kcat", shutil.which("kcat") is not None)
    served = await start(
        listeners,
        "SASL_SSL",
        ssl_context=server_context(certs),
        sasl_mechanisms=MECHANISMS,
        scram_lookup=lookup,
    )

    def args(password: str) -> list[str]:
        return [
            "-L",
            "-J",
            "-m",
            "5",
            "-b",
            f"127.0.0.1:{served.port}",
            "-X",
            "security.protocol=SASL_SSL",
            "-X",
            f"sasl.mechanisms={mechanism}",
            "-X",
            "sasl.username=alice",
            "-X",
            f"sasl.password={password}",
            "-X",
            f"ssl.ca.location={certs.ca}",
        ]

    rc, out, err = await kcat(*args(PASSWORD))
    assert rc == 0, err
    meta = json.loads(out)
    assert [t["topic"] for t in meta["topics"]] == ["orders"]
    assert set(served.principals) == {"User:alice"}
    served.principals.clear()
    rc, out, err = await kcat(*args("wrong"))
    assert rc != 0
    assert "Authentication failed" in err
    assert served.principals == []


async def test_kcat_over_ssl(listeners: list[KafkaListener], certs: Certs) -> None:
    require_real("kcat", shutil.which("kcat") is not None)
    served = await start(listeners, "SSL", ssl_context=server_context(certs, ssl.CERT_REQUIRED))
    rc, out, err = await kcat(
        "-L", "-J", "-m", "5", "-b", f"127.0.0.1:{served.port}",
        "-X", "security.protocol=SSL",
        "-X", f"ssl.ca.location={certs.ca}",
        "-X", f"ssl.certificate.location={certs.client_cert}",
        "-X", f"ssl.key.location={certs.client_key}",
    )  # fmt: skip
    assert rc == 0, err
    assert [t["topic"] for t in json.loads(out)["topics"]] == ["orders"]
    assert set(served.principals) == {"User:CN=client,O=kraftpy"}


# ---- what clients do not do ---------------------------------------------------------------------


async def test_sasl_plaintext_raw_exchange_and_requests_before_it(listeners: list[KafkaListener]) -> None:
    served = await start(listeners, "SASL_PLAINTEXT", sasl_mechanisms=("SCRAM-SHA-256",), scram_lookup=lookup)
    # ApiVersions before authentication lists the SASL APIs
    reader, writer = await asyncio.open_connection("127.0.0.1", served.port)
    writer.write(request("ApiVersions", ApiVersionsRequest(), 3, 0))
    versions = await answer(reader, "ApiVersions", 3)
    keys = {k.ApiKey: (k.MinVersion, k.MaxVersion) for k in versions.ApiKeys}
    assert keys[17] == (0, 1) and keys[36] == (0, 2) and 3 in keys
    final = await scram_login(reader, writer, "SCRAM-SHA-256", PASSWORD)
    assert final.ErrorCode == 0
    writer.write(request("Metadata", MetadataRequest(), 12, 9))
    meta = await answer(reader, "Metadata", 12)
    assert [t.Name for t in meta.Topics] == ["orders"]
    writer.close()
    assert served.principals == ["User:alice"]
    assert served.protocols == ["SASL_PLAINTEXT"]

    # Metadata first: closed unanswered
    reader, writer = await asyncio.open_connection("127.0.0.1", served.port)
    writer.write(request("Metadata", MetadataRequest(), 12, 1))
    assert await closed(reader)
    writer.close()

    # Metadata in the middle of the exchange: its ILLEGAL_SASL_STATE answer, then closed
    reader, writer = await asyncio.open_connection("127.0.0.1", served.port)
    writer.write(request("SaslHandshake", SaslHandshakeRequest(Mechanism="SCRAM-SHA-256"), 1, 1))
    assert (await answer(reader, "SaslHandshake", 1)).ErrorCode == 0
    writer.write(request("Metadata", MetadataRequest(), 4, 2))
    await answer(reader, "Metadata", 4)
    assert await closed(reader)
    writer.close()

    # SaslHandshake v0 (raw tokens) is not served
    reader, writer = await asyncio.open_connection("127.0.0.1", served.port)
    writer.write(request("SaslHandshake", SaslHandshakeRequest(Mechanism="SCRAM-SHA-256"), 0, 1))
    assert (await answer(reader, "SaslHandshake", 0)).ErrorCode == Errors.UNSUPPORTED_VERSION
    assert await closed(reader)
    writer.close()
    assert served.principals == ["User:alice"]


async def test_a_wrong_password_is_answered_late_then_closed(listeners: list[KafkaListener]) -> None:
    served = await start(
        listeners, "SASL_PLAINTEXT", sasl_mechanisms=MECHANISMS, scram_lookup=lookup, failed_auth_delay_s=0.3
    )
    reader, writer = await asyncio.open_connection("127.0.0.1", served.port)
    loop = asyncio.get_running_loop()
    start_at = loop.time()
    final = await scram_login(reader, writer, "SCRAM-SHA-512", "wrong")
    assert loop.time() - start_at >= 0.3
    assert final.ErrorCode == Errors.SASL_AUTHENTICATION_FAILED
    assert final.ErrorMessage == (
        "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512"
    )
    assert await closed(reader)
    writer.close()


async def test_a_mechanism_not_enabled_is_answered_then_closed(listeners: list[KafkaListener]) -> None:
    served = await start(
        listeners,
        "SASL_PLAINTEXT",
        sasl_mechanisms=("SCRAM-SHA-512",),
        scram_lookup=lookup,
        failed_auth_delay_s=0,
    )
    reader, writer = await asyncio.open_connection("127.0.0.1", served.port)
    writer.write(request("SaslHandshake", SaslHandshakeRequest(Mechanism="SCRAM-SHA-256"), 1, 1))
    resp = await answer(reader, "SaslHandshake", 1)
    assert (resp.ErrorCode, resp.Mechanisms) == (Errors.UNSUPPORTED_SASL_MECHANISM, ["SCRAM-SHA-512"])
    assert await closed(reader)
    writer.close()


async def test_an_unauthenticated_frame_is_bounded_by_sasl_max_receive_size(
    listeners: list[KafkaListener],
) -> None:
    served = await start(
        listeners,
        "SASL_PLAINTEXT",
        sasl_mechanisms=MECHANISMS,
        scram_lookup=lookup,
        max_request_bytes=10 * 2**20,
    )
    reader, writer = await asyncio.open_connection("127.0.0.1", served.port)
    writer.write(struct.pack(">i", 524289))
    assert await closed(reader)
    writer.close()


async def test_a_plaintext_client_on_an_ssl_listener_is_closed(
    listeners: list[KafkaListener], certs: Certs
) -> None:
    served = await start(listeners, "SSL", ssl_context=server_context(certs), request_timeout_s=2)
    reader, writer = await asyncio.open_connection("127.0.0.1", served.port)
    writer.write(request("ApiVersions", ApiVersionsRequest(), 0, 1))
    assert await closed(reader)
    writer.close()


async def test_a_trickled_frame_is_cut_off_at_the_request_deadline(listeners: list[KafkaListener]) -> None:
    served = await start(listeners, "PLAINTEXT", request_timeout_s=0.5)
    reader, writer = await asyncio.open_connection("127.0.0.1", served.port)
    whole = request("Metadata", MetadataRequest(), 4, 1)
    writer.write(whole[:6])
    await writer.drain()
    loop = asyncio.get_running_loop()
    start_at = loop.time()
    for byte in whole[6:12]:  # a byte now and then: never silent, never done
        await asyncio.sleep(0.15)
        if reader.at_eof():
            break
        writer.write(bytes([byte]))
    assert await closed(reader, within=3)
    assert loop.time() - start_at < 3
    writer.close()
    assert served.principals == []


async def test_the_same_trickle_over_tls_is_cut_off_too(listeners: list[KafkaListener], certs: Certs) -> None:
    served = await start(listeners, "SSL", ssl_context=server_context(certs), request_timeout_s=0.5)
    client = ssl.create_default_context(cafile=str(certs.ca))
    reader, writer = await asyncio.open_connection(
        "127.0.0.1", served.port, ssl=client, server_hostname="localhost"
    )
    writer.write(struct.pack(">i", 100) + b"\x00\x03")
    await writer.drain()
    assert await closed(reader, within=3)
    writer.close()


async def test_a_tls_handshake_that_never_starts_is_cut_off(
    listeners: list[KafkaListener], certs: Certs
) -> None:
    served = await start(listeners, "SSL", ssl_context=server_context(certs), request_timeout_s=0.3)
    reader, writer = await asyncio.open_connection("127.0.0.1", served.port)
    assert await closed(reader, within=3)
    writer.close()


async def test_an_idle_connection_is_closed(listeners: list[KafkaListener]) -> None:
    served = await start(listeners, "PLAINTEXT", idle_timeout_s=0.3)
    reader, writer = await asyncio.open_connection("127.0.0.1", served.port)
    writer.write(request("Metadata", MetadataRequest(), 4, 1))
    await answer(reader, "Metadata", 4)  # a busy connection stays
    assert await closed(reader, within=3)
    writer.close()


async def test_connection_quotas_refuse_at_accept_and_free_at_close(
    listeners: list[KafkaListener], certs: Certs
) -> None:
    quotas = ConnectionQuotas(max_per_ip=1)
    served = await start(listeners, "SSL", ssl_context=server_context(certs), connection_quotas=quotas)
    _first_r, first_w = await asyncio.open_connection("127.0.0.1", served.port)  # holds its slot without TLS
    second_r, second_w = await asyncio.open_connection("127.0.0.1", served.port)
    assert await closed(second_r)
    second_w.close()
    assert quotas.active == 1 and quotas.refused == 1
    first_w.close()
    for _ in range(50):
        if quotas.active == 0:
            break
        await asyncio.sleep(0.05)
    assert quotas.active == 0
    client = ssl.create_default_context(cafile=str(certs.ca))
    reader, writer = await asyncio.open_connection(
        "127.0.0.1", served.port, ssl=client, server_hostname="localhost"
    )
    writer.write(request("Metadata", MetadataRequest(), 4, 1))
    assert [t.Name for t in (await answer(reader, "Metadata", 4)).Topics] == ["orders"]
    writer.close()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"security_protocol": "SSL"}, "needs an SSL context"),
        ({"security_protocol": "SASL_PLAINTEXT", "scram_lookup": lookup}, "no SASL mechanism"),
        (
            {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanisms": ("PLAIN",), "scram_lookup": lookup},
            "PLAIN",
        ),
        ({"security_protocol": "SASL_PLAINTEXT", "sasl_mechanisms": MECHANISMS}, "lookup"),
        ({"security_protocol": "TLS"}, "not one of"),
    ],
)
def test_a_listener_refuses_settings_it_cannot_serve(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        KafkaListener(create_app({}), "L", (), **kwargs)
