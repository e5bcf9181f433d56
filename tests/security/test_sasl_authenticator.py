"""Kafka's SaslServerAuthenticator as protocol.transport.sasl runs it, without sockets: the states,
what each lets through, and SCRAM exchanges driven by scramp's client."""

from __future__ import annotations

import pytest
import scramp

from kraftpy.security.acl import ScramMechanism
from kraftpy.security.scram import new_credential
from protocol.errors import Errors
from protocol.rpc import API_SPECS
from protocol.rpc.sasl_authenticate import SaslAuthenticateRequest, SaslAuthenticateResponse
from protocol.rpc.sasl_handshake import SaslHandshakeRequest, SaslHandshakeResponse
from protocol.transport.kafka_server import ssl_principal
from protocol.transport.peer_name import rfc2253_name
from protocol.transport.sasl import (
    SaslServerAuthenticator,
    SaslState,
    check_mechanisms,
    invalid_credentials_message,
)
from protocol.wire.schema import wire_schema
from tests.wire.kafka_json import differences, kafka_schema

METADATA, API_VERSIONS, HANDSHAKE, AUTHENTICATE = 3, 18, 17, 36

CREDENTIALS = {
    (m.mechanism_name, "alice"): new_credential(m, "alice-secret", iterations=4096)
    for m in (ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512)
}


def lookup(mechanism: str, user: str) -> tuple[bytes, bytes, bytes, int] | None:
    c = CREDENTIALS.get((mechanism, user))
    return None if c is None else (c.salt, c.stored_key, c.server_key, c.iterations)


def authenticator(*mechanisms: str) -> SaslServerAuthenticator:
    return SaslServerAuthenticator(mechanisms or ("SCRAM-SHA-256", "SCRAM-SHA-512"), lookup)


def handshake(auth: SaslServerAuthenticator, mechanism: str) -> SaslHandshakeResponse:
    assert auth.admit(HANDSHAKE) is None
    reply = auth.handshake(SaslHandshakeRequest(Mechanism=mechanism))
    assert isinstance(reply.response, SaslHandshakeResponse)
    return reply.response


def send(auth: SaslServerAuthenticator, token: str) -> tuple[SaslAuthenticateResponse, bool]:
    assert auth.admit(AUTHENTICATE) is None
    reply = auth.authenticate(SaslAuthenticateRequest(AuthBytes=token.encode()))
    assert isinstance(reply.response, SaslAuthenticateResponse)
    return reply.response, reply.close


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_the_right_password_authenticates_and_the_client_verifies_the_server(mechanism: str) -> None:
    auth = authenticator()
    assert auth.admit(API_VERSIONS) is None
    auth.api_versions_answered()
    resp = handshake(auth, mechanism)
    assert (resp.ErrorCode, resp.Mechanisms) == (0, ["SCRAM-SHA-256", "SCRAM-SHA-512"])
    client = scramp.ScramClient([mechanism], "alice", "alice-secret")
    first, close = send(auth, client.get_client_first())
    assert (first.ErrorCode, close, auth.state) == (0, False, SaslState.AUTHENTICATE)
    client.set_server_first(first.AuthBytes.decode())
    final, close = send(auth, client.get_client_final())
    assert (final.ErrorCode, final.SessionLifetimeMs, close) == (0, 0, False)
    client.set_server_final(final.AuthBytes.decode())  # raises if the server's signature is wrong
    assert auth.complete
    assert auth.principal == "User:alice"
    assert auth.admit(METADATA) is None


@pytest.mark.parametrize(
    ("user", "password"),
    [("alice", "wrong"), ("mallory", "alice-secret")],
    ids=["wrong password", "unknown user"],
)
def test_a_failed_exchange_gets_kafkas_one_message_and_closes(user: str, password: str) -> None:
    auth = authenticator()
    handshake(auth, "SCRAM-SHA-256")
    client = scramp.ScramClient(["SCRAM-SHA-256"], user, password)
    resp, close = send(auth, client.get_client_first())
    if resp.ErrorCode == 0:  # a known user fails at the proof, an unknown one already here
        client.set_server_first(resp.AuthBytes.decode())
        resp, close = send(auth, client.get_client_final())
    assert resp.ErrorCode == Errors.SASL_AUTHENTICATION_FAILED
    assert resp.ErrorMessage == (
        "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256"
    )
    assert resp.ErrorMessage == invalid_credentials_message("SCRAM-SHA-256")
    assert close
    assert auth.state is SaslState.FAILED
    assert auth.principal is None
    assert auth.admit(METADATA) is not None


def test_a_credential_of_the_other_mechanism_does_not_authenticate() -> None:
    auth = SaslServerAuthenticator(
        ("SCRAM-SHA-256",), lambda m, u: lookup("SCRAM-SHA-512", u) if m == "SCRAM-SHA-256" else None
    )
    handshake(auth, "SCRAM-SHA-256")
    client = scramp.ScramClient(["SCRAM-SHA-256"], "alice", "alice-secret")
    resp, _ = send(auth, client.get_client_first())
    client.set_server_first(resp.AuthBytes.decode())
    resp, close = send(auth, client.get_client_final())
    assert (resp.ErrorCode, close) == (Errors.SASL_AUTHENTICATION_FAILED, True)


