"""`kraftpy-broker -c FILE`: run a KRaft broker with one or more log dirs (JBOD, KIP-858).

Problems an operator can fix (a bad config, unformatted or unusable dirs, duplicate directory ids,
no usable log dir, an unusable metadata.log.dir) print one line naming the problem and exit
non-zero without a traceback. At run time SIGTERM or SIGINT runs a controlled shutdown (exit 0);
a fatal condition (the metadata dir or every log dir failed, registration impossible, a dir
failure the controller never acknowledged) logs one clear line and exits 1.

The process ends with os._exit after flushing its output: a thread stuck in a syscall on a dead
disk cannot be joined, and the interpreter would wait for it forever at a normal exit.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
import time
from collections.abc import Sequence

from kraftpy.process import event_loop_runner, parse_overrides, server_arg_parser

PROCESS_START = time.monotonic()
EXIT_USAGE = 2
EXIT_FAILURE = 1
DATAPLANE_STOP_TIMEOUT_S = 5.0


def build_parser() -> argparse.ArgumentParser:
    p = server_arg_parser(
        "kraftpy-broker", "Run a kraftpy KRaft broker (process.roles=broker) from a Kafka-style config."
    )
    p.add_argument(
        "--control-plane-only",
        action="store_true",
        help="do not start the data plane (Produce, Fetch, replication): registration, heartbeats, "
        "replica placement and dir failure handling only",
    )
    return p


def _overrides(items: Sequence[str]) -> dict[str, str]:
    from broker.startup import StartupError

    try:
        return parse_overrides(items)
    except ValueError as e:
        raise StartupError(str(e)) from None


def load_broker_config(path: str, overrides: dict[str, str]):  # -> KafkaConfig
    from broker.startup import StartupError
    from kraftpy.config import ConfigError, load_config

    try:
        cfg = load_config(path, overrides)
        cfg.require_kraft()
        if not cfg.is_broker:
            raise StartupError(
                f"{path}: process.roles is {','.join(cfg.process_roles)}; kraftpy-broker needs the broker role"
            )
        if cfg.is_controller:
            raise StartupError(
                f"{path}: combined broker+controller mode is not supported; run kraftpy-controller separately"
            )
        cfg.controller_endpoint()
    except ConfigError as e:
        raise StartupError(str(e)) from None
    return cfg


async def _serve(cfg, dirs, *, dataplane: bool = True) -> int:  # type: ignore[no-untyped-def]
    from broker.server import BrokerServer
    from broker.startup import StartupError

    server = BrokerServer(cfg, dirs)
    server.started_at = PROCESS_START
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, server.request_shutdown)
    try:
        await server.start()
    except StartupError:
        await server._stop()
        raise
    plane = await _attach_dataplane(server) if dataplane else None
    await server.stopped.wait()
    if plane is not None:
        try:  # before the server closes the logs
            await asyncio.wait_for(plane.stop(), DATAPLANE_STOP_TIMEOUT_S)
        except Exception as e:
            import structlog

            structlog.get_logger("broker.main").warning("data plane did not stop cleanly", error=repr(e))
    return await server.run()


async def _attach_dataplane(server):  # type: ignore[no-untyped-def]
    """Produce/Fetch/replication on the broker's app (broker.dataplane), when it can start.

    A data plane that fails to start is logged and left out: the control plane (registration,
    heartbeats, dir failures) must keep working whatever happens to the data path.
    """
    import structlog

    try:
        from broker.dataplane.broker_host import attach_dataplane

        return await attach_dataplane(server)
    except Exception:
        structlog.get_logger("broker.main").exception(
            "data plane failed to start; serving the control plane only"
        )
        return None


def _raise_open_file_limit() -> None:
    """Use the hard limit on open files: every segment of every open partition log holds one."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (ValueError, OSError):
            pass


def run(argv: Sequence[str] | None = None) -> int:
    from broker.startup import StartupError, load_broker_dirs

    args = build_parser().parse_args(argv)
    try:
        cfg = load_broker_config(args.config, _overrides(args.override))
    except StartupError as e:
        print(f"kraftpy-broker: {e}", file=sys.stderr)
        return EXIT_USAGE

    from kraftpy.logging import configure_process_logging

    configure_process_logging(role="broker", node_id=cfg.node_id, level=args.log_level.upper())
    _raise_open_file_limit()
    try:
        dirs = load_broker_dirs(cfg)
    except StartupError as e:
        print(f"kraftpy-broker: {e}", file=sys.stderr)
        return EXIT_FAILURE
    try:
        with event_loop_runner() as runner:
            return runner.run(_serve(cfg, dirs, dataplane=not args.control_plane_only))
    except StartupError as e:
        print(f"kraftpy-broker: {e}", file=sys.stderr)
        return EXIT_FAILURE
    except KeyboardInterrupt:
        return 130


def main(argv: Sequence[str] | None = None) -> int:
    code = run(argv)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
