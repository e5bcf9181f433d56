"""SASL authentication of one Kafka-protocol connection, without I/O: Kafka's SaslServerAuthenticator
as a state machine the listener feeds with the requests it has read.

The states and what each lets through are Kafka's:
- HANDSHAKE_OR_VERSIONS_REQUEST: ApiVersions (once) or SaslHandshake; anything else closes the
  connection unanswered (Kafka: "Invalid request, potential reasons: kafka client configured with
  the wrong security protocol ...");
- HANDSHAKE_REQUEST: SaslHandshake only;
- AUTHENTICATE: SaslAuthenticate only; any other request gets its API's ILLEGAL_SASL_STATE answer
  and the connection closes;
- COMPLETE: every request; SaslHandshake and SaslAuthenticate are answered ILLEGAL_SASL_STATE, as
  KafkaApis does (no re-authentication: SessionLifetimeMs is always 0);
- FAILED: the answer that says why is written, then the connection closes.

A handshake naming a mechanism that is not enabled is answered UNSUPPORTED_SASL_MECHANISM with the
enabled ones, then the connection closes. SaslHandshake v0 announces raw tokens without
SaslAuthenticate framing (clients before Kafka 1.0), which are not read here: it is answered
UNSUPPORTED_VERSION and the connection closes. v0 is still advertised, as Kafka does, because
librdkafka reads "SaslHandshake v0 supported" as "the broker does SASL at all".

SCRAM-SHA-256 and SCRAM-SHA-512 are served with RFC 5802's exchange through `scramp`, the credential
of a user found by the caller's `lookup`; PLAIN (RFC 4616) with Kafka's PlainSaslServer rules, the
password checked by the caller's `plain` (the listener's JAAS users). GSSAPI and OAUTHBEARER are not
served. One departure from Kafka 4: librdkafka
before 2.6.1 (kcat, most distributions' packages) sends its own nonce once more in front of the
server's in the client-final message (librdkafka#4895). Kafka 3.8.1 to 3.9 accepted that (their
nonce check was endsWith); Kafka 4 refuses it again. This authenticator accepts exactly that form
and no other: the fresh server nonce is still required, and the proof is still checked over the
message as the client sent it, so nothing can be replayed.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import scramp
import structlog
from scramp.core import Nonce, ScramServer

from protocol.errors import Errors
from protocol.rpc.api_versions import SPEC as API_VERSIONS_SPEC
from protocol.rpc.message import RpcMessage
from protocol.rpc.sasl_authenticate import SPEC as SASL_AUTHENTICATE_SPEC
from protocol.rpc.sasl_authenticate import SaslAuthenticateRequest, SaslAuthenticateResponse
from protocol.rpc.sasl_handshake import SPEC as SASL_HANDSHAKE_SPEC
from protocol.rpc.sasl_handshake import SaslHandshakeRequest, SaslHandshakeResponse

log = structlog.get_logger("protocol.sasl")

SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
PLAIN = "PLAIN"
MECHANISMS = (*SCRAM_MECHANISMS, PLAIN)
"""The SASL mechanisms this authenticator can run."""

HANDSHAKE_MIN_VERSION = 1
"""The lowest SaslHandshake version served: v0 announces raw SASL tokens, which are not read."""

SASL_HANDSHAKE_KEY = SASL_HANDSHAKE_SPEC.api_key
SASL_AUTHENTICATE_KEY = SASL_AUTHENTICATE_SPEC.api_key
_API_VERSIONS_KEY = API_VERSIONS_SPEC.api_key

ScramLookup = Callable[[str, str], tuple[bytes, bytes, bytes, int] | None]
"""(mechanism name, user name) -> (salt, StoredKey, ServerKey, iterations), None for no such user."""

PlainCheck = Callable[[str, str], bool]
"""(user name, password) -> whether the password is that user's (Kafka's PlainServerCallbackHandler)."""


class SaslState(enum.Enum):
    HANDSHAKE_OR_VERSIONS_REQUEST = enum.auto()
    HANDSHAKE_REQUEST = enum.auto()
    AUTHENTICATE = enum.auto()
    COMPLETE = enum.auto()
    FAILED = enum.auto()


@dataclass(frozen=True)
class Refusal:
    """A request that must not be handled in the current state: the connection closes, after the
    API's error answer with `error` when there is one."""

    reason: str
    error: Errors | None = None


