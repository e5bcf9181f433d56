"""Entry point of the `kraftpy` command.

Every module in this package that defines `add_parser(subparsers)` contributes one subcommand;
the parser it adds sets `func`, called with the parsed args and returning the exit code.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import pkgutil
import sys
from collections.abc import Sequence

import tools.cli as cli_pkg
from tools.cli.errors import UserError

__all__ = ["UserError", "build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kraftpy",
        description="Admin tools for kraftpy, a KRaft controller and JBOD broker model.",
    )
    parser.add_argument(
        COMMAND_CONFIG_FLAG,
        metavar="FILE",
        help="client properties for reaching TLS nodes, as Kafka's tools take them (security.protocol=SSL, "
        "ssl.keystore.location, ssl.truststore.location, ...); also after the command, or "
        "$KRAFTPY_COMMAND_CONFIG",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for info in sorted(pkgutil.iter_modules(cli_pkg.__path__), key=lambda m: m.name):
        if info.name.startswith("_") or info.name in ("main", "errors"):
            continue
        module = importlib.import_module(f"tools.cli.{info.name}")
        add = getattr(module, "add_parser", None)
        if add is not None:
            add(sub)
    return parser


# Kafka's tools take their action as a flag (`kafka-topics.sh --describe ...`); ours as a word
# (`kraftpy topics describe ...`). Both are accepted.
KAFKA_ACTION_FLAGS: dict[str, dict[str, str]] = {
    "topics": {"--create": "create", "--list": "list", "--describe": "describe", "--delete": "delete"},
    "log-dirs": {"--describe": "describe"},
}


COMMAND_CONFIG_FLAG = "--command-config"


def split_command_config(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """(`--command-config FILE` wherever it was, the other words): Kafka's tools take it among their
    own flags (`kafka-topics.sh --command-config admin.properties --create ...`), ours before the
    command, so it is moved there."""
    rest: list[str] = []
    found: list[str] = []
    args = list(argv)
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            rest += args[i:]
            break
        if arg == COMMAND_CONFIG_FLAG and i + 1 < len(args):
            found = [arg, args[i + 1]]
            i += 2
            continue
        if arg.startswith(COMMAND_CONFIG_FLAG + "="):
            found = [arg]
        else:
            rest.append(arg)
        i += 1
    return found, rest


def kafka_style(argv: Sequence[str]) -> list[str]:
    """`COMMAND ... --ACTION ...` as `COMMAND ACTION ...` when COMMAND takes Kafka's action flags."""
    args = list(argv)
    flags = KAFKA_ACTION_FLAGS.get(args[0]) if args else None
    if not flags or (len(args) > 1 and args[1] in flags.values()):
        return args
    found = [a for a in args[1:] if a in flags]
    if len(found) > 1:
        raise ValueError(f"{args[0]}: give one of {', '.join(flags)}, not {' and '.join(found)}")
    if not found:
        return args
    rest = [a for a in args[1:] if a != found[0]]
    return [args[0], flags[found[0]], *rest]


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    config, words = split_command_config(sys.argv[1:] if argv is None else argv)
    try:
        words = kafka_style(words)
    except ValueError as e:
        parser.error(str(e))
    args = parser.parse_args(config + words)
    try:
        with contextlib.ExitStack() as scope:
            from tools.client.security import client_context, command_config, command_config_path

            if args.command_config is not None:
                scope.enter_context(command_config(args.command_config))
            # A bad file is reported once, before the command does anything.
            client_context()
            if hasattr(args, "bootstrap_server") and args.bootstrap_server is None:
                from tools.client.cli_support import cluster_client

                args.bootstrap_server, cluster_config = cluster_client()
                if command_config_path() is None and cluster_config is not None:
                    # a secure `kraftpy cluster`: reached with its own admin certificate
                    scope.enter_context(command_config(cluster_config))
            code = args.func(args)
    except UserError as e:
        print(f"kraftpy {args.command}: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return int(code or 0)


if __name__ == "__main__":
    sys.exit(main())
