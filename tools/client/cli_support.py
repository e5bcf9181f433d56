"""What the client subcommands (topics, log-dirs, produce, consume, perf) share: the bootstrap flag,
`key=value` properties, running a coroutine, and one-line errors for an unreachable cluster."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from tools.cli.errors import UserError


def add_bootstrap(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--bootstrap-server",
        metavar="HOST:PORT[,...]",
        help="a broker (or the controller) to connect to; default: the brokers of the `kraftpy cluster` "
        "in $KRAFTPY_WORK (else ./work/cluster)",
    )


def cluster_bootstrap() -> str:
    """The brokers of the local cluster in the default work dir, for commands given no
    --bootstrap-server; UserError saying what to do when there is none."""
    return cluster_client()[0]


def cluster_client() -> tuple[str, str | None]:
    """The brokers of the local cluster in the default work dir and the command config its nodes
    are reached with (its admin certificate when it is secure, else None)."""
    from tools.cluster.cluster import LocalCluster
    from tools.cluster.errors import ClusterError
    from tools.cluster.spec import default_work_dir

    cluster = LocalCluster(default_work_dir())
    if not cluster.exists():
        raise UserError(
            f"--bootstrap-server is needed: there is no cluster in {cluster.work_dir} "
            "(set $KRAFTPY_WORK to a `kraftpy cluster` work dir, or name a broker)"
        )
    try:
        config = cluster.command_config
        return cluster.bootstrap_servers(), None if config is None else str(config)
    except ClusterError as e:
        raise UserError(str(e)) from None


def properties(items: Sequence[str] | None, flag: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UserError(f"{flag} '{item}' is not of the form KEY=VALUE")
        out[key.strip()] = value.strip()
    return out


def int_list(text: str, flag: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise UserError(f"{flag} must be comma-separated integers, got '{text}'") from None


def run(command: str, make: Callable[[], Coroutine[Any, Any, int]]) -> int:
    """Run the command's coroutine; a KafkaError (cluster unreachable, refused) is one line, exit 1."""
    import asyncio

    from kraftpy.logging import configure_cli_logging
    from protocol.errors import KafkaError

    configure_cli_logging()
    try:
        return asyncio.run(make())
    except KafkaError as e:
        print(f"kraftpy {command}: {e.message or e.code.name} ({e.code.name})", file=sys.stderr)
        return 1
    except ValueError as e:
        raise UserError(str(e)) from None


# Kafka producer property -> ProducerConfig field.
_PRODUCER_PROPS = {
    "acks": "acks",
    "linger.ms": "linger_ms",
    "batch.size": "batch_size",
    "enable.idempotence": "enable_idempotence",
    "delivery.timeout.ms": "delivery_timeout_ms",
    "request.timeout.ms": "request_timeout_ms",
    "retry.backoff.ms": "retry_backoff_ms",
    "max.request.size": "max_request_size",
    "buffer.memory": "buffer_memory",
    "max.block.ms": "max_block_ms",
}


def parse_acks(value: str) -> int:
    v = value.strip().lower()
    if v in ("all", "-1"):
        return -1
    if v in ("0", "1"):
        return int(v)
    raise UserError(f"acks must be all, -1, 0 or 1, not '{value}'")


def producer_overrides(props: dict[str, str]) -> dict[str, int | bool]:
    """ProducerConfig keyword arguments from Kafka producer properties; unknown names are refused."""
    out: dict[str, int | bool] = {}
    for key, value in props.items():
        field = _PRODUCER_PROPS.get(key)
        if field is None:
            known = ", ".join(sorted(_PRODUCER_PROPS))
            raise UserError(f"unknown producer property '{key}' (known: {known})")
        if field == "acks":
            out[field] = parse_acks(value)
        elif field == "enable_idempotence":
            if value.lower() not in ("true", "false"):
                raise UserError(f"{key} must be true or false, not '{value}'")
            out[field] = value.lower() == "true"
        else:
            try:
                out[field] = int(value)
            except ValueError:
                raise UserError(f"{key} must be an integer, not '{value}'") from None
    if out.get("acks", -1) != -1 and "enable_idempotence" not in out:
        out["enable_idempotence"] = False  # Kafka turns idempotence off by itself for acks 0/1
    return out