@dataclass(frozen=True)
class SaslReply:
    """The answer to a SaslHandshake or SaslAuthenticate; `close`: close the connection once it is
    written (authentication failed)."""

    response: RpcMessage
    close: bool = False
    reason: str = ""


def invalid_credentials_message(mechanism: str) -> str:
    """Kafka's answer to any failed SASL exchange: it names neither the user nor what was wrong, so
    that a client cannot learn which user names exist."""
    return f"Authentication failed during authentication due to invalid credentials with SASL mechanism {mechanism}"


def check_mechanisms(mechanisms: Sequence[str]) -> tuple[str, ...]:
    """`sasl.enabled.mechanisms` as this authenticator can serve them; ValueError otherwise."""
    out = tuple(m.strip() for m in mechanisms if m.strip())
    if not out:
        raise ValueError("no SASL mechanism is enabled")
    unknown = [m for m in out if m not in MECHANISMS]
    if unknown:
        raise ValueError(
            f"SASL mechanism(s) {', '.join(unknown)} are not supported; supported: {', '.join(MECHANISMS)}"
        )
    return out


class _AuthFailed(Exception):
    """A failed exchange: `message` is what the client is told."""

    def __init__(self, message: str, detail: str) -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail


class SaslServerAuthenticator:
    """One connection's SASL authentication, from its first request to COMPLETE or FAILED."""

    def __init__(
        self, mechanisms: Sequence[str], lookup: ScramLookup | None = None, plain: PlainCheck | None = None
    ) -> None:
        self.mechanisms = check_mechanisms(mechanisms)
        if lookup is None and any(m in SCRAM_MECHANISMS for m in self.mechanisms):
            raise ValueError("SASL/SCRAM needs a credential lookup")
        if plain is None and PLAIN in self.mechanisms:
            raise ValueError("SASL/PLAIN needs its users")
        self._lookup = lookup
        self._plain = plain
        self.state = SaslState.HANDSHAKE_OR_VERSIONS_REQUEST
        self.mechanism: str | None = None
        self.username: str | None = None
        self._server: ScramServer | None = None
        self._round = 0
        self._client_nonce = ""

    @property
    def complete(self) -> bool:
        return self.state is SaslState.COMPLETE

    @property
    def principal(self) -> str | None:
        """`User:<name>` once authenticated (Kafka's DefaultKafkaPrincipalBuilder for SASL)."""
        return f"User:{self.username}" if self.complete else None

    # ---- what may be read -----------------------------------------------------------------------

    def admit(self, api_key: int) -> Refusal | None:
        """None when a request of `api_key` may be read and handled now."""
        state = self.state
        if state is SaslState.COMPLETE:
            return None
        if state is SaslState.HANDSHAKE_OR_VERSIONS_REQUEST:
            if api_key in (_API_VERSIONS_KEY, SASL_HANDSHAKE_KEY):
                return None
            return Refusal(
                f"api key {api_key} before SASL authentication: the client may be configured with the "
                "wrong security protocol, or not be a Kafka client"
            )
        if state is SaslState.HANDSHAKE_REQUEST:
            if api_key == SASL_HANDSHAKE_KEY:
                return None
            return Refusal(f"api key {api_key} where a SaslHandshake was expected")
        if state is SaslState.AUTHENTICATE:
            if api_key == SASL_AUTHENTICATE_KEY:
                return None
            return Refusal(f"api key {api_key} during SASL authentication", error=Errors.ILLEGAL_SASL_STATE)
        return Refusal("SASL authentication failed")

    def api_versions_answered(self) -> None:
        """An ApiVersions was answered in full (not the UNSUPPORTED_VERSION fallback, after which
        the client asks again): from now on only the handshake is expected."""
        if self.state is SaslState.HANDSHAKE_OR_VERSIONS_REQUEST:
            self.state = SaslState.HANDSHAKE_REQUEST

    # ---- SaslHandshake and SaslAuthenticate --------------------------------------------------------

    def handshake(self, req: SaslHandshakeRequest, version: int = HANDSHAKE_MIN_VERSION) -> SaslReply:
        if self.state is SaslState.COMPLETE:
            return SaslReply(SaslHandshakeResponse(ErrorCode=int(Errors.ILLEGAL_SASL_STATE)))
        if self.state not in (SaslState.HANDSHAKE_OR_VERSIONS_REQUEST, SaslState.HANDSHAKE_REQUEST):
            self.state = SaslState.FAILED
            return SaslReply(
                SaslHandshakeResponse(ErrorCode=int(Errors.ILLEGAL_SASL_STATE)),
                close=True,
                reason="SaslHandshake during SASL authentication",
            )
        enabled = list(self.mechanisms)
        if version < HANDSHAKE_MIN_VERSION:
            self.state = SaslState.FAILED
            return SaslReply(
                SaslHandshakeResponse(ErrorCode=int(Errors.UNSUPPORTED_VERSION), Mechanisms=enabled),
                close=True,
                reason=f"SaslHandshake v{version}: raw SASL tokens are not served, v{HANDSHAKE_MIN_VERSION}+ is",
            )
        if req.Mechanism not in self.mechanisms:
            self.state = SaslState.FAILED
            return SaslReply(
                SaslHandshakeResponse(ErrorCode=int(Errors.UNSUPPORTED_SASL_MECHANISM), Mechanisms=enabled),
                close=True,
                reason=f"Unsupported SASL mechanism {req.Mechanism}",
            )
        self.mechanism = req.Mechanism
        if req.Mechanism != PLAIN:
            self._server = scramp.ScramMechanism(req.Mechanism).make_server(self._credential)
        self.state = SaslState.AUTHENTICATE
        return SaslReply(SaslHandshakeResponse(Mechanisms=enabled))

    def authenticate(self, req: SaslAuthenticateRequest) -> SaslReply:
        if self.state is SaslState.COMPLETE:
            return SaslReply(
                SaslAuthenticateResponse(
                    ErrorCode=int(Errors.ILLEGAL_SASL_STATE),
                    ErrorMessage="SaslAuthenticate request received after successful authentication",
                )
            )
        if self.state is SaslState.AUTHENTICATE and self.mechanism == PLAIN:
            return self._authenticate_plain(bytes(req.AuthBytes))
        if self.state is not SaslState.AUTHENTICATE or self._server is None or self.mechanism is None:
            self.state = SaslState.FAILED
            return SaslReply(
                SaslAuthenticateResponse(ErrorCode=int(Errors.ILLEGAL_SASL_STATE)),
                close=True,
                reason="SaslAuthenticate before SaslHandshake",
            )
        try:
            token = self._evaluate(self._server, self.mechanism, bytes(req.AuthBytes))
        except _AuthFailed as e:
            self.state = SaslState.FAILED
            self._server = None
            return SaslReply(
                SaslAuthenticateResponse(
                    ErrorCode=int(Errors.SASL_AUTHENTICATION_FAILED), ErrorMessage=e.message
                ),
                close=True,
                reason=f"{e.message} ({e.detail})",
            )
        if self._round == 2:
            self.state = SaslState.COMPLETE
            self._server = None
        return SaslReply(SaslAuthenticateResponse(AuthBytes=token))

    # ---- PLAIN ----------------------------------------------------------------------------------

    def _authenticate_plain(self, token: bytes) -> SaslReply:
        """One message, `[authzid] NUL user NUL password`, checked in Kafka's PlainSaslServer order,
        with its answers: none says whether the user exists."""
        try:
            user = self._check_plain(token.decode("utf-8"))
        except UnicodeDecodeError:
            error = _AuthFailed(invalid_credentials_message(PLAIN), "the PLAIN message is not UTF-8")
        except _AuthFailed as e:
            error = e
        else:
            self.username = user
            self.state = SaslState.COMPLETE
            return SaslReply(SaslAuthenticateResponse(AuthBytes=b""))
        self.state = SaslState.FAILED
        return SaslReply(
            SaslAuthenticateResponse(
                ErrorCode=int(Errors.SASL_AUTHENTICATION_FAILED), ErrorMessage=error.message
            ),
            close=True,
            reason=f"{error.message} ({error.detail})",
        )

    def _check_plain(self, message: str) -> str:
        # Kafka's split: three fields at most, the last takes any further NULs, missing ones are
        # empty. Its empty-field refusals are SaslExceptions: the client gets the one message.
        authzid, user, password = [*message.split("\0", 2), "", ""][:3]
        if not user:
            raise _AuthFailed(invalid_credentials_message(PLAIN), "username not specified")
        if not password:
            raise _AuthFailed(invalid_credentials_message(PLAIN), f"password not specified for user {user!r}")
        assert self._plain is not None
        try:
            matches = self._plain(user, password)
        except Exception:
            log.exception("PLAIN password check failed", user=user)
            raise _AuthFailed(
                "Authentication failed: credentials for user could not be verified", f"user {user!r}"
            ) from None
        if not matches:
            raise _AuthFailed("Authentication failed: Invalid username or password", f"user {user!r}")
        if authzid and authzid != user:
            raise _AuthFailed(
                "Authentication failed: Client requested an authorization id that is different from username",
                f"authorization id {authzid!r}, user {user!r}",
            )
        return user

    # ---- SCRAM ----------------------------------------------------------------------------------

    def _evaluate(self, server: ScramServer, mechanism: str, token: bytes) -> bytes:
        """The server's next SCRAM message for the client's `token`; _AuthFailed when the exchange
        fails. Every scramp refusal (bad proof, unknown user, malformed message, nonce mismatch)
        gets Kafka's one message: its SaslException answers never say which it was."""
        generic = invalid_credentials_message(mechanism)
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            raise _AuthFailed(generic, "the SCRAM message is not UTF-8") from None
        try:
            if self._round == 0:
                self._check_authzid(text)
                self._client_nonce = _attribute(text.split(",", 2)[-1], "r") or ""
                server.set_client_first(text)
                self._round = 1
                return str(server.get_server_first()).encode()
            if self._round == 1:
                self._accept_old_librdkafka_nonce(server, text)
                server.set_client_final(text)
                self._round = 2
                return str(server.get_server_final()).encode()
        except scramp.ScramException as e:
            raise _AuthFailed(generic, str(e)) from None
        raise _AuthFailed(generic, "a SCRAM message after the exchange ended")

    def _accept_old_librdkafka_nonce(self, server: ScramServer, client_final: str) -> None:
        # scramp compares the nonce with the one it sent; the proof it then checks covers the
        # message as received, so telling it to expect librdkafka's doubled form is all it takes.
        sent = server.nonce
        if not self._client_nonce or sent is None:
            return
        nonce = _attribute(client_final, "r")
        if nonce is not None and nonce == self._client_nonce + str(sent):
            server.nonce = Nonce(nonce)

    def _check_authzid(self, client_first: str) -> None:
        # Kafka refuses an authorization id other than the user with its own message; one equal to
        # the user is refused by scramp, which takes none at all, and no Kafka client sends one.
        parts = client_first.split(",", 3)
        if len(parts) < 3:
            return
        authzid, bare = parts[1], parts[2]
        if authzid.startswith("a=") and bare.startswith("n="):
            user = bare[2:].replace("=2C", ",").replace("=3D", "=")
            if authzid[2:].replace("=2C", ",").replace("=3D", "=") != user:
                raise _AuthFailed(
                    "Authentication failed: Client requested an authorization id that is different from username",
                    f"authorization id {authzid[2:]!r}, user {user!r}",
                )

    def _credential(self, username: str) -> tuple[bytes, bytes, bytes, int] | None:
        assert self.mechanism is not None and self._lookup is not None
        self.username = username
        try:
            found = self._lookup(self.mechanism, username)
        except Exception:
            log.exception("SCRAM credential lookup failed", mechanism=self.mechanism, user=username)
            raise
        if found is None:
            return None
        salt, stored_key, server_key, iterations = found
        return bytes(salt), bytes(stored_key), bytes(server_key), int(iterations)


def _attribute(message: str, name: str) -> str | None:
    """The value of attribute `name` in a SCRAM message's `k=v,k=v` list, None when absent."""
    for part in message.split(","):
        if part[:2] == f"{name}=":
            return part[2:]
    return None
