"""How kraftpy's own tools reach nodes whose HTTP RPC listeners are TLS: Kafka's `--command-config`.

A command config is the .properties file Kafka's tools take (`kafka-topics.sh --command-config`):

    security.protocol=SSL
    ssl.keystore.type=PEM
    ssl.keystore.location=/path/admin.keystore.pem     # key and certificate: the client certificate
    ssl.truststore.type=PEM
    ssl.truststore.location=/path/ca.pem

It is named by `kraftpy --command-config FILE` (or the option after the subcommand, as Kafka's tools
place it) or by $KRAFTPY_COMMAND_CONFIG, and read into one client `SSLContext` with
kraftpy.security.tls' builders. Every tool asks `client_context()` for it: the RPC clients dial
https with it, `http://` URLs of /healthz and /metrics become `https://`, and a bare `host:port` goes
to the HTTP RPC at once instead of being probed for Kafka's protocol. The tools do not speak SASL:
security.protocol is PLAINTEXT (no context) or SSL.

Which file applies is decided per call, not once per process: `command_config(path)` sets it for a
block of code (and the asyncio tasks it starts), else the environment variable applies. A
`LocalCluster` uses it to reach its own nodes with its own admin certificate whatever the caller set.
The context is cached on the files' identities, so it is read again when any of them changes.
"""

from __future__ import annotations

import contextlib
import os
import ssl
import urllib.request
from collections.abc import Iterator
from contextvars import ContextVar
from http.client import HTTPResponse
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from tools.cli.errors import UserError

COMMAND_CONFIG_ENV = "KRAFTPY_COMMAND_CONFIG"
"""A command config for every kraftpy tool started with this environment (empty: none)."""

CLIENT_KEYS = (
    "ssl.keystore.type",
    "ssl.keystore.location",
    "ssl.key.password",
    "ssl.truststore.type",
    "ssl.truststore.location",
    "ssl.endpoint.identification.algorithm",
    "ssl.enabled.protocols",
)
"""The keys of a command config that shape the client context; any other key is left to Kafka's
tools (client.id, request.timeout.ms, ...), as a shared file may hold them."""


class CommandConfigError(UserError):
    """A command config that cannot be used; the message names the file."""


# (path or None,) while a block overrides the environment; None while nothing does.
_override: ContextVar[tuple[str | None] | None] = ContextVar("kraftpy_command_config", default=None)
_contexts: dict[tuple[Any, ...], ssl.SSLContext | None] = {}


@contextlib.contextmanager
def command_config(path: str | os.PathLike[str] | None) -> Iterator[None]:
    """Use the command config at `path` (None: plain HTTP, whatever the environment says) inside
    the block, and in threads and subprocesses that take it from `child_env()`."""
    token = _override.set((os.path.abspath(path) if path else None,))
    try:
        yield
    finally:
        _override.reset(token)


def command_config_path() -> str | None:
    """The command config that applies here: the innermost `command_config` block's, else
    $KRAFTPY_COMMAND_CONFIG's (unset or empty: none)."""
    chosen = _override.get()
    if chosen is not None:
        return chosen[0]
    return os.environ.get(COMMAND_CONFIG_ENV) or None


def child_env() -> dict[str, str]:
    """Environment entries that hand the command config in use to a child process (a workload
    helper, a probe inside a namespace); merged over the parent's environment."""
    return {COMMAND_CONFIG_ENV: command_config_path() or ""}


def client_context() -> ssl.SSLContext | None:
    """The client context of the command config that applies, None for plain HTTP.
    CommandConfigError when the file or a file it names cannot be used."""
    path = command_config_path()
    return None if path is None else load_client_context(path)


def load_client_context(path: str | os.PathLike[str]) -> ssl.SSLContext | None:
    """The client context the command config at `path` describes (None for PLAINTEXT)."""
    from kraftpy.config import ConfigError, KafkaConfig
    from kraftpy.properties import PropertiesError, load_properties
    from kraftpy.security.tls import client_context as tls_client_context

    where = os.path.abspath(path)
    try:
        props = load_properties(where)
    except OSError as e:
        raise CommandConfigError(f"cannot read command config {where}: {e.strerror or e}") from None
    except PropertiesError as e:
        raise CommandConfigError(f"command config {where}: {e}") from None
    protocol = props.get("security.protocol", "PLAINTEXT").strip().upper()
    if protocol == "PLAINTEXT":
        return None
    if protocol != "SSL":
        raise CommandConfigError(
            f"command config {where}: security.protocol={props['security.protocol']} is not supported: "
            "kraftpy's tools reach nodes over their HTTP RPC listeners, PLAINTEXT or SSL with a client "
            "certificate (ssl.keystore.location), not SASL"
        )
    given = {k: v for k, v in props.items() if k in CLIENT_KEYS}
    key = (where, _identity(where), *(_identity(given.get(k)) for k in CLIENT_KEYS if k.endswith("location")))
    if key in _contexts:
        return _contexts[key]
    try:
        # model_validate, not from_properties: a client's file has no listeners or log dirs to check.
        cfg = KafkaConfig.model_validate(given)
        ctx = tls_client_context(cfg)
    except ValidationError as e:
        err = e.errors(include_url=False)[0]
        name = str(err["loc"][0]) if err["loc"] else "?"
        raise CommandConfigError(
            f"command config {where}: invalid value {given.get(name)!r} for {name}: {err['msg']}"
        ) from None
    except ConfigError as e:
        raise CommandConfigError(f"command config {where}: {e}") from None
    _contexts[key] = ctx
    return ctx


def _identity(path: str | None) -> tuple[int, int, int] | None:
    if not path:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns, st.st_size


def https(url: str, ctx: ssl.SSLContext | None) -> str:
    """`url` as it must be dialled with `ctx`: `http://` becomes `https://` when there is a context."""
    if ctx is not None and url.startswith("http://"):
        return "https://" + url[len("http://") :]
    return url


CURRENT: Any = object()
"""A default meaning "the context of the command config that applies", where None means plain."""


def urlopen(
    target: str | urllib.request.Request, timeout: float, ctx: ssl.SSLContext | None = CURRENT
) -> HTTPResponse:
    """urllib's urlopen over TLS when there is a client context (`ctx`, by default the command
    config's); a worker thread must be handed `ctx` (the block that set the config is not its)."""
    context = client_context() if ctx is CURRENT else ctx
    if isinstance(target, urllib.request.Request):
        target.full_url = https(target.full_url, context)
    else:
        target = https(target, context)
    response: HTTPResponse = urllib.request.urlopen(target, timeout=timeout, context=context)
    return response


def admin_properties(keystore: Path, truststore: Path) -> dict[str, str]:
    """A command config presenting the client certificate in `keystore` and trusting `truststore`."""
    return {
        "security.protocol": "SSL",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(keystore),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(truststore),
    }
