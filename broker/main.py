"""`kraftpy-broker -c FILE`: run a broker with one or more log dirs (JBOD): a KRaft broker (KIP-858)
when process.roles is set, a ZooKeeper-mode broker (KIP-112) when only zookeeper.connect is.

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
import functools
import os
import signal
import sys
import time
from collections.abc import Sequence

from kraftpy.process import event_loop_runner, parse_overrides, server_arg_parser

PROCESS_START = time.monotonic()
EXIT_USAGE = 2
EXIT_FAILURE = 1


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
        if cfg.is_zk_mode:
            cfg.require_zk()
            return cfg
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

    server = BrokerServer(cfg, dirs, dataplane=dataplane)
    server.started_at = PROCESS_START
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, server.request_shutdown)
    try:
        await server.start()
    except StartupError:
        await server._stop()
        raise
    return await server.run()


async def _serve_zk(cfg, *, dataplane: bool = True) -> int:  # type: ignore[no-untyped-def]
    """ZooKeeper mode: the cluster id comes from ZooKeeper, so the dirs are checked once connected."""
    from broker.startup import StartupError
    from broker.zk.migration import migration_config_problem, migration_configured
    from broker.zk.registration import get_or_create_cluster_id
    from broker.zk.server import ZkBrokerServer
    from broker.zk.storage import load_zk_broker_dirs
    from kraftpy.zookeeper import ZkClient, ZkError

    assert cfg.zookeeper_connect is not None
    zk = ZkClient(
        cfg.zookeeper_connect,
        session_timeout_ms=cfg.zookeeper_session_timeout_ms,
        connect_timeout_s=cfg.zk_connection_timeout_s,
    )
    try:
        await zk.start()
        cluster_id = await get_or_create_cluster_id(zk)
        problem = migration_config_problem(cfg)
        if problem is not None:
            raise StartupError(problem)
        dirs = await asyncio.to_thread(
            functools.partial(load_zk_broker_dirs, migrating=migration_configured(cfg)), cfg, cluster_id
        )
    except ZkError as e:
        await zk.close()
        raise StartupError(e.message) from None
    except BaseException:
        await zk.close()
        raise
    server = ZkBrokerServer(cfg, zk, dirs, dataplane=dataplane)
    server.started_at = PROCESS_START
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, server.request_shutdown)
    try:
        await server.start()
    except (StartupError, ZkError) as e:
        await server._stop()
        if isinstance(e, ZkError):
            raise StartupError(e.message) from None
        raise
    return await server.run()


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

    configure_process_logging(
        role="broker", node_id=cfg.node_id, level=args.log_level.upper(), log_format=args.log_format
    )
    _raise_open_file_limit()
    if cfg.is_zk_mode:
        try:
            with event_loop_runner() as runner:
                return runner.run(_serve_zk(cfg, dataplane=not args.control_plane_only))
        except StartupError as e:
            print(f"kraftpy-broker: {e}", file=sys.stderr)
            return EXIT_FAILURE
        except KeyboardInterrupt:
            return 130
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
