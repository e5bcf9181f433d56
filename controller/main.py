"""`kraftpy-controller -c FILE`: run the active controller of a single-voter KRaft quorum.

Startup problems a person can fix (a bad or unreadable config, unformatted storage, a metadata log
that cannot be read) print one line naming the problem and exit non-zero, without a traceback.
SIGTERM or SIGINT shut down in order: stop listening, drain the event queue, flush, close; exit 0.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from controller.errors import StartupError
from kraftpy.process import event_loop_runner, parse_overrides, server_arg_parser

if TYPE_CHECKING:
    from kraftpy.config import KafkaConfig

EXIT_USAGE = 2
EXIT_STARTUP = 1


def build_parser() -> argparse.ArgumentParser:
    return server_arg_parser(
        "kraftpy-controller",
        "Run a kraftpy KRaft controller (process.roles=controller) from a Kafka-style config.",
    )


def _overrides(items: Sequence[str]) -> dict[str, str]:
    try:
        return parse_overrides(items)
    except ValueError as e:
        raise StartupError(str(e)) from None


def load_controller_config(path: str, overrides: dict[str, str]) -> KafkaConfig:
    """Read the config and check what a controller needs; StartupError with one clear line otherwise."""
    from kraftpy.config import ConfigError, load_config

    try:
        cfg = load_config(path, overrides)
        cfg.require_kraft()
    except ConfigError as e:
        raise StartupError(str(e)) from None
    if not cfg.is_controller:
        raise StartupError(
            f"{path}: process.roles is {','.join(cfg.process_roles)}; kraftpy-controller needs the controller role"
        )
    if cfg.is_broker:
        raise StartupError(
            f"{path}: combined broker+controller mode is not supported; run kraftpy-broker separately"
        )
    if cfg.zookeeper_metadata_migration_enable and not cfg.zookeeper_connect:
        raise StartupError(
            f"{path}: If using `zookeeper.metadata.migration.enable` in KRaft mode, `zookeeper.connect` must also be set."
        )
    names = cfg.controller_listener_names or []
    try:
        cfg.listener(names[0])
    except ConfigError as e:
        raise StartupError(str(e)) from None
    return cfg


async def _serve(cfg: KafkaConfig) -> int:
    from controller.server import ControllerServer

    server = ControllerServer(cfg)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await server.start()
    except BaseException:
        await server.stop()
        raise
    try:
        await stop.wait()
    finally:
        await server.stop()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        cfg = load_controller_config(args.config, _overrides(args.override))
    except StartupError as e:
        print(f"kraftpy-controller: {e}", file=sys.stderr)
        return EXIT_USAGE

    from kraftpy.logging import configure_process_logging

    configure_process_logging(
        role="controller", node_id=cfg.node_id, level=args.log_level.upper(), log_format=args.log_format
    )
    try:
        with event_loop_runner() as runner:
            return runner.run(_serve(cfg))
    except StartupError as e:
        print(f"kraftpy-controller: {e}", file=sys.stderr)
        return EXIT_STARTUP
    except KeyboardInterrupt:
        return 130
    except Exception as e:
        # A bug, not a user error: the traceback goes to the log, the person gets one line.
        import structlog

        structlog.get_logger("controller.main").exception("controller failed")
        print(f"kraftpy-controller: failed: {type(e).__name__}: {e}", file=sys.stderr)
        return EXIT_STARTUP


if __name__ == "__main__":
    sys.exit(main())
