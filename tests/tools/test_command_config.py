"""Kafka's --command-config for kraftpy's tools (tools.client.security): which file applies, the
client context read from it, one-line errors for a bad one, and the probes and RPC clients dialling
https with it."""

from __future__ import annotations

import http.server
import json
import os
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from protocol.transport import RpcClient
from tools.cli.main import main, split_command_config
from tools.client import security
from tools.client.cluster import ConnectionPool
from tools.client.security import (
    COMMAND_CONFIG_ENV,
    CommandConfigError,
    admin_properties,
    child_env,
    client_context,
    command_config,
    command_config_path,
    load_client_context,
)
from tools.cluster import certs
from tools.cluster.launcher import get_json
from tools.cluster.probe import fetch_many
from tools.cluster.secure import write_properties


@pytest.fixture
def pki(tmp_path: Path) -> tuple[certs.CaFiles, certs.KeyPair, certs.KeyPair]:
    ca = certs.create_ca(tmp_path / "pki")
    return ca, certs.node_cert(ca, 1, tmp_path / "pki"), certs.client_cert(ca, "admin", tmp_path / "pki")


@pytest.fixture
def admin_config(tmp_path: Path, pki: tuple[certs.CaFiles, certs.KeyPair, certs.KeyPair]) -> Path:
    ca, _node, admin = pki
    path = tmp_path / "admin.properties"
    write_properties(path, admin_properties(admin.keystore, ca.cert), "test")
    return path


@pytest.fixture(autouse=True)
def no_env_config(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(COMMAND_CONFIG_ENV, raising=False)


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


# ---- which file applies ---------------------------------------------------------------------------


def test_a_block_overrides_the_environment_and_children_inherit_it(
    admin_config: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert command_config_path() is None and client_context() is None
    assert child_env() == {COMMAND_CONFIG_ENV: ""}
    monkeypatch.setenv(COMMAND_CONFIG_ENV, str(admin_config))
    assert command_config_path() == str(admin_config)
    assert isinstance(client_context(), ssl.SSLContext)
    with command_config(None):
        # a plain cluster is reached plain whatever the environment says
        assert command_config_path() is None and client_context() is None
        assert child_env() == {COMMAND_CONFIG_ENV: ""}
    other = tmp_path / "other.properties"
    with command_config(other):
        assert command_config_path() == str(other)
        assert child_env() == {COMMAND_CONFIG_ENV: str(other)}
    monkeypatch.setenv(COMMAND_CONFIG_ENV, "")
    assert command_config_path() is None


def test_the_context_is_cached_until_a_file_changes(
    admin_config: Path, tmp_path: Path, pki: tuple[certs.CaFiles, certs.KeyPair, certs.KeyPair]
) -> None:
    first = load_client_context(admin_config)
    assert first is not None and load_client_context(admin_config) is first
    assert first.check_hostname and first.verify_mode == ssl.CERT_REQUIRED
    # a new CA and certificate where the old ones were (a cluster made again in the same work dir)
    ca = certs.create_ca(tmp_path / "pki")
    certs.client_cert(ca, "admin", tmp_path / "pki")
    assert load_client_context(admin_config) is not first


def test_plaintext_is_no_context(tmp_path: Path) -> None:
    assert load_client_context(write(tmp_path / "c.properties", "client.id=x\n")) is None
    assert load_client_context(write(tmp_path / "p.properties", "security.protocol=plaintext\n")) is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("security.protocol=SASL_SSL\n", "not SASL"),
        ("security.protocol=TLS\n", "security.protocol=TLS is not supported"),
        (
            "security.protocol=SSL\nssl.keystore.type=PEM\nssl.keystore.location=/no/such.pem\n",
            "cannot read ssl.keystore.location=/no/such.pem",
        ),
        ("security.protocol=SSL\nssl.truststore.location=/etc/hostname\n", "ssl.truststore.type=JKS"),
        ("security.protocol=SSL\nssl.endpoint.identification.algorithm=foo\n", "is not supported"),
    ],
)
def test_a_bad_file_is_one_message_naming_it(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path / "bad.properties", text)
    with pytest.raises(CommandConfigError, match=message) as e:
        load_client_context(path)
    assert str(path) in str(e.value) and "\n" not in str(e.value)


