"""`kraftpy configs`: users' SCRAM credentials (kafka-configs.sh --entity-type users).

    kraftpy configs --bootstrap-server H:P --entity-type users --entity-name alice --alter \\
        --add-config 'SCRAM-SHA-512=[iterations=8192,password=alice-secret]'
    kraftpy configs --bootstrap-server H:P --entity-type users --entity-name alice --alter \\
        --delete-config SCRAM-SHA-512
    kraftpy configs --bootstrap-server H:P --entity-type users [--entity-name alice] --describe

`--user alice` is short for `--entity-type users --entity-name alice`. The password never leaves this
process: it is salted and hashed here (iterations 4096..16384, default 4096) and the controller
keeps the keys derived from that, as a UserScramCredentialRecord. Only SCRAM credentials are kept
for users; Kafka's client quotas are not.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from dataclasses import dataclass

from kraftpy.security.acl import ScramMechanism
from kraftpy.security.scram import DEFAULT_ITERATIONS, MAX_ITERATIONS, MIN_ITERATIONS, salted_password
from protocol.errors import Errors
from protocol.rpc.alter_user_scram_credentials import AlterUserScramCredentialsRequest
from tools.cli.errors import UserError
from tools.client.cli_support import add_bootstrap, run

A = AlterUserScramCredentialsRequest
SALT_BYTES = 32

# A comma separates configs except inside [...] (kafka-configs.sh's split).
_TOP_LEVEL_COMMA = re.compile(r",(?=[^\]]*(?:\[|$))")


@dataclass(frozen=True)
class ScramSetting:
    """One `SCRAM-SHA-512=[iterations=N,password=P]`; `__repr__` leaves the password out."""

    mechanism: ScramMechanism
    iterations: int
    password: str

    def __repr__(self) -> str:
        return f"ScramSetting({self.mechanism.mechanism_name}, iterations={self.iterations})"


@dataclass(frozen=True)
class Alteration:
    user: str
    add: tuple[ScramSetting, ...]
    delete: tuple[ScramMechanism, ...]


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "configs",
        help="users' SCRAM credentials (kafka-configs --entity-type users)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_bootstrap(p)
    p.add_argument("--entity-type", help="users (the only type kraftpy keeps configs for here)")
    p.add_argument("--entity-name", action="append", default=[], help="the user (repeatable for --describe)")
    p.add_argument(
        "--user", action="append", default=[], help="same as --entity-type users --entity-name USER"
    )
    p.add_argument("--alter", action="store_true", help="add or delete credentials")
    p.add_argument("--describe", action="store_true", help="each user's mechanisms and iterations")
    p.add_argument(
        "--add-config",
        metavar="MECHANISM=[iterations=N,password=P],...",
        help="SCRAM-SHA-256 and/or SCRAM-SHA-512 credentials to set",
    )
    p.add_argument("--delete-config", metavar="MECHANISM,...", help="SCRAM mechanisms to delete")
    p.set_defaults(func=lambda a: _run(a))


# ---- parsing ----------------------------------------------------------------------------------------


def users_of(args: argparse.Namespace) -> list[str]:
    if args.entity_type is not None and args.entity_type not in ("users", "user"):
        raise UserError(
            f"--entity-type {args.entity_type} is not kept by kraftpy configs; only users' SCRAM "
            "credentials are (topic configs: kraftpy topics create --config)"
        )
    if args.entity_name and args.entity_type is None:
        raise UserError("--entity-name needs --entity-type users")
    if args.entity_type is None and not args.user:
        raise UserError("name the users: --entity-type users [--entity-name NAME], or --user NAME")
    users = [*args.entity_name, *args.user]
    for u in users:
        if not u:
            raise UserError("a user name must not be empty")
    return list(dict.fromkeys(users))


def parse_mechanism(text: str, flag: str) -> ScramMechanism:
    name = text.strip()
    if name not in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        raise UserError(
            f"{flag}: '{name}' is not a SCRAM mechanism (SCRAM-SHA-256 or SCRAM-SHA-512); "
            "kraftpy keeps no other user configs"
        )
    return ScramMechanism.from_mechanism_name(name)


def parse_add_config(text: str) -> list[ScramSetting]:
    """`SCRAM-SHA-256=[iterations=8192,password=alice-secret],SCRAM-SHA-512=[password=other]`."""
    out: list[ScramSetting] = []
    for item in _TOP_LEVEL_COMMA.split(text):
        name, sep, value = item.partition("=")
        mechanism = parse_mechanism(name, "--add-config")
        value = value.strip()
        if not sep or not (value.startswith("[") and value.endswith("]")):
            raise UserError(
                f"--add-config {name.strip()} needs its settings in brackets: "
                f"{name.strip()}=[iterations=8192,password=SECRET]"
            )
        settings: dict[str, str] = {}
        for part in value[1:-1].split(","):
            key, eq, v = part.partition("=")
            key = key.strip()
            if not eq or key not in ("iterations", "password"):
                raise UserError(
                    f"--add-config {mechanism.mechanism_name}: '{part.strip()}' is not iterations=N or password=P"
                )
            if key in settings:
                raise UserError(f"--add-config {mechanism.mechanism_name}: {key} is given twice")
            settings[key] = v
        password = settings.get("password")
        if not password:
            raise UserError(f"--add-config {mechanism.mechanism_name} needs a non-empty password=")
        iterations = _iterations(settings.get("iterations"), mechanism)
        if any(s.mechanism is mechanism for s in out):
            raise UserError(f"--add-config names {mechanism.mechanism_name} twice")
        out.append(ScramSetting(mechanism, iterations, password))
    return out


def _iterations(text: str | None, mechanism: ScramMechanism) -> int:
    if text is None:
        return DEFAULT_ITERATIONS
    try:
        n = int(text.strip())
    except ValueError:
        raise UserError(
            f"--add-config {mechanism.mechanism_name}: iterations '{text}' is not a number"
        ) from None
    if not MIN_ITERATIONS <= n <= MAX_ITERATIONS:
        raise UserError(
            f"--add-config {mechanism.mechanism_name}: iterations must be between {MIN_ITERATIONS} "
            f"and {MAX_ITERATIONS}, got {n}"
        )
    return n


def parse_delete_config(text: str) -> list[ScramMechanism]:
    out = [parse_mechanism(name, "--delete-config") for name in text.split(",") if name.strip()]
    if not out:
        raise UserError("--delete-config names no mechanism")
    return list(dict.fromkeys(out))


def alteration(args: argparse.Namespace) -> Alteration:
    users = users_of(args)
    if len(users) != 1:
        raise UserError("--alter takes exactly one user (--entity-name or --user)")
    if not args.add_config and not args.delete_config:
        raise UserError("At least one of --add-config or --delete-config must be specified with --alter")
    add = parse_add_config(args.add_config) if args.add_config else []
    delete = parse_delete_config(args.delete_config) if args.delete_config else []
    both = {s.mechanism for s in add} & set(delete)
    if both:
        names = ", ".join(sorted(m.mechanism_name for m in both))
        raise UserError(
            f"{names} is both added and deleted; give it to one of --add-config / --delete-config"
        )
    return Alteration(users[0], tuple(add), tuple(delete))


def upsertion(user: str, s: ScramSetting, salt: bytes | None = None) -> A.ScramCredentialUpsertion:
    """What AlterUserScramCredentials carries: the salt and Hi(password, salt, iterations)."""
    salt = os.urandom(SALT_BYTES) if salt is None else salt
    return A.ScramCredentialUpsertion(
        Name=user,
        Mechanism=int(s.mechanism),
        Iterations=s.iterations,
        Salt=salt,
        SaltedPassword=salted_password(s.mechanism, s.password, salt, s.iterations),
    )


# ---- kafka-configs.sh's lines -----------------------------------------------------------------------


def exception_name(code: Errors) -> str:
    """Kafka's exception class for an error code, as kafka-configs.sh prints it."""
    return "".join(w.capitalize() for w in code.name.split("_")) + "Exception"