def test_a_mechanism_not_enabled_is_answered_with_the_enabled_ones_and_closes() -> None:
    auth = authenticator("SCRAM-SHA-512")
    reply = auth.handshake(SaslHandshakeRequest(Mechanism="SCRAM-SHA-256"))
    assert isinstance(reply.response, SaslHandshakeResponse)
    assert (reply.response.ErrorCode, reply.response.Mechanisms) == (
        Errors.UNSUPPORTED_SASL_MECHANISM,
        ["SCRAM-SHA-512"],
    )
    assert reply.close
    assert auth.state is SaslState.FAILED
    reply = authenticator().handshake(SaslHandshakeRequest(Mechanism="PLAIN"))
    assert reply.close


def test_a_v0_handshake_is_refused_raw_tokens_are_not_read() -> None:
    auth = authenticator()
    reply = auth.handshake(SaslHandshakeRequest(Mechanism="SCRAM-SHA-256"), 0)
    assert isinstance(reply.response, SaslHandshakeResponse)
    assert (reply.response.ErrorCode, reply.close) == (Errors.UNSUPPORTED_VERSION, True)
    assert auth.state is SaslState.FAILED


def test_requests_before_authentication_close_the_connection() -> None:
    auth = authenticator()
    refusal = auth.admit(METADATA)
    assert refusal is not None and refusal.error is None  # unanswered, as Kafka's InvalidRequest
    assert auth.admit(AUTHENTICATE) is not None  # tokens before the handshake
    auth.api_versions_answered()
    assert auth.admit(API_VERSIONS) is not None  # ApiVersions once only
    assert auth.admit(METADATA) is not None
    handshake(auth, "SCRAM-SHA-512")
    # during the exchange: the API's own ILLEGAL_SASL_STATE answer, then the connection closes
    refusal = auth.admit(METADATA)
    assert refusal is not None and refusal.error is Errors.ILLEGAL_SASL_STATE
    assert auth.admit(HANDSHAKE) is not None
    assert auth.admit(API_VERSIONS) is not None


def test_sasl_requests_after_authentication_are_answered_illegal_sasl_state() -> None:
    auth = authenticator()
    handshake(auth, "SCRAM-SHA-256")
    client = scramp.ScramClient(["SCRAM-SHA-256"], "alice", "alice-secret")
    resp, _ = send(auth, client.get_client_first())
    client.set_server_first(resp.AuthBytes.decode())
    send(auth, client.get_client_final())
    assert auth.admit(HANDSHAKE) is None
    again = auth.handshake(SaslHandshakeRequest(Mechanism="SCRAM-SHA-256"))
    assert isinstance(again.response, SaslHandshakeResponse)
    assert (again.response.ErrorCode, again.close) == (Errors.ILLEGAL_SASL_STATE, False)
    more = auth.authenticate(SaslAuthenticateRequest(AuthBytes=b"n,,n=alice,r=x"))
    assert isinstance(more.response, SaslAuthenticateResponse)
    assert (more.response.ErrorCode, more.close) == (Errors.ILLEGAL_SASL_STATE, False)
    assert auth.principal == "User:alice"


@pytest.mark.parametrize(
    ("token", "message"),
    [
        (b"\xff\xfe", invalid_credentials_message("SCRAM-SHA-256")),
        (b"garbage", invalid_credentials_message("SCRAM-SHA-256")),
        (
            b"n,a=bob,n=alice,r=abc",
            "Authentication failed: Client requested an authorization id that is different from username",
        ),
    ],
    ids=["not UTF-8", "not SCRAM", "another authorization id"],
)
def test_malformed_client_first_messages_fail(token: bytes, message: str) -> None:
    auth = authenticator()
    handshake(auth, "SCRAM-SHA-256")
    reply = auth.authenticate(SaslAuthenticateRequest(AuthBytes=token))
    assert isinstance(reply.response, SaslAuthenticateResponse)
    assert (reply.response.ErrorCode, reply.response.ErrorMessage, reply.close) == (
        Errors.SASL_AUTHENTICATION_FAILED,
        message,
        True,
    )


def test_a_failing_lookup_fails_the_authentication_not_the_listener() -> None:
    def broken(mechanism: str, user: str) -> tuple[bytes, bytes, bytes, int] | None:
        raise RuntimeError("image not loaded")

    auth = SaslServerAuthenticator(("SCRAM-SHA-256",), broken)
    handshake(auth, "SCRAM-SHA-256")
    resp, close = send(auth, scramp.ScramClient(["SCRAM-SHA-256"], "alice", "x").get_client_first())
    assert (resp.ErrorCode, close) == (Errors.SASL_AUTHENTICATION_FAILED, True)


@pytest.mark.parametrize("mechanisms", [(), ("OAUTHBEARER",), ("SCRAM-SHA-256", "GSSAPI")])
def test_only_scram_and_plain_can_be_enabled(mechanisms: tuple[str, ...]) -> None:
    with pytest.raises(ValueError):
        check_mechanisms(mechanisms)
    assert check_mechanisms((" PLAIN", "SCRAM-SHA-512")) == ("PLAIN", "SCRAM-SHA-512")