def test_a_missing_file_is_one_line_from_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope.properties"
    code = main(["topics", "list", "--bootstrap-server", "127.0.0.1:1", "--command-config", str(missing)])
    err = capsys.readouterr().err
    assert code == 2
    assert err == f"kraftpy topics: cannot read command config {missing}: No such file or directory\n"


def test_a_bad_environment_file_is_one_line_from_the_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(
        COMMAND_CONFIG_ENV, str(write(tmp_path / "s.properties", "security.protocol=SASL_SSL"))
    )
    assert main(["topics", "list", "--bootstrap-server", "127.0.0.1:1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not SASL" in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("argv", "config", "rest"),
    [
        (
            ["topics", "list", "--command-config", "a.p", "-x"],
            ["--command-config", "a.p"],
            ["topics", "list", "-x"],
        ),
        (["--command-config", "a.p", "topics"], ["--command-config", "a.p"], ["topics"]),
        (["topics", "--command-config=a.p"], ["--command-config=a.p"], ["topics"]),
        (["topics", "--", "--command-config", "x"], [], ["topics", "--", "--command-config", "x"]),
        (["topics", "list"], [], ["topics", "list"]),
    ],
)
def test_the_option_is_taken_before_or_after_the_command(
    argv: list[str], config: list[str], rest: list[str]
) -> None:
    assert split_command_config(argv) == (config, rest)


# ---- what the tools do with a context ---------------------------------------------------------------


async def test_the_pool_dials_the_http_rpc_over_tls_and_skips_the_kafka_probe(admin_config: Path) -> None:
    with command_config(admin_config):
        pool = ConnectionPool()
    try:
        assert pool.ssl is not None
        for url in ("auto://127.0.0.1:9", "http://127.0.0.1:9"):
            client = pool.get(url)
            assert isinstance(client, RpcClient)
            assert client.base_url == "https://127.0.0.1:9" and client.ssl is pool.ssl
    finally:
        await pool.close()
    plain = ConnectionPool()
    try:
        assert plain.ssl is None and not isinstance(plain.get("auto://127.0.0.1:9"), RpcClient)
    finally:
        await plain.close()


@pytest.fixture
def https_server(pki: tuple[certs.CaFiles, certs.KeyPair, certs.KeyPair]) -> Iterator[int]:
    """/healthz over TLS with client certificates required, as a secure node serves it."""
    ca, node, _admin = pki

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = json.dumps({"status": "ok", "path": self.path}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(node.keystore)
    ctx.load_verify_locations(ca.cert)
    ctx.verify_mode = ssl.CERT_REQUIRED
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def test_probes_fetch_http_urls_over_tls_with_the_client_certificate(
    https_server: int, admin_config: Path
) -> None:
    url = f"http://127.0.0.1:{https_server}/healthz"
    with command_config(admin_config):
        assert get_json(url) == (200, {"status": "ok", "path": "/healthz"})
        # the probes run in worker threads: the block's config still applies
        assert fetch_many([url, url + "?again"])[url]["status"] == 200
    plain = fetch_many([url])[url]
    assert plain["status"] is None and plain["error"]


def test_urlopen_leaves_urls_alone_without_a_context() -> None:
    assert security.https("http://h:1/x", None) == "http://h:1/x"
    assert security.https("http://h:1/x", ssl.create_default_context()) == "https://h:1/x"
    assert security.https("zk://h:1", ssl.create_default_context()) == "zk://h:1"
    assert os.environ.get(COMMAND_CONFIG_ENV) is None


def test_consumer_groups_says_it_cannot_use_a_command_config(
    admin_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [
        "consumer-groups",
        "--list",
        "--bootstrap-server",
        "127.0.0.1:1",
        "--command-config",
        str(admin_config),
    ]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "without TLS or SASL" in err