def format_description(user: str, error: Errors, message: str | None, infos: list[tuple[int, int]]) -> str:
    if error is not Errors.NONE:
        return (
            f"Error retrieving SCRAM credential configs for user-principal '{user}': "
            f"{exception_name(error)}: {message or error.name}"
        )
    text = ", ".join(f"{_mechanism_name(m)}=iterations={i}" for m, i in infos)
    return f"SCRAM credential configs for user-principal '{user}' are {text}"


def _mechanism_name(code: int) -> str:
    try:
        return ScramMechanism(code).mechanism_name
    except ValueError:
        return "UNKNOWN"


# ---- running it -------------------------------------------------------------------------------------


def _run(args: argparse.Namespace) -> int:
    if args.alter == args.describe:
        raise UserError("Command must include exactly one action: --describe, --alter")
    if args.describe:
        if args.add_config or args.delete_config:
            raise UserError("--add-config and --delete-config go with --alter, not --describe")
        users = users_of(args)
        return run("configs", lambda: _describe(args.bootstrap_server, users))
    alter = alteration(args)
    return run("configs", lambda: _alter(args.bootstrap_server, alter))


async def _describe(bootstrap: str, users: list[str]) -> int:
    from tools.client import Admin
    from tools.client.errors import as_error

    async with Admin(bootstrap) as admin:
        resp = await admin.describe_user_scram_credentials(users)
    for r in resp.Results:
        infos = [(c.Mechanism, c.Iterations) for c in r.CredentialInfos]
        print(format_description(r.User, as_error(r.ErrorCode), r.ErrorMessage, infos))
    return 0


async def _alter(bootstrap: str, alter: Alteration) -> int:
    from tools.client import Admin

    upsertions = [upsertion(alter.user, s) for s in alter.add]
    deletions = [A.ScramCredentialDeletion(Name=alter.user, Mechanism=int(m)) for m in alter.delete]
    async with Admin(bootstrap) as admin:
        results = await admin.alter_user_scram_credentials(upsertions, deletions)
    result = results[alter.user]
    if result.error is not Errors.NONE:
        print(
            f"Error while executing config command: {exception_name(result.error)}: "
            f"{result.message or result.error.name} ({result.error.name})",
            file=sys.stderr,
        )
        return 1
    print(f"Completed updating config for user {alter.user}.")
    return 0