# ---- PLAIN ----------------------------------------------------------------------------------------


def plain_authenticator() -> SaslServerAuthenticator:
    return SaslServerAuthenticator(
        ("SCRAM-SHA-512", "PLAIN"), lookup, plain=lambda u, p: (u, p) == ("alice", "pw")
    )


def test_plain_authenticates_in_one_message_and_names_the_user() -> None:
    auth = plain_authenticator()
    assert auth.admit(API_VERSIONS) is None
    auth.api_versions_answered()
    resp = handshake(auth, "PLAIN")
    assert (resp.ErrorCode, resp.Mechanisms) == (0, ["SCRAM-SHA-512", "PLAIN"])
    assert auth.admit(METADATA) is not None  # not before the password
    done, close = send(auth, "\0alice\0pw")
    assert (done.ErrorCode, done.AuthBytes, done.SessionLifetimeMs, close) == (0, b"", 0, False)
    assert auth.complete and auth.principal == "User:alice"
    assert auth.admit(METADATA) is None
    # an authorization id equal to the user is the same login
    same = plain_authenticator()
    handshake(same, "PLAIN")
    assert send(same, "alice\0alice\0pw")[0].ErrorCode == 0 and same.principal == "User:alice"


GENERIC_PLAIN = (
    "Authentication failed during authentication due to invalid credentials with SASL mechanism PLAIN"
)


@pytest.mark.parametrize(
    ("token", "message"),
    [
        ("\0alice\0wrong", "Authentication failed: Invalid username or password"),
        ("\0mallory\0pw", "Authentication failed: Invalid username or password"),
        (
            "\0alice\0pw\0more",
            "Authentication failed: Invalid username or password",
        ),  # the NUL is the password's
        (
            "bob\0alice\0pw",
            "Authentication failed: Client requested an authorization id that is different from username",
        ),
        ("\0\0pw", GENERIC_PLAIN),
        ("\0alice\0", GENERIC_PLAIN),
        ("alice:pw", GENERIC_PLAIN),
    ],
    ids=[
        "wrong password",
        "unknown user",
        "more fields",
        "another authorization id",
        "no user",
        "no password",
        "one field",
    ],
)
def test_a_failed_plain_login_gets_kafkas_message_and_closes(token: str, message: str) -> None:
    auth = plain_authenticator()
    handshake(auth, "PLAIN")
    resp, close = send(auth, token)
    assert (resp.ErrorCode, resp.ErrorMessage, close) == (Errors.SASL_AUTHENTICATION_FAILED, message, True)
    assert auth.state is SaslState.FAILED and auth.principal is None
    assert auth.admit(METADATA) is not None


def test_plain_needs_its_users_and_scram_its_lookup() -> None:
    with pytest.raises(ValueError, match="PLAIN needs its users"):
        SaslServerAuthenticator(("PLAIN",), lookup)
    with pytest.raises(ValueError, match="SCRAM needs a credential lookup"):
        SaslServerAuthenticator(("SCRAM-SHA-256", "PLAIN"), plain=lambda u, p: False)
    assert SaslServerAuthenticator(("PLAIN",), plain=lambda u, p: False).mechanisms == ("PLAIN",)


@pytest.mark.parametrize("name", ["SaslHandshake", "SaslAuthenticate"])
@pytest.mark.parametrize("kind", ["Request", "Response"])
def test_schemas_match_kafkas(name: str, kind: str) -> None:
    spec = API_SPECS[name]
    model = spec.request_model if kind == "Request" else spec.response_model
    ours = wire_schema(model, spec.api_key, f"{spec.min_version}-{spec.max_version}", spec.flexible_versions)
    assert differences(ours, kafka_schema(name + kind), range(spec.min_version, spec.max_version + 1)) == []


def test_ssl_principal_is_the_rfc2253_subject_most_specific_first() -> None:
    cert = {
        "subject": (
            (("countryName", "US"),),
            (("organizationName", "Acme, Inc."),),
            (("organizationalUnitName", "eng"), ("userId", "7")),
            (("commonName", "client one"),),
        )
    }
    assert ssl_principal(cert) == "User:CN=client one,OU=eng+UID=7,O=Acme\\, Inc.,C=US"
    # Java escapes '#' wherever it stands (see test_principal_mapping's names printed by Java)
    assert rfc2253_name(((("commonName", " #x "),),)) == "CN=\\ \\#x\\ "
    assert ssl_principal(None) == ssl_principal({}) == "User:ANONYMOUS"


def test_a_failing_plain_check_fails_the_login_not_the_listener() -> None:
    def broken(user: str, password: str) -> bool:
        raise RuntimeError("users not loaded")

    auth = SaslServerAuthenticator(("PLAIN",), plain=broken)
    handshake(auth, "PLAIN")
    resp, close = send(auth, "\0alice\0pw")
    assert (resp.ErrorCode, resp.ErrorMessage, close) == (
        Errors.SASL_AUTHENTICATION_FAILED,
        "Authentication failed: credentials for user could not be verified",
        True,
    )
