"""Entry point of the `kraftpy` command.

Every module in this package that defines `add_parser(subparsers)` contributes one subcommand;
the parser it adds sets `func`, called with the parsed args and returning the exit code.
"""

from __future__ import annotations

import argparse
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
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for info in sorted(pkgutil.iter_modules(cli_pkg.__path__), key=lambda m: m.name):
        if info.name.startswith("_") or info.name in ("main", "errors"):
            continue
        module = importlib.import_module(f"tools.cli.{info.name}")
        add = getattr(module, "add_parser", None)
        if add is not None:
            add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code = args.func(args)
    except UserError as e:
        print(f"kraftpy {args.command}: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return int(code or 0)


if __name__ == "__main__":
    sys.exit(main())
