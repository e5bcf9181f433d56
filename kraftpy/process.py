"""What the two server processes share at their edge: arguments, overrides and the event loop.

`kraftpy-controller` and `kraftpy-broker` take the same `-c FILE`, `--override KEY=VALUE`,
`--log-level` and `--log-format`, and both run one asyncio loop (uvloop when it is installed).
"""

from __future__ import annotations

import argparse
import asyncio
import os
from collections.abc import Sequence


def server_arg_parser(prog: str, description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description=description)
    p.add_argument("-c", "--config", required=True, metavar="FILE", help="server .properties file")
    p.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="set a config property, overriding the file (repeatable)",
    )
    p.add_argument(
        "--log-level", default=os.environ.get("KRAFTPY_LOG_LEVEL", "INFO"), help="log level (INFO)"
    )
    p.add_argument(
        "--log-format",
        choices=("json", "text"),
        default=os.environ.get("KRAFTPY_LOG_FORMAT", "json"),
        help="json: one JSON object per line (default; for jq and log shippers); text: readable lines "
        "for a terminal",
    )
    return p


def parse_overrides(items: Sequence[str]) -> dict[str, str]:
    """`KEY=VALUE` items as a dict; ValueError naming the first item that is not of that form."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--override '{item}' is not of the form KEY=VALUE")
        out[key.strip()] = value.strip()
    return out


def event_loop_runner() -> asyncio.Runner:
    """The process's one event loop: uvloop's when it is installed."""
    try:
        import uvloop
    except ImportError:
        return asyncio.Runner()
    return asyncio.Runner(loop_factory=uvloop.new_event_loop)
